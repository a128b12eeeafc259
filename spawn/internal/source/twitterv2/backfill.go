package twitterv2

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source/internal/linestream"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source/internal/xtext"
)

// Gaps. The filtered stream does not replay: a post published while the
// stream is down (a reconnect, the stream handed to another spawn, a
// crawler moved here from a spawn that died) is never delivered. Each such
// gap is filled from recent search, GET /2/tweets/search/recent, which
// holds the last seven days:
//
//   - What a gap is kept per rule text (one query's rule; equal queries
//     share it): the id of the last post the source knows for it. A post
//     the stream delivers moves it forward for every query of the rules
//     it matched. When the stream breaks, every rule text held gets a gap
//     from there, or, for one that has seen no post, from when the stream
//     last carried anything. A subscriber that arrives with a cursor (it
//     ran on another spawn) opens a gap for its rule text from the newest
//     post its crawler stored there (api.Cursor.Sources), else from the
//     published time of its newest comment.
//   - A gap is filled once the stream is back and X holds the rule text's
//     rule, so search covers up to a moment the stream already covers:
//     nothing falls between them. The search of a packed rule asks for
//     those of its queries with a gap, OR-ed as in the rule (the rule's
//     value when all of them have one), cut into several searches when
//     longer than MaxSearchQueryLength, since_id the oldest of their gaps.
//     Post ids are snowflakes (the post's time in their high bits), so a
//     time is an id too: every search is since_id.
//   - Pages (max_results 100, next_token) are read to the end, up to
//     MaxBackfillPages; the posts found are rendered as the stream's are
//     (same fields and expansions, reposts whole, t.co links expanded),
//     handed over oldest first, and de-duplicated against the stream by
//     the same memory of post ids; the spawn's store drops a post a
//     crawler already holds. Each post is stored exactly once.
//   - Search is rate limited (450 requests per 15 minutes per app): the
//     source reads x-rate-limit-remaining and -reset from every answer and
//     waits for the reset when none remain or X answers 429.

// searchPath is recent search.
const searchPath = "/2/tweets/search/recent"

// Defaults of the gap filling.
const (
	// DefaultMaxSearchQueryLength is the longest query recent search
	// takes (self-serve access; 4096 for enterprise).
	DefaultMaxSearchQueryLength = 512
	// DefaultMaxBackfillPages bounds the pages of 100 posts one search of
	// a gap reads; the newest are kept when a gap holds more.
	DefaultMaxBackfillPages = 50
	// searchPageSize is max_results (X's maximum).
	searchPageSize = 100
	// searchWindow is how far back recent search reaches; a gap older
	// than that is filled from its start, less searchWindowMargin.
	searchWindow       = 7 * 24 * time.Hour
	searchWindowMargin = time.Minute
	// gapLatency is how much earlier than the last moment the stream was
	// known alive a gap starts: posts published just before it may still
	// have been on their way.
	gapLatency = 5 * time.Second
	// cursorMargin is how much earlier than a cursor's published time a
	// gap opened from it starts: X's created_at has whole seconds.
	cursorMargin = time.Second
	// maxBackfillAttempts bounds the tries of one search page after
	// errors other than rate limits.
	maxBackfillAttempts = 5
	// maxSearchBodyBytes caps one search answer (100 posts with their
	// expansions).
	maxSearchBodyBytes = 16 << 20
)

// Snowflake ids: a post id holds its creation time in milliseconds since
// X's epoch, shifted left 22 bits.
const (
	snowflakeEpochMillis = 1288834974657
	snowflakeTimeShift   = 22
)

// idAt is the smallest post id X can give a post created at t.
func idAt(t time.Time) uint64 {
	ms := t.UnixMilli() - snowflakeEpochMillis
	if ms <= 0 {
		return 0
	}
	return uint64(ms) << snowflakeTimeShift
}

// timeOf is the creation time a post id carries.
func timeOf(id uint64) time.Time {
	return time.UnixMilli(int64(id>>snowflakeTimeShift) + snowflakeEpochMillis)
}

func parseID(s string) (uint64, bool) {
	if !numericID(s) {
		return 0, false
	}
	n, err := strconv.ParseUint(s, 10, 63)
	return n, err == nil
}

// gapBook is what the source knows of its gaps, per rule text. Guarded by
// its mutex; SetSubscribers, the stream and the backfill use it.
type gapBook struct {
	mu sync.Mutex
	// last is the newest post id known for each rule text.
	last map[string]uint64
	// pending are the gaps to fill: each rule text's since_id.
	pending map[string]uint64
	// cursors are the crawlers whose cursor has opened its gap.
	cursors map[int64]bool
	// live is set while the stream is connected.
	live bool
	// aliveAt is when the connected stream last carried anything.
	aliveAt time.Time
}

func newGapBook() *gapBook {
	return &gapBook{last: map[string]uint64{}, pending: map[string]uint64{}, cursors: map[int64]bool{}}
}

// openLocked records a gap of text from since, merging it with one
// pending.
func (g *gapBook) openLocked(text string, since uint64) {
	if cur, ok := g.pending[text]; !ok || since < cur {
		g.pending[text] = since
	}
}

// subscribers opens a gap for each subscriber that arrives with a cursor
// and forgets the crawlers gone; texts maps crawler ids to rule texts.
func (g *gapBook) subscribers(specs []api.SubscriberSpec, texts map[int64]string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	opened := false
	here := make(map[int64]bool, len(specs))
	for _, spec := range specs {
		here[spec.CrawlerID] = true
		text := texts[spec.CrawlerID]
		if spec.Cursor == nil || text == "" || g.cursors[spec.CrawlerID] {
			continue
		}
		g.cursors[spec.CrawlerID] = true
		since, ok := cursorSince(spec.Cursor)
		if !ok {
			continue
		}
		g.openLocked(text, since)
		opened = true
	}
	maps.DeleteFunc(g.cursors, func(id int64, _ bool) bool { return !here[id] })
	return opened
}

// cursorSince is the since_id of a gap opened from a crawler's cursor:
// the newest post it stored, else its newest comment's time.
func cursorSince(c *api.Cursor) (uint64, bool) {
	if id, ok := parseID(c.Sources[Key]); ok {
		return id, true
	}
	if c.PublishedAt.IsZero() {
		return 0, false
	}
	return idAt(c.PublishedAt.Add(-cursorMargin)), true
}

// saw moves the newest post known for texts forward to id.
func (g *gapBook) saw(texts []string, id uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, t := range texts {
		g.last[t] = max(g.last[t], id)
	}
}

// connected marks the stream live.
func (g *gapBook) connected(now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.live, g.aliveAt = true, now
}

// alive records that the live stream carried something at now.
func (g *gapBook) alive(now time.Time) {
	g.mu.Lock()
	g.aliveAt = now
	g.mu.Unlock()
}

// broke marks the stream down and opens a gap for every rule text held:
// from its newest post, or from shortly before the stream last carried
// anything.
func (g *gapBook) broke(held []string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.live {
		return
	}
	g.live = false
	from := idAt(g.aliveAt.Add(-gapLatency))
	for _, t := range held {
		since := from
		if id, ok := g.last[t]; ok {
			since = id
		}
		g.openLocked(t, since)
	}
}

// forget drops the gaps and marks of rule texts no longer wanted.
func (g *gapBook) forget(wanted map[string]bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	maps.DeleteFunc(g.pending, func(t string, _ uint64) bool { return !wanted[t] })
	maps.DeleteFunc(g.last, func(t string, _ uint64) bool { return !wanted[t] })
}

// search is one search a fill runs: a query of one or more rule texts and
// the since_id of the oldest of their gaps.
type search struct {
	query string
	texts []string
	since uint64
}

// due lists the searches that fill the pending gaps of rule texts X holds
// a rule for, while the stream is live. Texts whose rule is longer than
// maxLen cannot be searched: their gaps are dropped and returned.
func (g *gapBook) due(rules []packedRule, maxLen int) ([]search, []string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.live || len(g.pending) == 0 {
		return nil, nil
	}
	var out []search
	var unsearchable []string
	for _, r := range rules {
		var texts []string
		for _, m := range r.Members {
			if _, ok := g.pending[m]; ok {
				texts = append(texts, m)
			}
		}
		if len(texts) == 0 {
			continue
		}
		slices.Sort(texts)
		var chunk []string
		flush := func() {
			if len(chunk) == 0 {
				return
			}
			s := search{query: valueOf(chunk), texts: chunk}
			s.since = g.pending[chunk[0]]
			for _, t := range chunk {
				s.since = min(s.since, g.pending[t])
			}
			out = append(out, s)
			chunk = nil
		}
		for _, t := range texts {
			if ruleLen(t) > maxLen {
				unsearchable = append(unsearchable, t)
				delete(g.pending, t)
				continue
			}
			if ruleLen(valueOf(append(slices.Clone(chunk), t))) > maxLen {
				flush()
			}
			chunk = append(chunk, t)
		}
		flush()
	}
	return out, unsearchable
}

// filled closes the gaps a search filled, unless one was opened again
// from an earlier post meanwhile, and moves their newest post forward.
func (g *gapBook) filled(s search, newest uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, t := range s.texts {
		if cur, ok := g.pending[t]; ok && cur >= s.since {
			delete(g.pending, t)
		}
		g.last[t] = max(g.last[t], newest)
	}
}

// searchLimit tracks recent search's rate limit from the answers'
// headers.
type searchLimit struct {
	mu        sync.Mutex
	remaining int // -1: unknown
	reset     time.Time
}

// wait returns how long to wait before the next request: until the reset
// when no request remains.
func (l *searchLimit) wait(now time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.remaining == 0 && now.Before(l.reset) {
		return l.reset.Sub(now)
	}
	return 0
}

// observe takes the rate-limit headers of an answer; exhausted marks the
// window spent (a 429), reset then defaulting to fallback from now.
func (l *searchLimit) observe(h http.Header, exhausted bool, now time.Time, fallback time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n, err := strconv.Atoi(h.Get("x-rate-limit-remaining")); err == nil {
		l.remaining = n
	}
	if r, err := strconv.ParseInt(h.Get("x-rate-limit-reset"), 10, 64); err == nil {
		l.reset = time.Unix(r, 0)
	}
	if exhausted {
		l.remaining = 0
		if !l.reset.After(now) {
			l.reset = now.Add(fallback)
		}
	}
}

// wireSearch is an answer of recent search.
type wireSearch struct {
	Data     []wireTweet `json:"data"`
	Includes struct {
		Users  []wireUser  `json:"users"`
		Tweets []wireTweet `json:"tweets"`
	} `json:"includes"`
	Meta struct {
		NewestID    string `json:"newest_id"`
		OldestID    string `json:"oldest_id"`
		ResultCount int    `json:"result_count"`
		NextToken   string `json:"next_token"`
	} `json:"meta"`
	Errors []wireProblem `json:"errors"`
}

// decodeSearch turns a search answer into items, as the stream's posts
// are; a post that cannot be an item is skipped and counted in bad.
func decodeSearch(body []byte, now time.Time) (items []source.Item, next string, bad int, err error) {
	var w wireSearch
	if err := json.Unmarshal(body, &w); err != nil {
		return nil, "", 0, fmt.Errorf("%w: a search answer is not JSON: %v", ErrMalformed, err)
	}
	for i := range w.Data {
		msg := wireMessage{Data: &w.Data[i]}
		msg.Includes.Users, msg.Includes.Tweets = w.Includes.Users, w.Includes.Tweets
		it, err := postItem(msg, now)
		if err != nil {
			bad++
			continue
		}
		items = append(items, it)
	}
	return items, w.Meta.NextToken, bad, nil
}

// errSearchFailed marks a search request that got no usable answer, to be
// retried.
var errSearchFailed = errors.New("twitter: recent search failed")

// runBackfill fills gaps whenever some are due, until ctx ends.
func (s *Source) runBackfill(ctx context.Context, emit source.Emit) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.gapWake:
		}
		for {
			s.mu.Lock()
			rules := slices.Clone(s.held)
			s.mu.Unlock()
			due, unsearchable := s.gaps.due(rules, s.opts.MaxSearchQueryLength)
			if len(unsearchable) > 0 {
				s.setErr(backfillPart, fmt.Errorf("twitter: %d queries have rules longer than the %d characters recent search takes: their gaps cannot be filled", len(unsearchable), s.opts.MaxSearchQueryLength))
			}
			if len(due) == 0 {
				break
			}
			for _, q := range due {
				if err := s.fill(ctx, q, emit); err != nil {
					if ctx.Err() != nil {
						return
					}
					s.setErr(backfillPart, err)
					s.logger.Error("twitter gap not filled", "err", err, "since_id", q.since, "queries", len(q.texts))
					s.gaps.filled(q, 0) // given up: not retried forever
				}
			}
		}
	}
}

// fill runs one search of a gap to its last page and hands over what the
// stream did not deliver.
func (s *Source) fill(ctx context.Context, q search, emit source.Emit) error {
	started := time.Now()
	since := q.since
	if floor := idAt(started.Add(-searchWindow + searchWindowMargin)); since < floor {
		s.logger.Warn("twitter gap older than recent search reaches: filled from seven days ago", "since_id", since)
		since = floor
	}
	var found []source.Item
	token := ""
	complete := false
	for range s.opts.MaxBackfillPages {
		items, next, err := s.searchPage(ctx, q.query, since, token)
		if err != nil {
			return err
		}
		found = append(found, items...)
		if token = next; token == "" {
			complete = true
			break
		}
	}
	slices.SortFunc(found, func(a, b source.Item) int { return cmp.Compare(itemID(a), itemID(b)) })
	var newest uint64
	fresh := found[:0]
	for _, it := range found {
		newest = max(newest, itemID(it))
		if s.markSeen(it.ID) {
			fresh = append(fresh, it)
		}
	}
	if len(fresh) > 0 {
		if err := emit(ctx, fresh); err != nil {
			return fmt.Errorf("twitter: unable to hand over the posts of a gap: %w", err)
		}
	}
	s.gaps.filled(q, newest)
	gap := time.Since(timeOf(q.since)).Seconds()
	s.stats.gapsFilled.Add(1)
	s.stats.gapPosts.Add(uint64(len(fresh)))
	s.stats.duplicates.Add(uint64(len(found) - len(fresh)))
	s.addGapSeconds(gap)
	if !complete {
		err := fmt.Errorf("twitter: a gap held more than %d pages of posts: the newest were kept", s.opts.MaxBackfillPages)
		s.setErr(backfillPart, err)
		s.logger.Warn("twitter gap filled in part", "err", err)
	} else {
		s.setErr(backfillPart, nil)
	}
	s.logger.Info("twitter gap filled", "since_id", q.since, "gap", time.Duration(gap*float64(time.Second)).Round(time.Millisecond),
		"queries", len(q.texts), "found", len(found), "new", len(fresh), "took", time.Since(started).Round(time.Millisecond))
	return nil
}

// itemID is an item's post id as a number.
func itemID(it source.Item) uint64 {
	n, _ := parseID(strings.TrimPrefix(it.ID, xtext.IDPrefix))
	return n
}

// searchPage reads one page of a search, waiting out rate limits and
// retrying other failures with the back-off of their class.
func (s *Source) searchPage(ctx context.Context, query string, since uint64, token string) ([]source.Item, string, error) {
	v := url.Values{"query": {query}, "since_id": {strconv.FormatUint(since, 10)}, "max_results": {strconv.Itoa(searchPageSize)}}
	for k, vs := range streamParams {
		v[k] = vs
	}
	if token != "" {
		v.Set("next_token", token)
	}
	fails := newBackoff(s.opts)
	for attempt := 1; ; {
		if w := s.searchLimit.wait(time.Now()); w > 0 {
			s.logger.Info("twitter search rate limit spent: waiting for its reset", "wait", w.Round(time.Second))
			if !s.searchSleep(ctx, w) {
				return nil, "", ctx.Err()
			}
		}
		items, next, class, err := s.searchOnce(ctx, v)
		if err == nil {
			return items, next, nil
		}
		if ctx.Err() != nil {
			return nil, "", ctx.Err()
		}
		if class == linestream.ClassRateLimit {
			continue // the limit's reset is known: wait for it above
		}
		if errors.Is(err, ErrUnauthorized) || attempt >= maxBackfillAttempts {
			return nil, "", err
		}
		attempt++
		wait := fails.Next(class)
		s.logger.Warn("twitter search failed", "err", err, "retry_in", wait)
		if !s.searchSleep(ctx, wait) {
			return nil, "", ctx.Err()
		}
	}
}

// searchOnce sends one search request.
func (s *Source) searchOnce(ctx context.Context, v url.Values) ([]source.Item, string, linestream.Class, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.searchURL+"?"+v.Encode(), nil)
	if err != nil {
		return nil, "", linestream.ClassHTTP, fmt.Errorf("twitter: unable to build a search request: %w", err)
	}
	s.authorize(req)
	s.stats.searches.Add(1)
	resp, err := s.rest.Do(req)
	if err != nil {
		return nil, "", linestream.ClassNetwork, fmt.Errorf("%w: %w", errSearchFailed, err)
	}
	defer resp.Body.Close()
	now := time.Now()
	limited := resp.StatusCode == http.StatusTooManyRequests
	s.searchLimit.observe(resp.Header, limited, now, s.opts.RateLimitBackoffMin)
	switch {
	case limited:
		s.stats.searchRateLimited.Add(1)
		return nil, "", linestream.ClassRateLimit, fmt.Errorf("%w: search answered 429", ErrRateLimited)
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return nil, "", linestream.ClassHTTP, fmt.Errorf("%w: search answered %d; check --twitter-bearer-token", ErrUnauthorized, resp.StatusCode)
	case resp.StatusCode != http.StatusOK:
		p := readProblem(resp)
		return nil, "", linestream.ClassHTTP, fmt.Errorf("%w: %w: search answered %d: %s", errSearchFailed, ErrStatus, resp.StatusCode, clip(firstOf(p.Detail, p.Title)))
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxSearchBodyBytes+1))
	if err != nil {
		return nil, "", linestream.ClassNetwork, fmt.Errorf("%w: reading the answer: %w", errSearchFailed, err)
	}
	if len(body) > maxSearchBodyBytes {
		return nil, "", linestream.ClassHTTP, fmt.Errorf("%w: an answer is over %d bytes", errSearchFailed, maxSearchBodyBytes)
	}
	items, next, bad, err := decodeSearch(body, now)
	if err != nil {
		return nil, "", linestream.ClassHTTP, err
	}
	if bad > 0 {
		s.stats.malformed.Add(uint64(bad))
	}
	return items, next, linestream.ClassNone, nil
}
