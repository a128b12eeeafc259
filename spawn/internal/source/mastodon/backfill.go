package mastodon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
)

// Gaps. Mastodon's streaming API does not replay: a status posted while
// the connection is down (a reconnect, a crawler moved here from a spawn
// that stopped) is never streamed. Each such gap is filled from the REST
// timelines the subscriptions stand for — /api/v1/timelines/public for
// the public stream, /api/v1/timelines/tag/:hashtag for a hashtag's, and
// the home timeline where the instance's feeds are closed and the source
// reads the tags its account follows — once the connection is back and
// subscribed, so the timelines cover up to a moment the stream already
// covers:
//
//   - After a reconnect, from the newest status the instance streamed
//     here (min_id, then the Link header's rel="prev" pages, each the
//     statuses right after the last); when it streamed none, the
//     timelines are read newest first (rel="next") back to shortly before
//     the connection was last alive.
//   - For a subscriber that arrives with a cursor (it ran on another
//     spawn), from the status id its crawler last stored from this
//     instance (api.Cursor.Sources), else back to its newest comment's
//     published time.
//
// Statuses are handed over oldest first through the same path as
// streamed ones, which drops a status already handed over (by its local
// id) and, on the home timeline, what the hashtag streams would not have
// carried; the spawn drops what a crawler already stored (by status URI,
// the same on every instance). Link headers are followed only on the
// instance's own host, so the token never travels elsewhere.

// Defaults of the gap filling.
const (
	// DefaultMaxBackfillPages bounds the pages of one timeline one gap
	// reads (40 statuses a page, Mastodon's most).
	DefaultMaxBackfillPages = 25
	// timelinePageSize is limit (Mastodon's most).
	timelinePageSize = 40
	// maxTimelineBytes caps one timeline page.
	maxTimelineBytes = 16 << 20
	// gapLatency is how much earlier than the last moment the connection
	// was known alive a gap without a status id starts.
	gapLatency = 5 * time.Second
	// cursorMargin is how much earlier than a cursor's published time a
	// gap opened from it starts.
	cursorMargin = time.Second
	// backfillPart names gap filling errors in Err.
	backfillPart = "backfill"
)

// gap is where a gap starts: after a status id (min_id), or at a time
// (read back to it); both when gaps of both kinds were merged. at is when
// it opened, for its length.
type gap struct {
	after string
	since time.Time
	at    time.Time
}

func (g gap) empty() bool { return g.after == "" && g.since.IsZero() }

// merge is the gap covering both g and o.
func (g gap) merge(o gap) gap {
	if o.after != "" && (g.after == "" || api.LaterSourceID(g.after, o.after) == g.after) {
		g.after = o.after
	}
	if !o.since.IsZero() && (g.since.IsZero() || o.since.Before(g.since)) {
		g.since = o.since
	}
	if g.at.IsZero() || (!o.at.IsZero() && o.at.Before(g.at)) {
		g.at = o.at
	}
	return g
}

// openGapLocked records a gap to fill.
func (i *instance) openGapLocked(g gap) {
	if g.empty() {
		return
	}
	i.pending = i.pending.merge(g)
	source.Signal(i.changed)
}

// key is the instance's data source key.
func (i *instance) key() string { return keyPrefix + i.base.String() }

// cursorGapsLocked opens a gap for each subscriber that arrives with a
// cursor, once per crawler, and forgets the crawlers gone.
func (i *instance) cursorGapsLocked(specs []api.SubscriberSpec) {
	here := make(map[int64]bool, len(specs))
	for _, s := range specs {
		here[s.CrawlerID] = true
		if s.Cursor == nil || i.cursors[s.CrawlerID] {
			continue
		}
		i.cursors[s.CrawlerID] = true
		g := gap{after: s.Cursor.Sources[i.key()], at: s.Cursor.PublishedAt}
		if g.after == "" && !s.Cursor.PublishedAt.IsZero() {
			g.since = s.Cursor.PublishedAt.Add(-cursorMargin)
		}
		if g.at.IsZero() {
			g.at = time.Now()
		}
		i.openGapLocked(g)
	}
	for id := range i.cursors {
		if !here[id] {
			delete(i.cursors, id)
		}
	}
}

// noteStatus records the local id of a status handed over.
func (i *instance) noteStatus(id string) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.lastID = api.LaterSourceID(i.lastID, id)
}

// connectionLost opens the gap a lost connection leaves: after the newest
// status handed over, else back to shortly before it was last alive.
func (i *instance) connectionLost(aliveAt time.Time) {
	i.mu.Lock()
	defer i.mu.Unlock()
	g := gap{after: i.lastID, at: aliveAt}
	if g.after == "" {
		g.since = aliveAt.Add(-gapLatency)
	}
	i.openGapLocked(g)
}

// takeGap returns the gap to fill, if any, and clears it.
func (i *instance) takeGap() (gap, bool) {
	i.mu.Lock()
	defer i.mu.Unlock()
	g := i.pending
	i.pending = gap{}
	return g, !g.empty()
}

// reopenGap puts back a gap whose filling did not complete.
func (i *instance) reopenGap(g gap) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.pending = i.pending.merge(g)
}

// timelinePath is the REST timeline a subscription stands for.
func timelinePath(w sub) string {
	switch w.stream {
	case streamHashtag:
		return "/api/v1/timelines/tag/" + url.PathEscape(w.tag)
	case streamUser:
		return "/api/v1/timelines/home"
	}
	return "/api/v1/timelines/public"
}

// fill reads what the subscribed timelines hold of g and hands over what
// the stream has not.
func (s *session) fill(ctx context.Context, g gap, subs []sub, emit source.Emit) error {
	started := time.Now()
	var found []frame
	for _, w := range subs {
		path := timelinePath(w)
		if g.after != "" {
			fs, err := s.timeline(ctx, w, fmt.Sprintf("%s?limit=%d&min_id=%s", path, timelinePageSize, url.QueryEscape(g.after)), "prev", time.Time{})
			if err != nil {
				return err
			}
			found = append(found, fs...)
		}
		if !g.since.IsZero() {
			fs, err := s.timeline(ctx, w, fmt.Sprintf("%s?limit=%d", path, timelinePageSize), "next", g.since)
			if err != nil {
				return err
			}
			found = append(found, fs...)
		}
	}
	slices.SortStableFunc(found, func(a, b frame) int { return cmpLocalID(a.status.ID, b.status.ID) })
	handed := 0
	for _, f := range found {
		if f.stream == streamUser && !s.fromFollowedTag(f) {
			continue
		}
		ok, err := s.handle(ctx, f, emit)
		if err != nil {
			return err
		}
		if ok {
			handed++
		}
	}
	s.stats.gapsFilled.Add(1)
	s.stats.gapItems.Add(int64(handed))
	if !g.at.IsZero() {
		s.stats.gapMillis.Add(time.Since(g.at).Milliseconds())
	}
	s.setErr(backfillPart, nil)
	s.logger.Info("mastodon gap filled", "after_id", g.after, "since", g.since, "timelines", len(subs), "found", len(found), "new", handed,
		"took", time.Since(started).Round(time.Millisecond))
	return nil
}

// timeline reads a timeline from path, following the Link header's rel
// pages on the instance's own host, up to MaxBackfillPages: forward
// ("prev") to its end, or back ("next") until a status older than since.
func (s *session) timeline(ctx context.Context, w sub, path, rel string, since time.Time) ([]frame, error) {
	var out []frame
	for range s.opts.MaxBackfillPages {
		var page []json.RawMessage
		h, err := s.api(ctx, http.MethodGet, path, maxTimelineBytes, &page)
		if err != nil {
			return nil, fmt.Errorf("mastodon: unable to read %s of %s: %w", clip(path), s.base.Host, err)
		}
		older := false
		for _, raw := range page {
			var st status
			if err := decodeOne(raw, &st); err != nil {
				s.skip(err, len(raw))
				continue
			}
			f := frame{kind: frameStatus, event: eventUpdate, stream: w.stream, status: &st}
			if st.Reblog != nil {
				f.status, f.reblog = st.Reblog, true
			}
			if !since.IsZero() {
				if at, err := time.Parse(time.RFC3339Nano, st.CreatedAt); err == nil && at.Before(since) {
					older = true
					continue
				}
			}
			out = append(out, f)
		}
		if len(page) == 0 || older {
			return out, nil
		}
		next := relLink(h, rel)
		if next == "" {
			return out, nil
		}
		u, err := url.Parse(next)
		if err != nil || !strings.EqualFold(u.Host, s.base.Host) {
			return out, nil // never send the token elsewhere
		}
		path = strings.TrimPrefix(u.RequestURI(), s.base.Path)
	}
	s.logger.Warn("mastodon gap larger than the pages read: the rest is not filled", "timeline", w.String(), "pages", s.opts.MaxBackfillPages)
	return out, nil
}

// cmpLocalID orders instance-local status ids as numbers.
func cmpLocalID(a, b string) int {
	switch {
	case a == b:
		return 0
	case api.LaterSourceID(a, b) == b:
		return -1
	}
	return 1
}

// runFill fills the pending gap, if any, on the open connection; a fill
// cut short is put back to be filled again.
func (s *session) runFill(ctx context.Context, emit source.Emit) {
	g, ok := s.takeGap()
	if !ok {
		return
	}
	subs := s.wanted()
	if err := s.fill(ctx, g, subs, emit); err != nil {
		s.reopenGap(g)
		if ctx.Err() != nil || errors.Is(err, context.Canceled) {
			return
		}
		s.setErr(backfillPart, err)
		s.logger.Warn("mastodon gap not filled yet", "err", err)
	}
}
