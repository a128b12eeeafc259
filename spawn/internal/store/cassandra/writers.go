package cassandra

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/gocql/gocql"
	"golang.org/x/sync/errgroup"

	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store"
)

// writersFromRow names store_info's row holding the first day whose
// partitions name every writer of their rows in the writers set (the
// value everyDay: all of them).
const writersFromRow = "writers_from"

// newWriterID is a Store's own name in the partitions' writers sets:
// random, so that every Open is a writer of its own.
func newWriterID() (string, error) {
	var raw [12]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", fmt.Errorf("cassandra: make a writer id: %w", err)
	}
	return hex.EncodeToString(raw[:]), nil
}

// loadWritersFrom reads (recording it on first use) the first day whose
// partitions' writers sets are whole: every day for a keyspace created
// with the column, else two days after this release first opened it (the
// rows of earlier days, and those an earlier release may still write
// while spawns are upgraded one by one, name no writer).
func (s *Store) loadWritersFrom(ctx context.Context, before schemaState) error {
	value := everyDay
	if before.comments && !before.writers {
		value = time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, 2).Format(exportDayLayout)
	}
	q := s.session.Query(`INSERT INTO `+s.cfg.Keyspace+`.store_info (name, value) VALUES (?, ?) IF NOT EXISTS`, writersFromRow, value).WithContext(ctx)
	_, err := q.MapScanCAS(map[string]any{})
	q.Release()
	if err != nil {
		return fmt.Errorf("cassandra: record the first day of writer sets: %w", err)
	}
	var v string
	if err := s.session.Query(`SELECT value FROM `+s.cfg.Keyspace+`.store_info WHERE name = ?`, writersFromRow).
		WithContext(ctx).Consistency(gocql.Consistency(gocql.Serial)).Scan(&v); err != nil {
		return fmt.Errorf("cassandra: read the first day of writer sets: %w", err)
	}
	if v == everyDay {
		s.writersFrom = time.Time{}
		return nil
	}
	d, err := time.Parse(exportDayLayout, v)
	if err != nil {
		return fmt.Errorf("cassandra: the first day of writer sets %q is not a day", v)
	}
	s.writersFrom = d
	return nil
}

// alone reads the writers set of each partition (its crawler_days row)
// and reports those this Store alone wrote, whose every written key it
// remembers (knownKeys): for them, a key it does not remember is not
// stored. One read a crawler, its days named, the crawlers concurrently;
// none for the partitions whose sets Intend has just read (prefetched).
func (s *Store) alone(ctx context.Context, parts []*part) (map[partKey]bool, error) {
	seen := make(map[partKey][]string, len(parts))
	ask := map[int64][]time.Time{}
	now := time.Now()
	s.mu.Lock()
	for _, p := range parts {
		if p.day.Before(s.writersFrom) {
			continue // rows of an earlier release name no writer
		}
		if f, ok := s.prefetched[p.key]; ok && now.Sub(f.at) < prefetchAge {
			delete(s.prefetched, p.key)
			seen[p.key] = f.writers
			continue
		}
		ask[p.key.crawler] = append(ask[p.key.crawler], p.day)
	}
	s.mu.Unlock()
	if len(ask) > 0 {
		read, err := s.readWriters(ctx, ask)
		if err != nil {
			return nil, err
		}
		for k, w := range read {
			seen[k] = w
		}
	}
	out := make(map[partKey]bool, len(parts))
	for k, w := range seen {
		others := slices.ContainsFunc(w, func(id string) bool { return id != s.writer })
		out[k] = s.known.observe(k, others, len(w) == 0)
	}
	return out, nil
}

// readWriters reads the writers sets of the crawlers' days: one query a
// crawler, concurrently. A day with no row has an empty set.
func (s *Store) readWriters(ctx context.Context, days map[int64][]time.Time) (map[partKey][]string, error) {
	var mu sync.Mutex
	out := map[partKey][]string{}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.inFlight)
	for crawler, ds := range days {
		g.Go(func() error {
			q := s.session.Query(s.selectWriters, crawler, ds).WithContext(gctx).Idempotent(true)
			defer q.Release()
			iter := q.Iter()
			got := map[int64][]string{}
			var day time.Time
			var writers []string
			for iter.Scan(&day, &writers) {
				got[day.Unix()] = writers
				writers = nil
			}
			if err := iter.Close(); err != nil {
				return err
			}
			mu.Lock()
			for _, d := range ds {
				out[partKey{crawler, d.Unix()}] = got[d.Unix()]
			}
			mu.Unlock()
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, fmt.Errorf("cassandra: read the writers of %d crawlers' partitions: %w", len(days), err)
	}
	return out, nil
}

// prefetchAge is how long a writers set Intend read stands for WriteFresh:
// the counted write's own check, taken a round trip earlier (beside the
// intents, instead of after them).
const prefetchAge = time.Second

// maxPrefetched bounds the sets kept for a WriteFresh that never came.
const maxPrefetched = 1 << 12

type prefetch struct {
	writers []string
	at      time.Time
}

// prefetchWriters reads, beside the intents, the writers sets of the
// partitions they name, for the WriteFresh that follows. A failed read
// keeps nothing: WriteFresh reads again.
func (s *Store) prefetchWriters(ctx context.Context, intents []store.Intent) {
	days := map[int64][]time.Time{}
	seen := map[partKey]bool{}
	for _, in := range intents {
		for _, d := range in.Days {
			day := utcDay(d)
			k := partKey{in.CrawlerID, day.Unix()}
			if day.Before(s.writersFrom) || seen[k] {
				continue
			}
			seen[k] = true
			days[in.CrawlerID] = append(days[in.CrawlerID], day)
		}
	}
	if len(days) == 0 {
		return
	}
	at := time.Now()
	read, err := s.readWriters(ctx, days)
	if err != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.prefetched)+len(read) > maxPrefetched {
		for k, f := range s.prefetched {
			if time.Since(f.at) >= prefetchAge {
				delete(s.prefetched, k)
			}
		}
	}
	if len(s.prefetched)+len(read) > maxPrefetched {
		return
	}
	for k, w := range read {
		s.prefetched[k] = prefetch{w, at}
	}
}
