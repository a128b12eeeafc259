package mastodon

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/blackwidow-crawl/blackwidow/pkg/backoff"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
)

// Limits of the followed tags look-up.
const (
	// followedTagsPageSize is the page size asked of
	// GET /api/v1/followed_tags (Mastodon's largest).
	followedTagsPageSize = 200
	// maxFollowedTagPages bounds the pages read in one look-up.
	maxFollowedTagPages = 20
	// maxTagDocBytes caps one answer of the tag endpoints.
	maxTagDocBytes = 1 << 20
	// partFollows is the part of a data source's errors that its tag
	// follows set.
	partFollows = "follows"
)

// tagFollows is what a spawn knows of the tags the token's account follows
// on one instance. The data sources an instance's key gets over time share
// it, so one stopping and the next starting do not undo each other's
// follows: a tag is followed when the first of them needs it, unfollowed
// when the last lets it go — and only when the spawn followed it itself,
// that is when the account did not follow it already. A tag the account's
// owner (or another spawn) followed first is never unfollowed by this one.
type tagFollows struct {
	mu    sync.Mutex
	users map[string]int  // tag → data sources holding it
	ours  map[string]bool // tags this spawn followed itself
}

func newTagFollows() *tagFollows {
	return &tagFollows{users: map[string]int{}, ours: map[string]bool{}}
}

// acquire holds tags for a data source, following those the account does
// not follow yet. It returns the tags it holds now, with the first error.
func (f *tagFollows) acquire(ctx context.Context, i *instance, tags []string) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var followed map[string]bool
	var got []string
	for _, t := range tags {
		if f.users[t] == 0 {
			if followed == nil {
				var err error
				if followed, err = i.followedTags(ctx); err != nil {
					return got, err
				}
			}
			if !followed[t] {
				if err := i.followTag(ctx, t, true); err != nil {
					return got, err
				}
				f.ours[t] = true
			}
		}
		f.users[t]++
		got = append(got, t)
	}
	return got, nil
}

// release lets a data source's tags go, unfollowing those no data source
// holds any more that the spawn followed itself. A failed unfollow is
// logged and not retried: the tag stays followed.
func (f *tagFollows) release(ctx context.Context, i *instance, tags []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, t := range tags {
		if f.users[t]--; f.users[t] > 0 {
			continue
		}
		delete(f.users, t)
		if !f.ours[t] {
			continue
		}
		delete(f.ours, t)
		if err := i.followTag(ctx, t, false); err != nil {
			i.logger.Warn("mastodon tag unfollow failed; the tag stays followed", "tag", t, "err", err)
		}
	}
}

// verify follows again the held tags the account no longer follows
// (another spawn sharing the account let them go, or its owner did): they
// are the spawn's own from then on. It returns how many it followed again.
func (f *tagFollows) verify(ctx context.Context, i *instance, held []string) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	followed, err := i.followedTags(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, t := range held {
		if followed[t] {
			continue
		}
		if err := i.followTag(ctx, t, true); err != nil {
			return n, err
		}
		f.ours[t] = true
		n++
	}
	return n, nil
}

// followedTags lists the tags the token's account follows, lowercased,
// following the Link header's pages on the instance's own host.
func (i *instance) followedTags(ctx context.Context) (map[string]bool, error) {
	out := map[string]bool{}
	path := fmt.Sprintf("/api/v1/followed_tags?limit=%d", followedTagsPageSize)
	for range maxFollowedTagPages {
		var page []struct {
			Name string `json:"name"`
		}
		h, err := i.api(ctx, http.MethodGet, path, maxTagDocBytes, &page)
		if err != nil {
			return nil, i.followError("list the followed tags", err)
		}
		for _, t := range page {
			out[strings.ToLower(t.Name)] = true
		}
		next := nextLink(h)
		if next == "" || len(page) == 0 {
			return out, nil
		}
		u, err := url.Parse(next)
		if err != nil || !strings.EqualFold(u.Host, i.base.Host) {
			return out, nil // never send the token elsewhere
		}
		path = strings.TrimPrefix(u.RequestURI(), i.base.Path)
	}
	return out, nil
}

// followTag follows (or unfollows) one tag.
func (i *instance) followTag(ctx context.Context, tag string, follow bool) error {
	action := "unfollow"
	if follow {
		action = "follow"
	}
	_, err := i.api(ctx, http.MethodPost, "/api/v1/tags/"+url.PathEscape(tag)+"/"+action, maxTagDocBytes, nil)
	if err != nil {
		return i.followError(action+" #"+tag, err)
	}
	i.logger.Info("mastodon tag "+action+"ed", "tag", tag)
	if follow {
		i.stats.follows.Add(1)
	} else {
		i.stats.unfollows.Add(1)
	}
	return nil
}

// followError says which follow call failed: a refusal (401, 403) is
// ErrFollowRefused, which fails the subscribers until an operator gives
// the token the scopes it needs.
func (i *instance) followError(what string, err error) error {
	if refused(err) {
		return fmt.Errorf("%w: %s refused to %s (%v); hashtag crawlers on an instance whose live feeds are closed need a token with read:follows and write:follows",
			ErrFollowRefused, i.base.Host, what, err)
	}
	return fmt.Errorf("mastodon: %s: unable to %s: %w", i.base.Host, what, err)
}

// runFollows keeps the account following the tags the subscribers need
// while the instance's feeds are closed, until ctx ends: it follows and
// lets go as they change, checks every FollowCheckInterval that the
// account still follows what it holds (a REST call that also keeps the
// account active, and Mastodon fills the home timelines of active
// accounts only), and retries a failure with back-off. When ctx ends it
// lets every tag go, within UnfollowTimeout.
func (i *instance) runFollows(ctx context.Context) {
	held := map[string]bool{}
	defer func() {
		if len(held) == 0 {
			return
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), i.opts.UnfollowTimeout)
		defer cancel()
		i.follows.release(rctx, i, slices.Sorted(maps.Keys(held)))
	}()
	check := time.NewTicker(i.opts.FollowCheckInterval)
	defer check.Stop()
	retry := backoff.Policy{Min: i.opts.BackoffMin, Max: i.opts.BackoffMax}
	var again <-chan time.Time
	for {
		err := i.reconcileFollows(ctx, held)
		if ctx.Err() != nil {
			return
		}
		i.setFollowErr(err)
		again = nil
		if err != nil {
			again = time.After(retry.Next())
		} else {
			retry.Reset()
		}
		select {
		case <-ctx.Done():
			return
		case <-i.followChanged:
		case <-again:
		case <-check.C:
			if len(held) == 0 {
				continue
			}
			n, err := i.follows.verify(ctx, i, slices.Sorted(maps.Keys(held)))
			if n > 0 {
				i.logger.Warn("mastodon tags followed again: the account had stopped following them", "tags", n)
				i.stats.refollows.Add(int64(n))
			}
			if ctx.Err() == nil {
				i.setFollowErr(err)
			}
		}
	}
}

// reconcileFollows holds the tags the subscribers need and lets go of the
// others.
func (i *instance) reconcileFollows(ctx context.Context, held map[string]bool) error {
	want := i.followWanted()
	var add, drop []string
	for t := range want {
		if !held[t] {
			add = append(add, t)
		}
	}
	for t := range held {
		if !want[t] {
			drop = append(drop, t)
		}
	}
	slices.Sort(add)
	slices.Sort(drop)
	if len(drop) > 0 {
		i.follows.release(ctx, i, drop)
		for _, t := range drop {
			delete(held, t)
		}
	}
	got, err := i.follows.acquire(ctx, i, add)
	for _, t := range got {
		held[t] = true
	}
	return err
}

// setFollowErr records the follows' error: a refusal fails the
// subscribers, anything else passes.
func (i *instance) setFollowErr(err error) {
	i.errs.Set(partFollows, source.DegradedUnless(err, ErrFollowRefused))
	if err != nil && !errors.Is(err, context.Canceled) {
		i.logger.Warn("mastodon tag follows failed", "err", err)
	}
}
