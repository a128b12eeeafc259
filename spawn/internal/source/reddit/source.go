package reddit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/pkg/backoff"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
)

// Polls. A listing is polled every interval, which follows the rate it
// fills at: TargetFill new things a poll, within [MinInterval,
// MaxInterval]. A poll reads the newest page and, while a page is full and
// still newer than the newest thing read before, the next one back
// (after=<the page's last fullname>), up to MaxPages. Ids are compared as
// numbers, so a thing deleted since the last poll (which a before= anchor
// would turn into an empty page) changes nothing. When even MaxPages do
// not reach back, the listing ran faster than it was polled and the things
// between are out of its reach: that is logged, counted
// (bw_spawn_reddit_listing_overruns_total) and the listing is polled at
// MinInterval from then on. With the default budget a listing that gets
// more than about 1000 things between two polls loses them: at MinInterval
// that is 200 a second, far beyond the busiest subreddit measured
// (docs/sources/reddit.md).
//
// A subscriber that arrives with a cursor (it ran on a spawn that
// stopped, or it is new: the hub hands a new crawler its creation time)
// has its gap read back, for its query alone: the things after its cursor
// (the newest thing its crawler stored from this listing, or, when it
// stored none from it, created since the cursor's time less markMargin),
// up to the newest, which the next poll reads. The first poll of a
// listing hands over nothing else: it notes where the listing stands.
// The spawn drops what a crawler already stored.

// markMargin widens a read back to a time: ids and creation times agree
// but for moments, and the cursor's time is the newest thing its crawler
// stored from any listing.
const markMargin = time.Minute

// mark is how far back a read must go: past the thing numbered id (when
// set) and past things created at (when set).
type mark struct {
	id int64
	at time.Time
}

// markOf is where spec's cursor says its crawler stands in the listing
// key; zero without a cursor.
func markOf(spec api.SubscriberSpec, key string) mark {
	if spec.Cursor == nil {
		return mark{}
	}
	if id, err := strconv.ParseInt(spec.Cursor.Sources[key], 10, 64); err == nil && id > 0 {
		return mark{id: id}
	}
	if at := spec.Cursor.PublishedAt; !at.IsZero() {
		return mark{at: at.Add(-markMargin)}
	}
	return mark{}
}

func (m mark) zero() bool { return m.id == 0 && m.at.IsZero() }

// reaches reports whether a thing numbered id, created at, lies at or
// before m: a read back that met it has gone far enough for m, and no one
// wants it. Nothing reaches a zero mark.
func (m mark) reaches(id int64, at time.Time) bool {
	return !m.zero() && (m.id == 0 || id <= m.id) && (m.at.IsZero() || at.Before(m.at))
}

// after reports whether a thing lies after m: one a gap up to m missed.
func (m mark) after(id int64, at time.Time) bool {
	if m.id > 0 {
		return id > m.id
	}
	return !at.Before(m.at)
}

// union is a mark that reaching reaches both m and o; a zero mark asks
// for nothing.
func (m mark) union(o mark) mark {
	if o.id > 0 && (m.id == 0 || o.id < m.id) {
		m.id = o.id
	}
	if !o.at.IsZero() && (m.at.IsZero() || o.at.Before(m.at)) {
		m.at = o.at
	}
	return m
}

// fill is a gap to read back for one query: things after a mark.
type fill struct {
	after mark
	query string
	at    time.Time
}

// Source polls one listing of one subreddit.
type Source struct {
	opts    Options
	c       *client
	key     string
	sub     string
	listing string
	kind    string
	logger  *slog.Logger
	errs    source.ErrorSet
	book    *recheckBook
	retract retracter
	stats   counters

	changed chan struct{}

	mu       sync.Mutex
	last     int64 // newest id read, 0 before the first poll
	polled   bool
	cursors  map[int64]bool
	fills    []fill
	interval time.Duration
	lastPoll time.Time
}

var (
	_ source.DataSource = (*Source)(nil)
	_ source.Retracter  = (*Source)(nil)
	_ source.Reporter   = (*Source)(nil)
)

func newSource(opts Options, c *client, key, sub, listing string) *Source {
	kind := kindComment
	if listing == listingNew {
		kind = kindPost
	}
	return &Source{
		opts: opts, c: c, key: key, sub: sub, listing: listing, kind: kind,
		logger:  opts.Logger.With("source", Name, "subreddit", sub, "listing", listing),
		book:    newRecheckBook(opts.RecheckItems),
		changed: make(chan struct{}, 1), cursors: map[int64]bool{}, interval: opts.StartInterval,
	}
}

// SetSubscribers notes the cursors of subscribers that arrive: the next
// poll reads each gap back for its query.
func (s *Source) SetSubscribers(subs []source.Sub) {
	s.mu.Lock()
	defer s.mu.Unlock()
	here := map[int64]bool{}
	for _, sub := range subs {
		spec := sub.Spec
		here[spec.CrawlerID] = true
		if spec.Cursor == nil || s.cursors[spec.CrawlerID] {
			continue
		}
		s.cursors[spec.CrawlerID] = true
		m := markOf(spec, s.key)
		if !m.zero() && (!s.polled || m.id == 0 || m.id < s.last) {
			s.fills = append(s.fills, fill{after: m, query: spec.QueryUUID, at: spec.Cursor.PublishedAt})
			source.Signal(s.changed)
		}
	}
	for id := range s.cursors {
		if !here[id] {
			delete(s.cursors, id)
		}
	}
}

// Err joins the listing's errors and, while they last, refused
// credentials, which fail the subscribers.
func (s *Source) Err() error {
	return source.DegradedUnless(errors.Join(s.c.credentialsErr(), s.errs.Err()), ErrCredentialsRefused, ErrNoSubreddit)
}

// Run polls the listing until ctx ends, re-checking what it handed over
// between polls.
func (s *Source) Run(ctx context.Context, emit source.Emit) {
	bo := backoff.Policy{Min: s.opts.BackoffMin, Max: s.opts.BackoffMax}
	next := time.Now()
	for {
		wake := next
		if due := s.book.nextDue(); !due.IsZero() && due.Before(wake) {
			wake = due
		}
		t := time.NewTimer(time.Until(wake))
		pollNow := false
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-s.changed:
			pollNow = true
		case <-t.C:
		}
		t.Stop()
		if !pollNow && time.Now().Before(next) {
			if err := s.recheck(ctx); err != nil {
				if ctx.Err() != nil {
					return
				}
				s.errs.Set(partRecheck, source.Degraded(err))
				s.logger.Warn("reddit re-check failed", "err", err)
				next = later(next, time.Now().Add(bo.Next()))
				continue
			}
			s.errs.Set(partRecheck, nil)
			continue
		}
		err := s.poll(ctx, emit)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			s.errs.Set(partPoll, err)
			wait := bo.Next()
			if errors.Is(err, ErrCredentialsRefused) {
				wait = s.opts.AuthBackoff
			}
			s.logger.Warn("reddit poll failed", "err", err, "retry_in", wait.Round(time.Millisecond))
			next = time.Now().Add(wait)
			continue
		}
		bo.Reset()
		s.errs.Set(partPoll, nil)
		s.mu.Lock()
		next = time.Now().Add(s.interval)
		s.mu.Unlock()
	}
}

// poll reads the listing once: the new things, and the pending gaps.
func (s *Source) poll(ctx context.Context, emit source.Emit) error {
	s.mu.Lock()
	last, polled := s.last, s.polled
	fills := s.fills
	s.fills = nil
	s.mu.Unlock()
	started := time.Now()

	// How far back this poll reads: the newest thing read before, and
	// the oldest gap's start; the first poll without gaps reads a page.
	var stop mark
	if polled {
		stop.id = last
	}
	for _, f := range fills {
		stop = stop.union(f.after)
	}
	fresh := !polled && len(fills) == 0
	things, reached, pages, err := s.readBack(ctx, stop, fresh)
	if err != nil {
		s.mu.Lock()
		s.fills = append(fills, s.fills...)
		s.mu.Unlock()
		return err
	}
	newest := last
	for _, t := range things {
		newest = max(newest, t.id)
	}
	if fresh {
		// A new listing without gaps: it starts now.
		s.mu.Lock()
		s.last, s.polled = newest, true
		s.mu.Unlock()
		s.logger.Info("reddit listing started", "newest", strconv.FormatInt(newest, 36))
		return nil
	}
	if !reached && pages >= s.opts.MaxPages && len(things) > 0 {
		s.stats.overruns.Add(1)
		s.logger.Warn("reddit listing ran past its reach between two polls: the things between are lost",
			"read_back_to", strconv.FormatInt(things[len(things)-1].id, 36), "wanted_back_to", strconv.FormatInt(stop.id, 36),
			"wanted_back_to_time", stop.at, "pages", pages)
	}
	// Oldest first; live things (after last) for everyone, older ones for
	// the gaps that wanted them.
	slices.SortFunc(things, func(a, b polledThing) int { return cmpID(a.id, b.id) })
	now := time.Now().UTC()
	var items []source.Item
	live := 0
	for _, t := range things {
		if t.data.gone() {
			s.stats.skip(reasonGone)
			continue
		}
		it := toItem(s.kind, &t.data, t.id, now)
		if it.Fields == nil {
			it.Fields = map[string]string{SubredditField: s.sub}
		}
		if polled && t.id > last {
			items = append(items, it)
			s.book.add(t.data.Name, now, contentSum(it.Text, it.Links), s.opts.Recheck)
			live++
			continue
		}
		wanted := false
		for _, f := range fills {
			if f.after.after(t.id, it.PublishedAt) {
				g := it
				g.QueryUUID = f.query
				items = append(items, g)
				wanted = true
			}
		}
		if wanted {
			s.book.add(t.data.Name, now, contentSum(it.Text, it.Links), s.opts.Recheck)
		}
	}
	if err := emit(ctx, items); err != nil {
		return err
	}
	s.stats.items.Add(int64(len(items)))
	for _, f := range fills {
		s.stats.gap(f.at)
	}
	s.mu.Lock()
	elapsed := started.Sub(s.lastPollLocked(started))
	s.last, s.polled = newest, true
	s.interval = s.nextInterval(live, elapsed, reached || pages < s.opts.MaxPages)
	s.lastPoll = started
	s.mu.Unlock()
	return nil
}

// lastPollLocked is when the listing was polled before, or now.
func (s *Source) lastPollLocked(now time.Time) time.Time {
	if s.lastPoll.IsZero() {
		return now
	}
	return s.lastPoll
}

// nextInterval is the wait before the next poll: aimed at TargetFill new
// things a poll at the rate the last one saw, doubled after an empty one,
// MinInterval after an overrun.
func (s *Source) nextInterval(found int, elapsed time.Duration, complete bool) time.Duration {
	iv := s.interval
	switch {
	case !complete:
		iv = s.opts.MinInterval
	case found == 0:
		iv *= 2
	case elapsed > 0:
		rate := float64(found) / elapsed.Seconds()
		iv = time.Duration(float64(s.opts.TargetFill) / rate * float64(time.Second))
	}
	return min(max(iv, s.opts.MinInterval), s.opts.MaxInterval)
}

// polledThing is a thing read by a poll.
type polledThing struct {
	id   int64
	data thingData
}

// readBack reads the listing newest first, page after page, until a
// thing at or before stop (reached), the listing's end, or MaxPages; only
// the first page when onePage.
func (s *Source) readBack(ctx context.Context, stop mark, onePage bool) (things []polledThing, reached bool, pages int, err error) {
	after := ""
	for pages < s.opts.MaxPages {
		v := url.Values{"limit": {strconv.Itoa(pageSize)}, "raw_json": {"1"}}
		if after != "" {
			v.Set("after", after)
		}
		var doc listingDoc
		if err := s.c.get(ctx, "/r/"+s.sub+"/"+s.listing+"?"+v.Encode(), false, &doc); err != nil {
			return nil, false, pages, err
		}
		pages++
		if doc.Kind != "Listing" {
			return nil, false, pages, fmt.Errorf("%w: /r/%s/%s answered a %q", ErrMalformed, s.sub, s.listing, clip(doc.Kind))
		}
		for _, t := range doc.Data.Children {
			id, err := t.check(s.kind)
			if err != nil {
				s.stats.skip(reasonMalformed)
				s.logger.Warn("reddit thing skipped", "err", err)
				continue
			}
			if stop.reaches(id, t.Data.created()) {
				reached = true
				continue
			}
			things = append(things, polledThing{id: id, data: t.Data})
		}
		if reached || onePage || doc.Data.After == nil || *doc.Data.After == "" || len(doc.Data.Children) < pageSize {
			return things, reached, pages, nil
		}
		after = *doc.Data.After
	}
	return things, reached, pages, nil
}

func cmpID(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Parts of the source's ErrorSet.
const (
	partPoll    = "poll"
	partRecheck = "recheck"
)

// Reasons a thing read is not handed over.
const (
	reasonGone      = "gone"
	reasonMalformed = "malformed"
)

// counters are what a listing counts.
type counters struct {
	items       atomic.Int64
	overruns    atomic.Int64
	retractions atomic.Int64
	rechecked   atomic.Int64
	gapsFilled  atomic.Int64
	gapMillis   atomic.Int64

	mu      sync.Mutex
	skipped map[string]int64
}

func (c *counters) skip(reason string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.skipped == nil {
		c.skipped = map[string]int64{}
	}
	c.skipped[reason]++
}

func (c *counters) gap(at time.Time) {
	c.gapsFilled.Add(1)
	if !at.IsZero() {
		c.gapMillis.Add(time.Since(at).Milliseconds())
	}
}

// Stat names of this source's own numbers.
const (
	statOverruns    = "bw_spawn_reddit_listing_overruns_total"
	statRequests    = "bw_spawn_reddit_requests_total"
	statLimited     = "bw_spawn_reddit_rate_limited_total"
	statRetractions = "bw_spawn_reddit_retractions_total"
	statRechecked   = "bw_spawn_reddit_rechecked_total"
)

// Report publishes the listing's numbers, and the spawn's requests to
// Reddit (the same on every listing).
func (s *Source) Report() []source.Stat {
	s.stats.mu.Lock()
	skipped := maps.Clone(s.stats.skipped)
	s.stats.mu.Unlock()
	out := source.StandardStats(s.stats.items.Load(), 0, 0, skipped)
	out = append(out, source.GapStats(s.stats.gapsFilled.Load(), 0, float64(s.stats.gapMillis.Load())/1000)...)
	return append(out,
		source.Stat{Name: statOverruns, Help: "Polls of a Reddit listing that could not read back to the previous one: things were lost.", Value: float64(s.stats.overruns.Load())},
		source.Stat{Name: statRequests, Help: "Requests the spawn sent to Reddit, over every listing.", Value: float64(s.c.requests.Load())},
		source.Stat{Name: statLimited, Help: "Requests Reddit answered 429.", Value: float64(s.c.limited.Load())},
		source.Stat{Name: statRetractions, Help: "Reddit deletions, removals and edits the source told the spawn.", Value: float64(s.stats.retractions.Load())},
		source.Stat{Name: statRechecked, Help: "Things a Reddit listing re-checked through /api/info.", Value: float64(s.stats.rechecked.Load())},
	)
}
