package node

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/pkg/query"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/match"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
)

// matchersLocked returns the query index and the subscribers without a
// filter, rebuilding them if the subscribers changed since the last call.
// The rebuild reuses the previous automaton when no new text atom
// appeared, so subscribers coming and going over a stable vocabulary only
// recompile their queries.
func (d *dataSource) matchersLocked() (*match.QueryIndex, []*subscriber) {
	if d.index != nil && !d.stale {
		return d.index, d.open
	}
	d.index = buildIndex(d.index, d.filtersLocked())
	d.stale = false
	return d.index, d.open
}

// filtersLocked lists the queries of the subscribers that filter, for an
// index build, and refreshes the list of those that do not.
func (d *dataSource) filtersLocked() map[int64]*query.Query {
	byID := make(map[int64]*query.Query, len(d.subs))
	d.open = d.open[:0]
	for id, s := range d.subs {
		if s.filter == nil {
			d.open = append(d.open, s)
			continue
		}
		byID[id] = s.filter
	}
	return byID
}

// buildIndex indexes byID, reusing prev's automaton where it can.
func buildIndex(prev *match.QueryIndex, byID map[int64]*query.Query) *match.QueryIndex {
	if prev == nil {
		return match.NewQueries(byID)
	}
	return prev.Update(byID)
}

// unlockedIndexBuilds is how often an emitter compiles a changed keyword
// index without the node lock before it gives up and compiles under it:
// subscribers changing faster than a compile must not starve the source.
const unlockedIndexBuilds = 3

// rebuildIndexOutsideLock brings a stale keyword index up to date, compiling
// it with n.mu released: a vocabulary of thousands of keywords takes a few
// hundred milliseconds to compile, and polls and reloads must not wait for
// it.
//
// The caller holds n.mu. The function releases it while compiling and holds
// it again when it returns, so anything the caller read under the lock
// before the call may have changed. It reports false when the data source
// was stopped meanwhile; the caller then drops the batch.
func (n *Node) rebuildIndexOutsideLock(ds *dataSource) bool {
	for range unlockedIndexBuilds {
		if ds.index != nil && !ds.stale {
			return true
		}
		gen, prev, byID := ds.gen, ds.index, ds.filtersLocked()
		n.mu.Unlock()
		built := n.table.indexBuilder(prev, byID)
		n.mu.Lock()
		if n.table.sources[ds.key] != ds {
			return false
		}
		if ds.gen == gen {
			ds.index, ds.stale = built, false
			return true
		}
	}
	return true // matchersLocked compiles under the lock
}

// emitChunk is how many items an emitter matches per hold of the node
// lock. A source may hand over thousands of items at once (a feed's first
// fetch, a replay); polls, upserts and health must not wait for all of
// them to be matched, only for one chunk.
const emitChunk = 256

// emitter fans a data source's items out to its subscribers. Each item is
// matched once against the source's keyword index; only the subscribers
// whose keywords it mentions, and those without keywords, consider it: each
// skips what it has counted before and counts a comment only against a live
// lease. Items are matched a chunk at a time, the node lock released
// between chunks, and each chunk's comments go to the store buffer (which
// blocks when the store is slow) before the next is matched, so a big
// batch holds neither the lock nor its comments for long.
func (n *Node) emitter(ds *dataSource) source.Emit {
	return func(ctx context.Context, items []source.Item) error {
		buf := emitBuffers.Get().(*[]pending)
		out := (*buf)[:0]
		defer func() {
			clear(out) // keep no comments alive in the pool
			if cap(out) <= emitBufferMax {
				*buf = out[:0]
				emitBuffers.Put(buf)
			}
		}()
		for len(items) > 0 {
			k := min(len(items), emitChunk)
			var err error
			if out, err = n.matchChunk(ds, n.enrichBeforeMatch(ds, items[:k]), out[:0]); err != nil {
				return err
			}
			items = items[k:]
			n.enrichComments(out)
			n.withTerms(out)
			if k, err := n.writer.enqueueAll(ctx, out); err != nil {
				// The subscriber is gone and its data source stopped:
				// the comments were counted against a lease but will
				// not be stored, so give the reservations back.
				for _, q := range out[k:] {
					n.unreserve(q)
				}
				return err
			}
			clear(out)
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		return nil
	}
}

// emitBuffers keeps the emitters' buffers of comments between calls: a
// source that hands over one item at a time would otherwise grow a new
// one per item.
var emitBuffers = sync.Pool{New: func() any { return new([]pending) }}

// emitBufferMax is the largest buffer kept, in comments: a chunk matching
// many subscribers makes a buffer not worth keeping.
const emitBufferMax = 4096

// matchChunk matches items under the node lock and appends the comments
// they make to out. It fails when the data source was stopped.
func (n *Node) matchChunk(ds *dataSource, items []source.Item, out []pending) ([]pending, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.table.sources[ds.key] != ds || !n.rebuildIndexOutsideLock(ds) {
		return out, context.Canceled
	}
	now := n.clock()
	index, open := ds.matchersLocked()
	for _, it := range items {
		h := idHash(it.ID) // once for every subscriber
		for _, s := range open {
			if p, ok := s.acceptMatchedLocked(it, ds.key, h, nil, now); ok {
				n.usage.pendingLocked(p.comment.CrawlerID, 1)
				out = append(out, p)
			}
		}
		ds.hits = index.AppendMatch(ds.hits[:0], matchItem(it))
		for _, hit := range ds.hits {
			s, ok := ds.subs[hit.Subscriber]
			if !ok {
				continue
			}
			if p, ok := s.acceptMatchedLocked(it, ds.key, h, hit.Terms, now); ok {
				n.usage.pendingLocked(p.comment.CrawlerID, 1)
				out = append(out, p)
			}
		}
	}
	clear(ds.hits[:cap(ds.hits)]) // keep no term slices alive between chunks
	return out, nil
}

// applyLeasesLocked takes the newer grants of a fresh poll: a lease is
// cumulative (Total counts every comment the subscriber's instance may
// store) and expires at ExpiresAt on the spawn's clock. A grant for another
// instance of the subscriber, or not newer than the one it holds, changes
// nothing. It returns the held items the new leases cover, counted.
func (n *Node) applyLeasesLocked(leases []api.Lease) []pending {
	var released []pending
	for _, l := range leases {
		if s, ok := n.table.subs[l.CrawlerID]; ok && s.instance == l.Instance && l.Seq > s.leaseSeq {
			s.leaseSeq, s.leaseTotal, s.leaseUntil = l.Seq, l.Total, l.ExpiresAt
			released = append(released, n.drainBacklogLocked(s)...)
		}
	}
	return released
}

// enqueueReleasedLocked hands counted items to the writer from a goroutine
// n.wg joins: enqueueing may block on a slow store, so not under the lock.
func (n *Node) enqueueReleasedLocked(released []pending) {
	if len(released) == 0 || n.table.runCtx == nil {
		return
	}
	ctx := n.table.runCtx
	n.table.wg.Add(1)
	go func() {
		defer n.table.wg.Done()
		n.enrichComments(released)
		n.withTerms(released)
		for _, p := range released {
			if n.writer.enqueue(ctx, p) != nil {
				n.unreserve(p)
			}
		}
	}()
}

// drainBacklogLocked counts the held items a new lease now covers.
func (n *Node) drainBacklogLocked(s *subscriber) []pending {
	held := s.backlog
	s.backlog = nil
	now := n.clock()
	var out []pending
	for _, it := range held {
		if p, ok := s.acceptLocked(it.item, it.key, now); ok {
			n.usage.pendingLocked(p.comment.CrawlerID, 1)
			out = append(out, p)
		}
	}
	return out
}

// backlogPerSubscriber bounds the items a limited subscriber holds while it
// waits for a lease; older ones are dropped beyond it.
const backlogPerSubscriber = 1000

// acceptLocked decides whether an item becomes one of the subscriber's comments,
// matching the subscriber's query itself: the path of items held for a
// lease, which come one subscriber at a time.
func (s *subscriber) acceptLocked(it source.Item, key string, now int64) (pending, bool) {
	matched, ok := matchFilter(it, s.filter)
	if !ok {
		return pending{}, false
	}
	return s.acceptMatchedLocked(it, key, idHash(it.ID), matched, now)
}

// acceptMatchedLocked is acceptLocked for an item whose query the caller
// has already evaluated (the data source's query index): matched are the
// query's positive terms the item contains, nil for a subscriber without a
// filter; h is idHash of the item's id; key names the data source the item
// came from.
func (s *subscriber) acceptMatchedLocked(it source.Item, key string, h uint64, matched []string, now int64) (pending, bool) {
	if s.seen.has(it.ID, h) {
		return pending{}, false
	}
	if c := s.spec.Cursor; c != nil && behindCursor(it, key, c) {
		return pending{}, false
	}
	if it.QueryUUID != "" && it.QueryUUID != s.spec.QueryUUID {
		return pending{}, false
	}
	if s.spec.Limited && (s.reserved >= s.leaseTotal || now >= s.leaseUntil) {
		// No live lease: keep the item until the next grant, so a
		// subscriber waiting for quota loses nothing its source sent once.
		if i := slices.IndexFunc(s.backlog, func(b heldItem) bool { return b.item.ID == it.ID }); i < 0 {
			s.backlog = append(s.backlog, heldItem{item: it, key: key})
		}
		if len(s.backlog) > backlogPerSubscriber {
			s.backlog = s.backlog[len(s.backlog)-backlogPerSubscriber:]
			s.rejected++
			s.rejectedTotal.Inc()
		}
		return pending{}, false
	}
	s.reserved++
	s.seen.add(it.ID, h)
	s.rate.add(now, 1)
	return pending{
		comment: api.Comment{
			ID:           it.ID,
			CrawlerID:    s.spec.CrawlerID,
			Source:       s.spec.Source,
			Author:       it.Author,
			AuthorID:     it.AuthorID,
			Text:         it.Text,
			URL:          it.URL,
			PublishedAt:  it.PublishedAt.UTC(),
			FetchedAt:    it.FetchedAt.UTC(),
			Matched:      matched,
			Lang:         it.Lang,
			LangDetected: it.LangDetected,
			Sentiment:    it.Sentiment,
			ReplyTo:      it.ReplyTo,
			ThreadID:     it.ThreadID,
			Links:        it.Links,
			RepostOf:     it.RepostOf,
			EditedAt:     it.EditedAt,
			// Only when the source could not read the item's date.
			UnreadableDate: it.UnreadableDate,
			Engagement:     it.Engagement,
			Position:       it.Position,
			Retention:      time.Duration(s.spec.Retention),
		},
		userID:   s.spec.UserID,
		instance: s.instance,
		leaseSeq: s.leaseSeq,
		source:   key,
		sourceID: it.SourceID,
		enriched: it.Enriched,
	}, true
}

// behindCursor reports whether an item of the data source key is one the
// crawler has already delivered: at or before its cursor's id in that
// source for a source that numbers its items (X, Mastodon), at or before
// its cursor's log position for one with a replayable log (publication
// times there are set by the posting app and arrive out of order), at or
// before its cursor's publication time for the others, and for a cursor
// whose position lies in the future (which no item could pass).
func behindCursor(it source.Item, key string, c *api.Cursor) bool {
	if at := c.Sources[key]; at != "" && it.SourceID != "" {
		return api.LaterSourceID(it.SourceID, at) == at
	}
	now := it.FetchedAt
	if now.IsZero() {
		now = time.Now()
	}
	if it.Position > 0 && c.Position > 0 && !source.FuturePosition(c.Position, now) {
		return it.Position <= c.Position
	}
	return !it.PublishedAt.After(c.PublishedAt)
}

// matchItem is what a query is evaluated on.
func matchItem(it source.Item) match.Item {
	return match.Item{Text: it.Text, Author: it.Author, AuthorID: it.AuthorID, Lang: it.Lang, Fields: it.Fields,
		Sentiment: api.SentimentLabel(it.Sentiment)}
}

// matchFilter reports the query terms an item contains, and whether it
// matches the filter (a nil filter takes everything). It applies the same
// rule as the data source's query index, for one subscriber.
func matchFilter(it source.Item, filter *query.Query) ([]string, bool) {
	if filter == nil {
		return nil, true
	}
	return match.MatchQuery(filter, matchItem(it))
}
