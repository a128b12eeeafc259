package cassandra

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"sync"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store"
	"github.com/gocql/gocql"
	"golang.org/x/sync/errgroup"
)

// Tombstone keys, as the file store spells them: c|source|comment id,
// a|source|author (an inactive account), f|source|author (a forget).
func tombKey(kind, source, target string) string { return kind + "|" + source + "|" + target }

func bucketOf(key string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(key))
	return int(h.Sum32() % tombBuckets)
}

// writeTombstones writes tombstones with their lifetime as TTL.
func (s *Store) writeTombstones(ctx context.Context, tombstones []store.Tombstone) error {
	ks := s.cfg.Keyspace
	insert := `INSERT INTO ` + ks + `.tombstones (bucket, key, before) VALUES (?, ?, ?) USING TTL ?`
	now := time.Now()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.inFlight)
	for _, ts := range tombstones {
		ttl := int(math.Ceil(ts.Until.Sub(now).Seconds()))
		if ts.Source == "" || ttl <= 0 {
			continue
		}
		var keys []string
		var before any = gocql.UnsetValue
		switch {
		case ts.CommentID != "":
			keys = []string{tombKey("c", ts.Source, ts.CommentID)}
		case ts.Account:
			for _, a := range authorTargets(ts.Author) {
				keys = append(keys, tombKey("a", ts.Source, a))
			}
		case ts.Author != "":
			for _, a := range authorTargets(ts.Author) {
				keys = append(keys, tombKey("f", ts.Source, a))
			}
			if !ts.Before.IsZero() {
				before = ms(ts.Before)
			}
		}
		for _, k := range keys {
			g.Go(func() error {
				q := s.session.Query(insert, bucketOf(k), k, before, ttl).WithContext(gctx).Idempotent(true)
				err := q.Exec()
				q.Release()
				return err
			})
		}
	}
	if err := g.Wait(); err != nil {
		return fmt.Errorf("cassandra: write tombstones: %w", err)
	}
	return nil
}

// buried reads which of the comments a tombstone covers (their indexes in
// cs), reading each bucket's keys of the batch in one query.
func (s *Store) buried(ctx context.Context, cs []*api.Comment) (map[int]bool, error) {
	type want struct {
		i     int
		kind  string
		check bool // an author key: compare published time with before
	}
	keys := map[string][]want{}
	byBucket := map[int][]string{}
	addKey := func(k string, w want) {
		if _, ok := keys[k]; !ok {
			byBucket[bucketOf(k)] = append(byBucket[bucketOf(k)], k)
		}
		keys[k] = append(keys[k], w)
	}
	for i, c := range cs {
		addKey(tombKey("c", c.Source, c.ID), want{i: i, kind: "c"})
		for _, a := range authorKeys(c) {
			addKey(tombKey("a", c.Source, a), want{i: i, kind: "a"})
			addKey(tombKey("f", c.Source, a), want{i: i, kind: "f", check: true})
		}
	}
	var mu sync.Mutex
	out := map[int]bool{}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.inFlight)
	for bucket, ks := range byBucket {
		g.Go(func() error {
			it := s.session.Query(`SELECT key, before FROM `+s.cfg.Keyspace+`.tombstones WHERE bucket = ? AND key IN ?`, bucket, ks).
				WithContext(gctx).Idempotent(true).Iter()
			var key string
			var before *time.Time
			for it.Scan(&key, &before) {
				mu.Lock()
				for _, w := range keys[key] {
					if !w.check || before == nil || before.IsZero() || cs[w.i].PublishedAt.Before(*before) {
						out[w.i] = true
					}
				}
				mu.Unlock()
				before = nil
			}
			return it.Close()
		})
	}
	if err := g.Wait(); err != nil {
		return nil, fmt.Errorf("cassandra: read tombstones: %w", err)
	}
	return out, nil
}

// Lift deletes the account tombstones of the authors.
func (s *Store) Lift(ctx context.Context, source string, authors []string) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.inFlight)
	for _, a := range authors {
		for _, target := range authorTargets(a) {
			k := tombKey("a", source, target)
			g.Go(func() error {
				q := s.session.Query(`DELETE FROM `+s.cfg.Keyspace+`.tombstones WHERE bucket = ? AND key = ?`, bucketOf(k), k).
					WithContext(gctx).Idempotent(true)
				err := q.Exec()
				q.Release()
				return err
			})
		}
	}
	if err := g.Wait(); err != nil {
		return fmt.Errorf("cassandra: lift account tombstones: %w", err)
	}
	return nil
}
