package twitterv2

import (
	"context"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/pkg/backoff"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
)

// Parts of the source's ErrorSet.
const (
	streamPart   = "stream"
	messagesPart = "messages"
	rulesPart    = "rules"
	backfillPart = "backfill"
	queryPrefix  = "query:"
)

// otherTag counts posts that matched no rule of the current packing (a
// rule deleted while its posts were on the way).
const otherTag = ""

// Source is the spawn's one v2 stream and the app's rules.
type Source struct {
	opts      Options
	rulesURL  string
	streamURL string
	searchURL string
	rest      *http.Client // rules and search requests
	stream    *http.Client // the stream
	logger    *slog.Logger
	changed   chan struct{}
	// sleep waits between attempts, searchSleep between searches; tests
	// replace them to see the delays.
	sleep       func(ctx context.Context, d time.Duration) bool
	searchSleep func(ctx context.Context, d time.Duration) bool

	errs  source.ErrorSet
	stats counters

	// seen are the post ids handed over, by the stream and the gaps'
	// fills alike.
	seenMu sync.Mutex
	seen   recentIDs

	// gaps are the gaps to fill from recent search (backfill.go);
	// gapWake wakes the goroutine that fills them.
	gaps        *gapBook
	gapWake     chan struct{}
	searchLimit searchLimit
	// streamRemaining is x-rate-limit-remaining of the last stream
	// answer, -1 before one.
	streamRemaining atomic.Int64

	lastRule time.Time // when the last rules request was sent; the rules goroutine's

	mu    sync.Mutex
	want  map[string]wanted // query uuid → its rule
	rules map[string]*ruleCounters
	// held are the rules X holds for the queries, as the last reconcile
	// left them; members maps each rule's tag to its rule texts.
	held    []packedRule
	members map[string][]string
}

// ruleCounters are the cost counters of one rule, by tag.
type ruleCounters struct {
	queries       int
	read, emitted uint64
}

// counters are the source's totals.
type counters struct {
	attempts, connects                     atomic.Uint64
	networkErrors, httpErrors, rateLimited atomic.Uint64
	tooManyConnections, stalls             atomic.Uint64
	keepAlives, malformed, oversized       atomic.Uint64
	notices                                atomic.Uint64
	duplicates, read, emitted              atomic.Uint64
	rulesRequests, reconciles              atomic.Uint64
	shortRetries                           atomic.Uint64
	searches, searchRateLimited            atomic.Uint64
	gapsFilled, gapPosts                   atomic.Uint64
	gapMillis                              atomic.Uint64
}

func newSource(opts Options, rulesURL, streamURL, searchURL string) *Source {
	rest := *opts.Client
	rest.Timeout = opts.RequestTimeout
	stream := *opts.Client
	stream.Timeout = 0
	s := &Source{
		opts:        opts,
		rulesURL:    rulesURL,
		streamURL:   streamURL,
		searchURL:   searchURL,
		rest:        &rest,
		stream:      &stream,
		logger:      opts.Logger.With("source", "twitter", "api", "v2"),
		changed:     make(chan struct{}, 1),
		sleep:       backoff.Sleep,
		searchSleep: backoff.Sleep,
		seen:        newRecentIDs(opts.SeenLimit),
		want:        map[string]wanted{},
		rules:       map[string]*ruleCounters{},
		members:     map[string][]string{},
		gaps:        newGapBook(),
		gapWake:     make(chan struct{}, 1),
	}
	s.searchLimit.remaining = -1
	s.streamRemaining.Store(-1)
	return s
}

// SetSubscribers records the distinct queries of the spawn's twitter
// subscribers; Run reconciles the app's rules to them. It never blocks.
//
// A subscriber that arrives with a cursor ran elsewhere until now: the
// posts of its query since its cursor are searched for once the stream
// and its rule are live.
func (s *Source) SetSubscribers(subs []source.Sub) {
	want := make(map[string]wanted, len(subs))
	texts := make(map[int64]string, len(subs))
	wantedTexts := make(map[string]bool, len(subs))
	for _, sub := range subs {
		w := compile(sub, s.opts.MaxRuleLength)
		if _, dup := want[w.uuid]; !dup {
			want[w.uuid] = w
		}
		if w.err == nil {
			texts[sub.Spec.CrawlerID] = w.rule
			wantedTexts[w.rule] = true
		}
	}
	s.gaps.forget(wantedTexts)
	if s.gaps.subscribers(source.Specs(subs), texts) {
		source.Signal(s.gapWake)
	}
	s.mu.Lock()
	same := maps.EqualFunc(want, s.want, func(a, b wanted) bool { return a.rule == b.rule && (a.err == nil) == (b.err == nil) })
	s.want = want
	s.mu.Unlock()
	if !same {
		source.Signal(s.changed)
	}
}

// Err joins the current errors: the stream's, the rules', and every
// query's.
func (s *Source) Err() error { return s.errs.Err() }

// ErrFor joins the errors of the stream and the rules with those of spec's
// own query, leaving out the other queries'.
func (s *Source) ErrFor(spec api.SubscriberSpec) error {
	uuid := spec.QueryUUID
	return s.errs.ErrOf(func(part string) bool {
		return part == streamPart || part == messagesPart || part == rulesPart || part == queryPrefix+uuid
	})
}

// setErr records a part's error. Reconnects, rate limits and bad messages
// pass (source.Degraded); a refused token, a connection held elsewhere and
// a query that has no rule do not.
func (s *Source) setErr(part string, err error) {
	if !strings.HasPrefix(part, queryPrefix) {
		err = source.DegradedUnless(err, ErrUnauthorized, ErrTooManyConnections, ErrRuleCap)
	}
	s.errs.Set(part, err)
}

// Run keeps the rules reconciled and the stream open until ctx ends.
func (s *Source) Run(ctx context.Context, emit source.Emit) {
	var wg sync.WaitGroup
	wg.Go(func() { s.runRules(ctx) })
	wg.Go(func() { s.runStream(ctx, emit) })
	wg.Go(func() { s.runBackfill(ctx, emit) })
	wg.Wait()
}

// RuleStats are the cost counters of one rule.
type RuleStats struct {
	// Tag names the rule; "" gathers posts of rules no longer held.
	Tag string
	// Queries is how many subscriber queries the rule carries.
	Queries int
	// Read counts the posts X delivered for the rule (what it bills);
	// Emitted those of them handed to the spawn.
	Read, Emitted uint64
}

// Stats are the source's counters, for the spawn's metrics.
type Stats struct {
	Attempts, Connects              uint64
	NetworkErrors, HTTPErrors       uint64
	RateLimited, TooManyConnections uint64
	Stalls, KeepAlives              uint64
	Malformed, Oversized            uint64
	// Notices counts the error documents X sent inside the stream (an
	// operational disconnect).
	Notices uint64
	// Duplicates counts posts delivered again and not emitted twice.
	Duplicates uint64
	// Read counts posts delivered, Emitted those handed to the spawn.
	Read, Emitted uint64
	// RulesRequests counts requests to the rules endpoint, Reconciles
	// completed reconciles.
	RulesRequests, Reconciles uint64
	// ShortRetries counts the TooManyConnections retried on the short
	// schedule.
	ShortRetries uint64
	// Searches counts recent search requests, SearchRateLimited those X
	// answered 429; GapsFilled the gaps filled, GapPosts the posts they
	// found that the stream had not delivered, GapSeconds the gaps'
	// length.
	Searches, SearchRateLimited uint64
	GapsFilled, GapPosts        uint64
	GapSeconds                  float64
	// Rules has one entry per rule held, sorted by tag.
	Rules []RuleStats
}

// Stats returns the current counters.
func (s *Source) Stats() Stats {
	c := &s.stats
	st := Stats{
		Attempts: c.attempts.Load(), Connects: c.connects.Load(),
		NetworkErrors: c.networkErrors.Load(), HTTPErrors: c.httpErrors.Load(),
		RateLimited: c.rateLimited.Load(), TooManyConnections: c.tooManyConnections.Load(),
		Stalls: c.stalls.Load(), KeepAlives: c.keepAlives.Load(),
		Malformed: c.malformed.Load(), Oversized: c.oversized.Load(), Notices: c.notices.Load(),
		Duplicates: c.duplicates.Load(), Read: c.read.Load(), Emitted: c.emitted.Load(),
		RulesRequests: c.rulesRequests.Load(), Reconciles: c.reconciles.Load(),
		ShortRetries: c.shortRetries.Load(), Searches: c.searches.Load(), SearchRateLimited: c.searchRateLimited.Load(),
		GapsFilled: c.gapsFilled.Load(), GapPosts: c.gapPosts.Load(), GapSeconds: float64(c.gapMillis.Load()) / 1000,
	}
	s.mu.Lock()
	for tag, rc := range s.rules {
		st.Rules = append(st.Rules, RuleStats{Tag: tag, Queries: rc.queries, Read: rc.read, Emitted: rc.emitted})
	}
	s.mu.Unlock()
	slices.SortFunc(st.Rules, func(a, b RuleStats) int { return strings.Compare(a.Tag, b.Tag) })
	return st
}

// addGapSeconds adds the length of a gap filled.
func (s *Source) addGapSeconds(sec float64) {
	if sec > 0 {
		s.stats.gapMillis.Add(uint64(sec * 1000))
	}
}

// markSeen records a post id handed over and reports whether it was new.
func (s *Source) markSeen(id string) bool {
	s.seenMu.Lock()
	defer s.seenMu.Unlock()
	return s.seen.add(id)
}

// textsOf lists the rule texts of the rules tagged tags.
func (s *Source) textsOf(tags []string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, t := range tags {
		out = append(out, s.members[t]...)
	}
	return out
}

// heldTexts lists the rule texts of every rule X holds.
func (s *Source) heldTexts() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, r := range s.held {
		out = append(out, r.Members...)
	}
	return out
}

// countRead records a delivered post against the rules it matched and
// reports the tags it was counted under.
func (s *Source) countRead(tags []string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	counted := make([]string, 0, len(tags))
	for _, t := range tags {
		if _, ok := s.rules[t]; !ok {
			t = otherTag
		}
		if slices.Contains(counted, t) {
			continue
		}
		rc := s.rules[t]
		if rc == nil {
			rc = &ruleCounters{}
			s.rules[t] = rc
		}
		rc.read++
		counted = append(counted, t)
	}
	return counted
}

func (s *Source) countEmitted(tags []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range tags {
		if rc := s.rules[t]; rc != nil {
			rc.emitted++
		}
	}
}

// setRules replaces the rules counted by tag with those of a reconcile,
// keeping the counters of the rules that stay.
func (s *Source) setRules(rules []packedRule, members map[string][]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	next := make(map[string]*ruleCounters, len(rules)+1)
	for _, r := range rules {
		rc := s.rules[r.Tag]
		if rc == nil {
			rc = &ruleCounters{}
		}
		rc.queries = 0
		for _, m := range r.Members {
			rc.queries += len(members[m])
		}
		next[r.Tag] = rc
	}
	if rc := s.rules[otherTag]; rc != nil {
		next[otherTag] = rc
	}
	s.rules = next
	s.held = slices.Clone(rules)
	s.members = make(map[string][]string, len(rules))
	for _, r := range rules {
		s.members[r.Tag] = r.Members
	}
}

// recentIDs remembers the last n post ids in a ring.
type recentIDs struct {
	ids  map[string]bool
	ring []string
	next int
}

func newRecentIDs(n int) recentIDs {
	return recentIDs{ids: make(map[string]bool, n), ring: make([]string, n)}
}

// add records id and reports whether it was new.
func (r *recentIDs) add(id string) bool {
	if r.ids[id] {
		return false
	}
	if old := r.ring[r.next]; old != "" {
		delete(r.ids, old)
	}
	r.ring[r.next] = id
	r.ids[id] = true
	r.next = (r.next + 1) % len(r.ring)
	return true
}

// Report gives the stream's counters to the spawn's metrics, with what X
// bills per rule: every post read is paid for, whether or not a crawler
// stores it.
func (s *Source) Report() []source.Stat {
	st := s.Stats()
	out := source.StandardStats(int64(st.Emitted), int64(st.Connects)-min(int64(st.Connects), 1), int64(st.Stalls), map[string]int64{
		"malformed": int64(st.Malformed), "too_large": int64(st.Oversized), "duplicate": int64(st.Duplicates),
	})
	out = append(out, source.GapStats(int64(st.GapsFilled), int64(st.GapPosts), st.GapSeconds)...)
	out = append(out,
		source.Stat{Name: "bw_spawn_xv2_searches_total", Help: "Recent search requests made to fill gaps.", Value: float64(st.Searches)},
		source.Stat{Name: "bw_spawn_xv2_short_retries_total", Help: "TooManyConnections answers retried on the short schedule of a handover.", Value: float64(st.ShortRetries)},
		source.Stat{Name: "bw_spawn_xv2_posts_read_total", Help: "Posts X API v2 delivered (and bills).", Value: float64(st.Read)},
		source.Stat{Name: "bw_spawn_xv2_rate_limited_total", Help: "Stream attempts X refused with 429 or TooManyConnections.", Value: float64(st.RateLimited + st.TooManyConnections)},
		source.Stat{Name: "bw_spawn_xv2_stream_errors_total", Help: "Error documents X sent inside the stream (operational disconnects).", Value: float64(st.Notices)},
	)
	for _, r := range st.Rules {
		labels := map[string]string{"rule": r.Tag}
		out = append(out,
			source.Stat{Name: "bw_spawn_xv2_rule_posts_read_total", Help: "Posts X delivered per rule (billed).", Labels: labels, Value: float64(r.Read)},
			source.Stat{Name: "bw_spawn_xv2_rule_posts_emitted_total", Help: "Posts handed to the spawn per rule.", Labels: labels, Value: float64(r.Emitted)},
		)
	}
	return out
}
