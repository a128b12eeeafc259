package cluster

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/hub/internal/sqlstore"
)

// fullReadEvery is how often a reload reads every crawler and user from
// SQL instead of only what changed since the last read: a consistency
// check that repairs whatever an incremental read could have missed (a row
// edited by hand without a change number, say). The first reload of a hub
// always reads everything. Between full reads a reload costs what changed,
// not what exists.
const fullReadEvery = 5 * time.Minute

// sqlView is how far the hub has read SQL. It is guarded by reloadMu.
type sqlView struct {
	seq    int64     // change number read up to (sqlstore.Changes.Seq)
	fullAt time.Time // when the last full read was taken in; zero: never
}

// sqlRead is one read of crawlers and users: all of them, or those changed
// since the previous read.
type sqlRead struct {
	full     bool
	seq      int64
	crawlers []sqlstore.Crawler
	users    []sqlstore.User
	deleted  []sqlstore.Deletion
}

func (r sqlRead) kind() string {
	if r.full {
		return "full"
	}
	return "changes"
}

// fullReadDue says whether the next reload reads everything.
func (v *sqlView) fullReadDue(now time.Time) bool {
	return v.fullAt.IsZero() || now.Sub(v.fullAt) >= fullReadEvery
}

// fullReadDue says whether the periodic full read of SQL is due, so the
// reload loop runs a reload even when nothing asked for one.
func (h *Hub) fullReadDue() bool {
	h.reload.mu.Lock()
	defer h.reload.mu.Unlock()
	return h.reload.view.fullReadDue(time.Now())
}

// readSQL reads what the next reload needs: everything when a full read is
// due or the changes since the last read are no longer known, otherwise
// only the changes. The caller holds reloadMu; the hub lock is not held,
// so polls and operators are not held up by SQL.
func (h *Hub) readSQL(ctx context.Context, now time.Time) (sqlRead, error) {
	if !h.reload.view.fullReadDue(now) {
		ch, err := h.cfg.Store.ChangesSince(ctx, h.reload.view.seq)
		switch {
		case err == nil:
			return sqlRead{seq: ch.Seq, crawlers: ch.Crawlers, users: ch.Users, deleted: ch.Deleted}, nil
		case errors.Is(err, sqlstore.ErrChangesPruned):
			h.logger.Info("changes since the last read are no longer kept: reading everything", "since", h.reload.view.seq)
		default:
			return sqlRead{}, err
		}
	}
	// The change number first: every change up to it is in what follows.
	seq, err := h.cfg.Store.LastChange(ctx)
	if err != nil {
		return sqlRead{}, err
	}
	rows, err := h.cfg.Store.ListCrawlers(ctx)
	if err != nil {
		return sqlRead{}, err
	}
	users, err := h.cfg.Store.ListUsers(ctx)
	if err != nil {
		return sqlRead{}, err
	}
	return sqlRead{full: true, seq: seq, crawlers: rows, users: users}, nil
}

// takeInLocked applies a read to the hub's crawlers and users and records
// how far SQL has been read. The caller holds reloadMu and h.mu.
func (h *Hub) takeInLocked(r sqlRead, now time.Time) {
	if r.full {
		h.syncLocked(r.crawlers, r.users)
		h.reload.view.fullAt = now
	} else {
		h.applyChangesLocked(r)
	}
	h.reload.view.seq = r.seq
}

// upsertCrawlerLocked takes in a crawler's row from SQL and reports whether
// the crawler is new to the hub. Usage and cursors in memory run ahead of a
// row read before the latest increments were applied: they never move
// backwards.
func (h *Hub) upsertCrawlerLocked(r sqlstore.Crawler) (*crawler, bool) {
	c, ok := h.crawlers[r.ID]
	if !ok {
		c = &crawler{state: api.StatePending}
		h.crawlers[r.ID] = c
	}
	usage := max(c.row.Usage, r.Usage)
	ids := c.row.CursorIDs
	if !ok || c.row.Version != r.Version || c.row.CommentLimit != r.CommentLimit || c.row.LimitReached != r.LimitReached || c.row.Enabled != r.Enabled {
		r.Source = h.internSource(r.Source)
		if r.QueryUUID != c.row.QueryUUID {
			c.quuidState = quuidUnknown
		}
		c.row = r
	}
	c.row.Usage = usage
	c.row.CursorAt = laterCursor(c.row.CursorAt, r.CursorAt)
	c.row.CursorPos = sqlstore.NextCursorPos(c.row.CursorPos, r.CursorPos, time.Now())
	c.row.CursorIDs = ids.Merge(r.CursorIDs)
	c.row.ChangeSeq = max(c.row.ChangeSeq, r.ChangeSeq)
	return c, !ok
}

// upsertUserLocked takes in a user's row from SQL, keeping the larger
// usage, and reports whether its limit is new or changed (its crawlers'
// specs then change).
func (h *Hub) upsertUserLocked(r sqlstore.User) bool {
	u, ok := h.users[r.ID]
	if !ok {
		h.users[r.ID] = &user{row: r}
		return true
	}
	r.Usage = max(r.Usage, u.row.Usage)
	changed := u.row.CommentLimit != r.CommentLimit
	u.row = r
	return changed
}

// applyChangesLocked takes in the rows changed since the previous read.
// A deletion and a row of the same id (SQLite may reuse the id of a deleted
// row) are ordered by their change numbers.
func (h *Hub) applyChangesLocked(r sqlRead) {
	respec := map[int64]bool{} // users whose crawlers' specs change
	for _, u := range r.users {
		if h.upsertUserLocked(u) {
			respec[u.ID] = true
		}
	}
	deletedBy := make(map[int64]int64, len(r.deleted))
	for _, d := range r.deleted {
		deletedBy[d.CrawlerID] = max(deletedBy[d.CrawlerID], d.ChangeSeq)
		if c, ok := h.crawlers[d.CrawlerID]; ok && c.row.ChangeSeq < d.ChangeSeq {
			h.forgetCrawlerLocked(c)
		}
	}
	for _, row := range r.crawlers {
		if row.ChangeSeq < deletedBy[row.ID] {
			continue // read before its deletion
		}
		c, created := h.upsertCrawlerLocked(row)
		if created {
			h.byUser[row.UserID] = append(h.byUser[row.UserID], c)
		}
		if !respec[row.UserID] {
			h.respecLocked(c)
		}
	}
	for id := range respec {
		for _, c := range h.byUser[id] {
			h.respecLocked(c)
		}
	}
}

// forgetCrawlerLocked drops a deleted crawler. The node running it drops
// it with the exact set its next poll carries.
func (h *Hub) forgetCrawlerLocked(c *crawler) {
	h.wantLocked(c, nil)
	delete(h.crawlers, c.row.ID)
	list := slices.DeleteFunc(h.byUser[c.row.UserID], func(o *crawler) bool { return o == c })
	if len(list) == 0 {
		delete(h.byUser, c.row.UserID)
	} else {
		h.byUser[c.row.UserID] = list
	}
}

// internSource returns the declaration's name equal to a source kind read
// from SQL, so a million rows share a handful of strings.
func (h *Hub) internSource(s string) string {
	if info, ok := h.Sources().Lookup(s); ok {
		return info.Name
	}
	return s
}
