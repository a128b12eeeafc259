package mastodon

import (
	"context"
	"fmt"
	"math/big"
	"net/http"
	"strings"
)

// Feed access values of configuration.timelines_access (Mastodon 4.5).
const (
	accessAuthenticated = "authenticated"
	accessDisabled      = "disabled"
)

// permissionViewFeeds is the role permission that reads disabled feeds
// ("View live and topic feeds"); the streaming server lets a token whose
// role has this bit read them.
const permissionViewFeeds = 0x100000

// maxCredentialsBytes caps the verify_credentials answer.
const maxCredentialsBytes = 256 << 10

// feedAccess is who may read a feed's local and remote statuses.
type feedAccess struct {
	Local  string `json:"local"`
	Remote string `json:"remote"`
}

// timelinesAccess is configuration.timelines_access of /api/v2/instance.
type timelinesAccess struct {
	LiveFeeds    feedAccess `json:"live_feeds"`
	HashtagFeeds feedAccess `json:"hashtag_feeds"`
}

// access is whether the instance's feeds are closed to the token, and
// why.
type access struct {
	// liveClosed: the public stream does not carry (all) statuses.
	liveClosed bool
	// tagsClosed: the hashtag streams do not carry (all) statuses.
	tagsClosed bool
	why        string
}

// follow reports whether hashtag queries go through followed tags.
func (a access) follow() bool { return a.liveClosed || a.tagsClosed }

// accessOf reads the feeds' access settings: a feed half (local or remote
// statuses) is closed to the token when it is disabled, unless the
// token's role may view feeds, or when it needs authentication and the
// spawn has no token. Only a disabled half costs a look-up of the token's
// role.
func (i *instance) accessOf(ctx context.Context, ta *timelinesAccess) access {
	if ta == nil {
		return access{}
	}
	closed := func(v string) bool {
		v = strings.ToLower(strings.TrimSpace(v))
		return v == accessDisabled || (v == accessAuthenticated && i.opts.Token == "")
	}
	var a access
	var why []string
	for _, f := range []struct {
		name string
		fa   feedAccess
		set  *bool
	}{{"live_feeds", ta.LiveFeeds, &a.liveClosed}, {"hashtag_feeds", ta.HashtagFeeds, &a.tagsClosed}} {
		if closed(f.fa.Local) || closed(f.fa.Remote) {
			*f.set = true
			why = append(why, fmt.Sprintf("%s local %s, remote %s", f.name, clip(f.fa.Local), clip(f.fa.Remote)))
		}
	}
	if !a.follow() {
		return a
	}
	if i.viewsFeeds(ctx) {
		i.logger.Info("mastodon feeds are disabled, but the token's role may view them")
		return access{}
	}
	a.why = "its configuration.timelines_access has " + strings.Join(why, "; ")
	return a
}

// viewsFeeds reports whether the token's role has the permission to view
// disabled feeds; false when the instance does not tell.
func (i *instance) viewsFeeds(ctx context.Context) bool {
	var cred struct {
		Role *struct {
			Permissions string `json:"permissions"`
		} `json:"role"`
	}
	if _, err := i.api(ctx, http.MethodGet, "/api/v1/accounts/verify_credentials", maxCredentialsBytes, &cred); err != nil {
		i.logger.Debug("mastodon token's role unknown", "err", err)
		return false
	}
	if cred.Role == nil {
		return false
	}
	perms, ok := new(big.Int).SetString(strings.TrimSpace(cred.Role.Permissions), 10)
	return ok && new(big.Int).And(perms, big.NewInt(permissionViewFeeds)).Sign() != 0
}

// setConfigAccess records what the instance document says of its feeds;
// a public stream seen to carry only deletes keeps the live feeds closed
// whatever it says.
func (i *instance) setConfigAccess(a access) {
	i.mu.Lock()
	i.config = a
	changed := i.recomputeLocked()
	i.mu.Unlock()
	if changed {
		i.logger.Warn("mastodon feed access changed", "live_closed", a.liveClosed, "hashtags_closed", a.tagsClosed, "why", a.why)
	}
}

// markDeleteOnly records that the public stream carried n delete events
// and no status: its live feeds are closed to the token whatever its
// configuration says (mastodon/mastodon#37883), for the rest of the data
// source's life.
func (i *instance) markDeleteOnly(n int) {
	i.mu.Lock()
	if i.deleteOnly != "" {
		i.mu.Unlock()
		return
	}
	i.deleteOnly = fmt.Sprintf("its public stream carried only delete events (%d in a row)", n)
	i.recomputeLocked()
	i.mu.Unlock()
	i.logger.Warn("mastodon public stream carries only deletes: reading hashtags through followed tags", "deletes", n)
}

// accessLocked is the current access: the configuration's, with the live
// feeds closed when the public stream carried only deletes.
func (i *instance) accessLocked() access {
	a := i.config
	if i.deleteOnly != "" {
		a.liveClosed = true
		if a.why != "" {
			a.why += "; "
		}
		a.why += i.deleteOnly
	}
	return a
}
