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
// stored. One read a crawler, its days named, the crawlers concurrently.
func (s *Store) alone(ctx context.Context, parts []*part) (map[partKey]bool, error) {
	days := map[int64][]time.Time{}
	var crawlers []int64
	for _, p := range parts {
		if p.day.Before(s.writersFrom) {
			continue // rows of an earlier release name no writer
		}
		if _, ok := days[p.key.crawler]; !ok {
			crawlers = append(crawlers, p.key.crawler)
		}
		days[p.key.crawler] = append(days[p.key.crawler], p.day)
	}
	var mu sync.Mutex
	out := make(map[partKey]bool, len(parts))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.inFlight)
	for _, crawler := range crawlers {
		g.Go(func() error {
			q := s.session.Query(s.selectWriters, crawler, days[crawler]).WithContext(gctx).Idempotent(true)
			defer q.Release()
			iter := q.Iter()
			seen := map[int64][]string{}
			var day time.Time
			var writers []string
			for iter.Scan(&day, &writers) {
				seen[day.Unix()] = writers
				writers = nil
			}
			if err := iter.Close(); err != nil {
				return err
			}
			for _, d := range days[crawler] {
				k := partKey{crawler, d.Unix()}
				w := seen[d.Unix()]
				others := slices.ContainsFunc(w, func(id string) bool { return id != s.writer })
				a := s.known.observe(k, others, len(w) == 0)
				mu.Lock()
				out[k] = a
				mu.Unlock()
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, fmt.Errorf("cassandra: read the writers of %d partitions: %w", len(parts), err)
	}
	return out, nil
}
