package cassandra

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gocql/gocql"
	"golang.org/x/sync/errgroup"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store/textindex"
)

// Write stores every comment, or returns an error after which the caller
// retries the whole batch (rewrites overwrite, so retries are harmless).
func (s *Store) Write(ctx context.Context, comments []api.Comment) error {
	parts := partition(keepable(comments, time.Now()))
	if len(parts) == 0 {
		return nil
	}
	n := 0
	var keys []rowKey
	for _, p := range parts {
		n += len(p.rows)
		for _, c := range p.rows {
			keys = append(keys, rowKey{p.key, c.PublishedAt.UnixMilli(), c.ID})
		}
	}
	// WriteFresh must know these rows may be held: remembered in the
	// partitions this Store alone writes, and a partition it has no memory
	// of is no longer one it can know whole.
	s.known.wrote(keys)
	if err := s.writeParts(ctx, parts, n); err != nil {
		return err
	}
	_, err := s.settle(ctx, parts)
	return err
}

// keepable leaves out the comments already past their retention: they
// are not stored (nor counted).
func keepable(comments []api.Comment, now time.Time) []api.Comment {
	for i := range comments {
		if store.TTLFor(&comments[i], now) < 0 {
			return slices.DeleteFunc(slices.Clone(comments), func(c api.Comment) bool { return store.TTLFor(&c, now) < 0 })
		}
	}
	return comments
}

// writeParts writes n comments grouped by partition.
func (s *Store) writeParts(ctx context.Context, parts []*part, n int) error {
	if err := s.writeDays(ctx, parts); err != nil {
		return fmt.Errorf("cassandra: write %d comments: day index: %w", n, err)
	}
	var err error
	switch s.mode {
	case writeSingles:
		err = s.writeSingles(ctx, parts)
	default:
		err = s.writeBatches(ctx, parts)
	}
	if err != nil {
		return fmt.Errorf("cassandra: write %d comments: %w", n, err)
	}
	return nil
}

// intentTTL is how long an increment's intent is kept: far longer than a
// lost spawn's usage takes to be recovered.
const intentTTL = 7 * 24 * time.Hour

// Intend records the intents, one idempotent insert each. Beside them it
// reads the writers sets of the partitions the intents name, for the
// WriteFresh that follows (writers.go): one round trip for both.
func (s *Store) Intend(ctx context.Context, intents []store.Intent) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.inFlight)
	var fetched sync.WaitGroup
	fetched.Add(1)
	go func() {
		defer fetched.Done()
		s.prefetchWriters(ctx, intents)
	}()
	defer fetched.Wait()
	for _, in := range intents {
		g.Go(func() error {
			days := make([]time.Time, len(in.Days))
			for i, d := range in.Days {
				days[i] = utcDay(d)
			}
			q := s.session.Query(s.insertIntent, in.NodeID, int64(in.Seq), in.CrawlerID, in.UserID,
				int64(in.Instance), int64(in.LeaseSeq), days).WithContext(gctx).Idempotent(true)
			err := q.Exec()
			q.Release()
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return fmt.Errorf("cassandra: record %d usage intents: %w", len(intents), err)
	}
	return nil
}

// Recover counts, for each intent of node after afterSeq, the comments
// stored under it, in the partitions the intent names.
func (s *Store) Recover(ctx context.Context, nodeID string, afterSeq uint64) ([]api.Increment, error) {
	iter := s.session.Query(s.selectIntents, nodeID, int64(afterSeq)).WithContext(ctx).Idempotent(true).Iter()
	var out []api.Increment
	var days [][]time.Time
	var seq, instance, leaseSeq, crawlerID, userID int64
	var d []time.Time
	for iter.Scan(&seq, &crawlerID, &userID, &instance, &leaseSeq, &d) {
		out = append(out, api.Increment{NodeID: nodeID, Seq: uint64(seq), CrawlerID: crawlerID, UserID: userID,
			Instance: uint64(instance), LeaseSeq: uint64(leaseSeq)})
		days = append(days, slices.Clone(d))
		d = nil
	}
	if err := iter.Close(); err != nil {
		return nil, fmt.Errorf("cassandra: read usage intents of node %s: %w", nodeID, err)
	}
	for i := range out {
		inc := &out[i]
		for _, day := range days[i] {
			it := s.session.Query(s.selectCounted, inc.CrawlerID, day, nodeID, int64(inc.Seq)).WithContext(ctx).Idempotent(true).Iter()
			var pub time.Time
			for it.Scan(&pub) {
				inc.Count++
				if pub.After(inc.Newest) {
					inc.Newest = pub.UTC()
				}
			}
			if err := it.Close(); err != nil {
				return nil, fmt.Errorf("cassandra: count comments of increment %s/%d: %w", nodeID, inc.Seq, err)
			}
		}
	}
	return out, nil
}

// maxUnsettled bounds the rows remembered from failed writes; the writer
// retries one batch at a time, so it holds at most a batch or two.
const maxUnsettled = 1 << 16

// WriteFresh is Write reporting which comments the store did not hold
// before, so a comment delivered again is not counted twice. It reads the
// writers of the batch's partitions (one small read a crawler, taken by
// Intend beside the intents when it named them): in a partition
// this Store alone wrote, a comment it does not remember writing is new
// without a read (known.go); the others — comments it may have written,
// and every comment of a partition another writer wrote — are read by key
// (one query per partition). Two spawns writing the same new comment at
// the same moment (a crawler moving) can both see it as new; the hub's
// handover keeps that window short.
func (s *Store) WriteFresh(ctx context.Context, comments []api.Comment) ([]bool, error) {
	fresh := make([]bool, len(comments))
	if len(comments) == 0 {
		return fresh, nil
	}
	parts := partition(comments)
	alone, err := s.alone(ctx, parts)
	if err != nil {
		return fresh, err
	}
	var ask []*part
	s.known.mu.Lock()
	for _, p := range parts {
		if !alone[p.key] {
			ask = append(ask, p)
			continue
		}
		var rows []*api.Comment
		for _, c := range p.rows {
			if s.known.mayHoldLocked(rowKey{p.key, c.PublishedAt.UnixMilli(), c.ID}) {
				rows = append(rows, c)
			}
		}
		if len(rows) > 0 {
			ask = append(ask, &part{key: p.key, day: p.day, rows: rows})
		}
	}
	s.known.mu.Unlock()
	held, err := s.held(ctx, ask)
	if err != nil {
		return fresh, fmt.Errorf("cassandra: read %d comment keys: %w", len(comments), err)
	}
	candidates := make(map[rowKey]bool, len(comments))
	now := time.Now()
	s.mu.Lock()
	for i := range comments {
		c := &comments[i]
		k := rowKey{partKey{c.CrawlerID, utcDay(c.PublishedAt).Unix()}, c.PublishedAt.UnixMilli(), c.ID}
		if _, seen := candidates[k]; seen {
			continue // the same comment twice in one batch counts once
		}
		if store.TTLFor(c, now) < 0 {
			candidates[k] = false // past its retention: not stored
			continue
		}
		_, retried := s.unsettled[k]
		isNew := retried || !held[k]
		candidates[k] = isNew
		fresh[i] = isNew
	}
	s.mu.Unlock()
	// Only new comments are written: rewriting a held one would take it
	// from the increment that counted it.
	var toWrite []*part
	var keys []rowKey
	n := 0
	for _, p := range parts {
		rows := slices.DeleteFunc(slices.Clone(p.rows), func(c *api.Comment) bool {
			return !candidates[rowKey{p.key, c.PublishedAt.UnixMilli(), c.ID}]
		})
		if len(rows) > 0 {
			toWrite = append(toWrite, &part{key: p.key, day: p.day, rows: rows})
			n += len(rows)
			for _, c := range rows {
				keys = append(keys, rowKey{p.key, c.PublishedAt.UnixMilli(), c.ID})
			}
		}
	}
	if n == 0 {
		return fresh, nil
	}
	s.known.add(keys)
	if err := s.writeParts(ctx, toWrite, n); err != nil {
		s.mu.Lock()
		if len(s.unsettled)+len(candidates) > maxUnsettled {
			clear(s.unsettled)
		}
		for k, isNew := range candidates {
			if isNew {
				s.unsettled[k] = struct{}{}
			}
		}
		s.mu.Unlock()
		return make([]bool, len(comments)), err
	}
	s.mu.Lock()
	for k := range candidates {
		delete(s.unsettled, k)
	}
	s.mu.Unlock()
	// A removal that ran while the batch was written: what it covers is
	// deleted again and was not stored.
	gone, err := s.settle(ctx, toWrite)
	if err != nil {
		return fresh, fmt.Errorf("cassandra: check %d comments against tombstones: %w", n, err)
	}
	if len(gone) > 0 {
		for i := range comments {
			c := &comments[i]
			if gone[rowKey{partKey{c.CrawlerID, utcDay(c.PublishedAt).Unix()}, c.PublishedAt.UnixMilli(), c.ID}] {
				fresh[i] = false
			}
		}
	}
	return fresh, nil
}

// heldChunk bounds the keys one read of held asks for; a chunk's count
// is rounded up to a power of two (the last key repeated), so a few
// prepared statements serve every batch.
const heldChunk = 128

// held reads which of the parts' rows are already stored: each key asked
// by name (published time and id), a point lookup in the partition.
func (s *Store) held(ctx context.Context, parts []*part) (map[rowKey]bool, error) {
	var mu sync.Mutex
	out := map[rowKey]bool{}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.inFlight)
	for _, p := range parts {
		for start := 0; start < len(p.rows); start += heldChunk {
			rows := p.rows[start:min(start+heldChunk, len(p.rows))]
			s.heldKeysRead.Add(int64(len(rows)))
			g.Go(func() error {
				n := 1
				for n < len(rows) {
					n *= 2
				}
				args := make([]any, 0, 2+2*n)
				args = append(args, p.key.crawler, p.day)
				for i := range n {
					c := rows[min(i, len(rows)-1)]
					args = append(args, ms(c.PublishedAt), c.ID)
				}
				q := s.session.Query(s.selectHeld+strings.TrimSuffix(strings.Repeat("(?, ?), ", n), ", ")+`)`, args...).
					WithContext(gctx).Idempotent(true)
				defer q.Release()
				iter := q.Iter()
				var pub time.Time
				var id string
				for iter.Scan(&pub, &id) {
					mu.Lock()
					out[rowKey{p.key, pub.UnixMilli(), id}] = true
					mu.Unlock()
				}
				return iter.Close()
			})
		}
	}
	return out, g.Wait()
}

type part struct {
	key  partKey
	day  time.Time
	rows []*api.Comment
}

type rowKey struct {
	part partKey
	pub  int64 // Unix milliseconds
	id   string
}

// partition groups comments by (crawler id, UTC day of published time),
// keeping their order. A comment given twice (same primary key) is kept
// once, its last version: the rows of one batch share a write timestamp,
// and Cassandra would settle such a tie by comparing values, not by order.
func partition(comments []api.Comment) []*part {
	parts := make(map[partKey]*part)
	rows := make(map[rowKey]int, len(comments))
	var order []*part
	for i := range comments {
		c := &comments[i]
		day := utcDay(c.PublishedAt)
		k := partKey{c.CrawlerID, day.Unix()}
		p := parts[k]
		if p == nil {
			p = &part{key: k, day: day}
			parts[k] = p
			order = append(order, p)
		}
		rk := rowKey{k, c.PublishedAt.UnixMilli(), c.ID}
		if j, dup := rows[rk]; dup {
			p.rows[j] = c
			continue
		}
		rows[rk] = len(p.rows)
		p.rows = append(p.rows, c)
	}
	return order
}

func utcDay(t time.Time) time.Time {
	t = t.UTC()
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
}

// ms is t in UTC at the millisecond precision of a Cassandra timestamp.
func ms(t time.Time) time.Time {
	return t.UTC().Truncate(time.Millisecond)
}

// writeDays lists the batch's (crawler, day) pairs in crawler_days, with
// this Store among the partition's writers (writers.go), skipping the ones
// this Store has listed before: before a Store writes its first row in a
// partition, the partition names it.
func (s *Store) writeDays(ctx context.Context, parts []*part) error {
	var todo []*part
	s.mu.Lock()
	for _, p := range parts {
		if _, ok := s.knownDays[p.key]; !ok {
			todo = append(todo, p)
		}
	}
	s.mu.Unlock()
	if len(todo) == 0 {
		return nil
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.inFlight)
	for _, p := range todo {
		g.Go(func() error {
			b := s.session.NewBatch(gocql.UnloggedBatch).WithContext(gctx)
			b.Entries = []gocql.BatchEntry{
				{Stmt: s.insertDay, Args: []any{p.key.crawler, p.day}, Idempotent: true},
				{Stmt: s.addWriter, Args: []any{[]string{s.writer}, p.key.crawler, p.day}, Idempotent: true},
			}
			return s.session.ExecuteBatch(b)
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	s.mu.Lock()
	if len(s.knownDays)+len(todo) > maxKnownDays {
		clear(s.knownDays)
	}
	for _, p := range todo {
		s.knownDays[p.key] = struct{}{}
	}
	s.mu.Unlock()
	return nil
}

// commentArgs binds upsertComment for c in its day partition: its TTL,
// its thread and increment, its body, its author's key and its search
// terms (added to the set, so that a rewrite writes no collection
// tombstone), then its key.
func (s *Store) commentArgs(c *api.Comment, day time.Time, now time.Time) []any {
	var node, seq any = gocql.UnsetValue, gocql.UnsetValue
	if c.NodeID != "" {
		node, seq = c.NodeID, int64(c.IncSeq)
	}
	args := make([]any, 0, 24)
	args = append(args, ttlSeconds(c, now), optText(c.ThreadID), node, seq)
	args = append(args, bodyArgs(c)...)
	return append(args, authorKeyOf(c), textindex.Terms(c), c.CrawlerID, day, ms(c.PublishedAt), c.ID)
}

// engagementArgs binds a comment's reposts and likes: unset when its
// source gave none, so an unknown count writes no cell (a null would write
// a tombstone) and reads back as unknown, never as 0.
func engagementArgs(e *api.Engagement) (reposts, likes any) {
	if e == nil {
		return gocql.UnsetValue, gocql.UnsetValue
	}
	return e.Reposts, e.Likes
}

// engagementOf is the engagement read back from the reposts and likes
// columns: nil unless both hold a count.
func engagementOf(reposts, likes *int64) *api.Engagement {
	if reposts == nil || likes == nil {
		return nil
	}
	return &api.Engagement{Reposts: *reposts, Likes: *likes}
}

// writeBatches writes each partition's comments as unlogged single-partition
// batches (one mutation on one replica set: no batch log, no coordinator
// fan-out), the partitions concurrently.
func (s *Store) writeBatches(ctx context.Context, parts []*part) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.inFlight)
	for _, p := range parts {
		for start := 0; start < len(p.rows); {
			end, size := start, 0
			for end < len(p.rows) && end-start < maxBatchRows && (size < maxBatchBytes || end == start) {
				size += rowSize(p.rows[end])
				end++
			}
			rows := p.rows[start:end]
			start = end
			g.Go(func() error {
				now := time.Now()
				b := s.session.NewBatch(gocql.UnloggedBatch).WithContext(gctx)
				b.Entries = make([]gocql.BatchEntry, 0, len(rows))
				for _, c := range rows {
					b.Entries = append(b.Entries, gocql.BatchEntry{
						Stmt: s.upsertComment, Args: s.commentArgs(c, p.day, now), Idempotent: true,
					})
				}
				return s.session.ExecuteBatch(b)
			})
		}
	}
	return g.Wait()
}

// rowSize is about what a comment's row takes in a batch: its columns,
// and its search terms (each word of its text once, at most).
func rowSize(c *api.Comment) int {
	n := 64 + len(c.ID) + len(c.Source) + 2*len(c.Author) + 2*len(c.Text) + len(c.URL)
	for _, m := range c.Matched {
		n += 4 + len(m)
	}
	return n
}

// writeSingles writes every comment as its own statement, concurrently.
func (s *Store) writeSingles(ctx context.Context, parts []*part) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.inFlight)
	for _, p := range parts {
		for _, c := range p.rows {
			g.Go(func() error {
				q := s.session.Query(s.upsertComment, s.commentArgs(c, p.day, time.Now())...).
					WithContext(gctx).Idempotent(true)
				err := q.Exec()
				q.Release()
				return err
			})
		}
	}
	return g.Wait()
}
