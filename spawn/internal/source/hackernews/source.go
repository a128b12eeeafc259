package hackernews

import (
	"context"
	"log/slog"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
)

// Parts of the source's ErrorSet.
const (
	partWalk    = "walk"
	partUpdates = "updates"
	partFill    = "fill"
)

// Reasons an item read is not handed over (bw_spawn_source_skipped_total).
const (
	reasonNull          = "null_item"
	reasonDeleted       = "deleted"
	reasonDead          = "dead"
	reasonMalformed     = "malformed"
	reasonThreadUnknown = "thread_unknown"
)

// emitBatch is how many items one emit carries at most.
const emitBatch = 256

// Source is the spawn's one walk over Hacker News.
type Source struct {
	opts    Options
	api     *client
	logger  *slog.Logger
	errs    source.ErrorSet
	threads *threads
	recent  *recentItems
	stats   counters
	retract retracter

	// started is closed once the live walk knows its first id.
	started chan struct{}
	// changed wakes the gap filler when a gap is queued.
	changed chan struct{}

	mu        sync.Mutex
	startID   int64     // the first id the live walk reads
	frontier  int64     // the newest id the live walk knows of (maxitem)
	startAt   time.Time // when it read maxitem first
	last      time.Time // published time of the newest item handed over
	behind    int64     // ids between the walk and maxitem
	cursors   map[int64]bool
	pending   []gap
	timeline  []idTime // the live walk's latest items, oldest first (gap.go)
	startOnce sync.Once
}

var (
	_ source.DataSource = (*Source)(nil)
	_ source.Retracter  = (*Source)(nil)
	_ source.Reporter   = (*Source)(nil)
)

func newSource(opts Options, apiURL, searchURL string) *Source {
	return &Source{
		opts: opts, api: newClient(opts, apiURL, searchURL), logger: opts.Logger.With("source", Name),
		threads: newThreads(opts.ThreadCacheSize), recent: newRecentItems(opts.RecentItems),
		stats:   counters{skipped: map[string]int64{}},
		started: make(chan struct{}), changed: make(chan struct{}, 1), cursors: map[int64]bool{},
	}
}

// SetSubscribers queues the gap of every subscriber that arrives with a
// cursor.
func (s *Source) SetSubscribers(subs []source.Sub) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fillsLocked(source.Specs(subs))
}

// Err joins the current errors of the walk, the updates and the gaps.
func (s *Source) Err() error { return s.errs.Err() }

func (s *Source) setErr(part string, err error) { s.errs.Set(part, source.Degraded(err)) }

// Run walks until ctx ends, following updates and filling gaps beside it.
func (s *Source) Run(ctx context.Context, emit source.Emit) {
	var wg sync.WaitGroup
	wg.Go(func() { s.runUpdates(ctx) })
	wg.Go(func() { s.runFills(ctx, emit) })
	s.runWalk(ctx, emit)
	wg.Wait()
}

// walkStarted records where the live walk starts.
func (s *Source) walkStarted(first int64) {
	s.mu.Lock()
	s.startID, s.startAt, s.frontier = first, time.Now(), first-1
	s.mu.Unlock()
	s.startOnce.Do(func() { close(s.started) })
	s.logger.Info("hackernews walk started", "first_id", first)
}

// setFrontier records the newest id the live walk knows of: a
// subscriber arriving now gets the later ones live.
func (s *Source) setFrontier(id int64) {
	s.mu.Lock()
	s.frontier = max(s.frontier, id)
	s.mu.Unlock()
}

func (s *Source) lastTime() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

func (s *Source) setBehind(n int64) {
	s.mu.Lock()
	s.behind = max(n, 0)
	s.mu.Unlock()
}

// hand turns walked items into source items and hands them over, in order:
// deleted and dead ones are passed, every one is placed in its thread.
func (s *Source) hand(ctx context.Context, walked []*wireItem, query string, emit source.Emit) error {
	now := time.Now().UTC()
	items := make([]source.Item, 0, len(walked))
	for _, w := range walked {
		root := s.rootOf(ctx, w)
		switch {
		case w.Deleted:
			s.stats.skip(reasonDeleted)
			continue
		case w.Dead:
			s.stats.skip(reasonDead)
			continue
		case w.Type == "" || w.Time <= 0:
			s.stats.skip(reasonMalformed)
			continue
		}
		it := toItem(w, root, now)
		it.QueryUUID = query
		s.remember(w.ID, it)
		items = append(items, it)
	}
	if err := s.emitItems(ctx, items, emit); err != nil {
		return err
	}
	if query == "" {
		s.mu.Lock()
		s.noteLocked(walked)
		s.mu.Unlock()
	}
	return nil
}

// emitItems hands items over in batches of at most emitBatch.
func (s *Source) emitItems(ctx context.Context, items []source.Item, emit source.Emit) error {
	for len(items) > 0 {
		n := min(len(items), emitBatch)
		if err := emit(ctx, items[:n]); err != nil {
			return err
		}
		s.stats.items.Add(int64(n))
		last := items[n-1].PublishedAt
		s.mu.Lock()
		if last.After(s.last) {
			s.last = last
		}
		s.mu.Unlock()
		items = items[n:]
	}
	return nil
}

// counters are what the source counts, for metrics.
type counters struct {
	items       atomic.Int64
	retractions atomic.Int64
	gapsFilled  atomic.Int64
	gapItems    atomic.Int64
	gapMillis   atomic.Int64

	mu      sync.Mutex
	skipped map[string]int64
}

func (c *counters) skip(reason string) {
	c.mu.Lock()
	c.skipped[reason]++
	c.mu.Unlock()
}

func (c *counters) gap(items int, took time.Duration) {
	c.gapsFilled.Add(1)
	c.gapItems.Add(int64(items))
	c.gapMillis.Add(took.Milliseconds())
}

// Stat names of this source's own numbers.
const (
	statRequests    = "bw_spawn_hackernews_requests_total"
	statBehind      = "bw_spawn_hackernews_walk_behind_items"
	statRetractions = "bw_spawn_hackernews_retractions_total"
)

// Report publishes the walk's numbers.
func (s *Source) Report() []source.Stat {
	s.stats.mu.Lock()
	skipped := maps.Clone(s.stats.skipped)
	s.stats.mu.Unlock()
	s.mu.Lock()
	behind := s.behind
	s.mu.Unlock()
	out := source.StandardStats(s.stats.items.Load(), 0, 0, skipped)
	out = append(out, source.GapStats(s.stats.gapsFilled.Load(), s.stats.gapItems.Load(), float64(s.stats.gapMillis.Load())/1000)...)
	return append(out,
		source.Stat{Name: statRequests, Help: "Requests the Hacker News walk sent to the Firebase and search APIs.", Value: float64(s.api.requests.Load())},
		source.Stat{Name: statBehind, Help: "Item ids between the Hacker News walk and maxitem.", Gauge: true, Value: float64(behind)},
		source.Stat{Name: statRetractions, Help: "Hacker News edits and deletions the source told the spawn.", Value: float64(s.stats.retractions.Load())},
	)
}
