// Package rss is the RSS and Atom data source: one poller per feed URL on a
// node, shared by every subscriber that reads the feed. A poller fetches its
// feed through the guarded crawl client (size- and time-capped, private
// addresses refused), asks only for what changed (ETag and Last-Modified),
// and hands each item to the spawn once, oldest first, with an id that stays
// the same across fetches and nodes.
package rss

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/mmcdole/gofeed"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/pkg/query"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/netguard"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
)

// Defaults of Options.
const (
	// DefaultInterval is how often a healthy feed is fetched.
	DefaultInterval = 30 * time.Second
	// DefaultMaxBackoff caps the wait between fetches of a failing feed;
	// the wait doubles from Interval with every failure in a row.
	DefaultMaxBackoff = 10 * time.Minute
	// DefaultFetchTimeout bounds one fetch: connect, headers and body.
	DefaultFetchTimeout = 30 * time.Second
	// DefaultMaxBodyBytes caps a feed document; a larger one is an error.
	DefaultMaxBodyBytes = 10 << 20
	// DefaultSeenLimit is how many item ids a poller remembers to emit
	// each item once. It grows to twice the feed's length when a feed is
	// longer, so a long feed is never emitted twice.
	DefaultSeenLimit = 10000
	// DefaultUserAgent names the crawler to feed publishers.
	DefaultUserAgent = "BlackWidow-Spawn/1.0 (+https://github.com/blackwidow-crawl/blackwidow)"
)

const (
	// KeyPrefix starts every rss data source key; the rest is the
	// canonical feed URL.
	KeyPrefix = "rss:"
	// intervalJitter spreads the fetches of feeds started together: each
	// wait is lengthened by up to this fraction.
	intervalJitter = 0.1
	// maxTextBytes caps the text of one item, so one huge post cannot
	// bloat the store.
	maxTextBytes = 32 << 10
	// drainBytes is how much of an unread body is drained so the
	// connection can be reused.
	drainBytes = 64 << 10
	// acceptHeader prefers feed formats.
	acceptHeader = "application/rss+xml, application/atom+xml, application/feed+json, application/xml;q=0.9, text/xml;q=0.9, */*;q=0.5"
)

// Errors a poller reports through Err, checked with errors.Is.
var (
	// ErrTooLarge means the feed document exceeded Options.MaxBodyBytes.
	ErrTooLarge = errors.New("rss: feed document too large")
	// ErrStatus means the feed answered with an HTTP status that carries
	// no feed.
	ErrStatus = errors.New("rss: unexpected HTTP status")
)

// Options configure the rss source kind. Zero fields take the defaults.
type Options struct {
	// Client fetches feeds. nil means a netguard client with no allowed
	// private ranges, never http.DefaultClient: crawl targets are
	// untrusted.
	Client *http.Client
	// Interval between fetches of a healthy feed.
	Interval time.Duration
	// MaxBackoff caps the wait after failures (at least Interval).
	MaxBackoff time.Duration
	// FetchTimeout bounds one fetch.
	FetchTimeout time.Duration
	// MaxBodyBytes caps a feed document.
	MaxBodyBytes int64
	// SeenLimit bounds the ids remembered per feed.
	SeenLimit int
	// UserAgent is sent with every fetch.
	UserAgent string
	// Logger receives a line when a feed starts failing and when it
	// recovers; nil discards.
	Logger *slog.Logger
}

func (o Options) withDefaults() Options {
	if o.Client == nil {
		o.Client = netguard.NewClient(netguard.Options{})
	}
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = DefaultMaxBackoff
	}
	if o.MaxBackoff < o.Interval {
		o.MaxBackoff = o.Interval
	}
	if o.FetchTimeout <= 0 {
		o.FetchTimeout = DefaultFetchTimeout
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.SeenLimit <= 0 {
		o.SeenLimit = DefaultSeenLimit
	}
	if o.UserAgent == "" {
		o.UserAgent = DefaultUserAgent
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// Kind builds rss data sources: one per feed URL.
type Kind struct {
	opts Options
}

var _ source.Kind = (*Kind)(nil)

// New returns the rss source kind.
func New(opts Options) *Kind {
	return &Kind{opts: opts.withDefaults()}
}

// Keys returns one key per feed URL of the subscriber's query, so crawlers
// reading the same feed share one poller even when their other feeds differ.
// URLs are canonicalised first: "HTTP://Example.com:80/a" and
// "http://example.com/a" are one feed.
func (k *Kind) Keys(spec api.SubscriberSpec) ([]string, error) {
	urls, err := query.Canonical(api.SourceRSS, spec.Query)
	if err != nil {
		return nil, fmt.Errorf("rss: crawler %d: %w", spec.CrawlerID, err)
	}
	keys := make([]string, len(urls))
	for i, u := range urls {
		keys[i] = KeyPrefix + u
	}
	return keys, nil
}

// New returns the poller of the feed a key names.
func (k *Kind) New(key string) (source.DataSource, error) {
	raw, ok := strings.CutPrefix(key, KeyPrefix)
	if !ok {
		return nil, fmt.Errorf("rss: data source key %q does not start with %q", key, KeyPrefix)
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("rss: data source key %q does not hold an http(s) feed URL", key)
	}
	return newFeed(u, k.opts), nil
}

// entry is what a poller remembers about one item id.
type entry struct {
	firstSeen time.Time
	emitted   bool
	lastPoll  uint64 // the poll that last saw the item in the feed
}

// feed polls one feed URL. Everything but mu's fields belongs to the
// goroutine running Run.
type feed struct {
	url    string
	base   *url.URL
	opts   Options
	logger *slog.Logger
	replay chan struct{}

	mu   sync.Mutex
	err  error
	subs map[[2]int64]bool // (crawler id, spec version) pairs using the source

	etag, lastModified string
	known              map[string]*entry
	polls              uint64
	current            []source.Item // the feed's items at the last fetch, oldest first
}

func newFeed(u *url.URL, opts Options) *feed {
	return &feed{
		url:    u.String(),
		base:   u,
		opts:   opts,
		logger: opts.Logger.With("feed", u.String()),
		replay: make(chan struct{}, 1),
		known:  map[string]*entry{},
	}
}

// Err is the latest fetch's error, nil after a successful fetch.
func (f *feed) Err() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

func (f *feed) setErr(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.err = err
}

// SetSubscribers notices subscribers that are new to the poller (or whose
// spec changed) and hands them the feed's current items again: items
// emitted before they joined would otherwise never reach them, and a
// crawler would see a different feed depending on whether its data source
// happened to be shared. Subscribers that already have an item recognise it
// by its id.
func (f *feed) SetSubscribers(specs []api.SubscriberSpec) {
	next := make(map[[2]int64]bool, len(specs))
	added := false
	f.mu.Lock()
	for _, s := range specs {
		k := [2]int64{s.CrawlerID, s.Version}
		next[k] = true
		if !f.subs[k] {
			added = true
		}
	}
	f.subs = next
	f.mu.Unlock()
	if added {
		select {
		case f.replay <- struct{}{}:
		default: // a replay is already pending
		}
	}
}

// Run polls the feed until ctx ends: right away, then every Interval while
// fetches succeed, and with capped, jittered exponential backoff while they
// fail.
func (f *feed) Run(ctx context.Context, emit source.Emit) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	failures := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-f.replay:
			if len(f.current) > 0 {
				// Failure here is not the feed's: the spawn is stopping
				// the source or its store is gone. The next new item
				// is handed over normally.
				_ = emit(ctx, slices.Clone(f.current))
			}
			continue
		case <-timer.C:
		}
		retryAfter, err := f.poll(ctx, emit)
		if ctx.Err() != nil {
			return
		}
		prev := f.Err()
		f.setErr(err)
		var wait time.Duration
		if err != nil {
			failures++
			wait = f.backoff(failures, retryAfter)
			if prev == nil || prev.Error() != err.Error() {
				f.logger.Warn("feed fetch failed", "err", err, "failures", failures, "retry_in", wait.Round(time.Millisecond))
			}
		} else {
			if failures > 0 {
				f.logger.Info("feed recovered", "failures", failures)
			}
			failures = 0
			wait = jitter(f.opts.Interval)
		}
		timer.Reset(wait)
	}
}

// backoff is the wait after the n-th failure in a row: Interval doubled per
// failure, capped at MaxBackoff, then drawn at random from its upper half so
// that feeds failing together do not retry together. A server's Retry-After
// is honoured up to MaxBackoff.
func (f *feed) backoff(n int, retryAfter time.Duration) time.Duration {
	d := f.opts.Interval
	for i := 1; i < n && d < f.opts.MaxBackoff; i++ {
		d *= 2
	}
	d = min(d, f.opts.MaxBackoff)
	d = d/2 + rand.N(d/2+1)
	return min(max(d, retryAfter), f.opts.MaxBackoff)
}

func jitter(d time.Duration) time.Duration {
	return d + rand.N(time.Duration(float64(d)*intervalJitter)+1)
}

// poll fetches the feed once and emits the items not emitted before. The
// feed's validators are kept only once its items are handed over, so a
// failed hand-over is retried with a full fetch instead of a 304.
func (f *feed) poll(ctx context.Context, emit source.Emit) (time.Duration, error) {
	fetched, err := f.fetch(ctx)
	if err != nil {
		return fetched.retryAfter, err
	}
	if fetched.notModified {
		return 0, nil
	}
	parsed, err := gofeed.NewParser().Parse(bytes.NewReader(fetched.body))
	if err != nil {
		return 0, fmt.Errorf("rss: unable to parse %s: %w", f.url, err)
	}
	f.polls++
	items := f.items(parsed, fetched.at)
	f.current = items
	var fresh []source.Item
	for _, it := range items {
		if !f.known[it.ID].emitted {
			fresh = append(fresh, it)
		}
	}
	if len(fresh) > 0 {
		if err := emit(ctx, fresh); err != nil {
			if ctx.Err() != nil {
				return 0, ctx.Err()
			}
			return 0, fmt.Errorf("rss: unable to hand over the items of %s: %w", f.url, err)
		}
		for _, it := range fresh {
			f.known[it.ID].emitted = true
		}
	}
	f.etag, f.lastModified = fetched.etag, fetched.lastModified
	f.forget(len(items))
	return 0, nil
}

// fetchResult is one fetch's outcome.
type fetchResult struct {
	at                 time.Time
	notModified        bool
	body               []byte
	etag, lastModified string
	retryAfter         time.Duration
}

func (f *feed) fetch(ctx context.Context) (fetchResult, error) {
	res := fetchResult{at: time.Now()}
	ctx, cancel := context.WithTimeout(ctx, f.opts.FetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.url, nil)
	if err != nil {
		return res, fmt.Errorf("rss: unable to fetch %s: %w", f.url, err)
	}
	req.Header.Set("User-Agent", f.opts.UserAgent)
	req.Header.Set("Accept", acceptHeader)
	if f.etag != "" {
		req.Header.Set("If-None-Match", f.etag)
	}
	if f.lastModified != "" {
		req.Header.Set("If-Modified-Since", f.lastModified)
	}
	resp, err := f.opts.Client.Do(req)
	if err != nil {
		return res, fmt.Errorf("rss: unable to fetch %s: %w", f.url, err)
	}
	defer func() {
		_, _ = io.CopyN(io.Discard, resp.Body, drainBytes)
		resp.Body.Close()
	}()
	switch {
	case resp.StatusCode == http.StatusNotModified:
		res.notModified = true
		return res, nil
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable:
		res.retryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), res.at)
		return res, fmt.Errorf("rss: unable to fetch %s: %w: %s", f.url, ErrStatus, resp.Status)
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		return res, fmt.Errorf("rss: unable to fetch %s: %w: %s", f.url, ErrStatus, resp.Status)
	}
	limit := f.opts.MaxBodyBytes
	if resp.ContentLength > limit {
		return res, fmt.Errorf("rss: unable to fetch %s: %w: %d bytes announced, at most %d allowed", f.url, ErrTooLarge, resp.ContentLength, limit)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return res, fmt.Errorf("rss: unable to read %s: %w", f.url, err)
	}
	if int64(len(body)) > limit {
		return res, fmt.Errorf("rss: unable to fetch %s: %w: more than %d bytes", f.url, ErrTooLarge, limit)
	}
	res.body = body
	res.etag = resp.Header.Get("ETag")
	res.lastModified = resp.Header.Get("Last-Modified")
	return res, nil
}

// parseRetryAfter reads a Retry-After header: seconds or an HTTP date.
func parseRetryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// items turns a parsed feed into source items, oldest first, one per id.
func (f *feed) items(parsed *gofeed.Feed, now time.Time) []source.Item {
	feedAuthor := personName(parsed.Authors)
	out := make([]source.Item, 0, len(parsed.Items))
	dup := make(map[string]bool, len(parsed.Items))
	for _, gi := range parsed.Items {
		if gi == nil {
			continue
		}
		id := itemID(gi)
		if dup[id] {
			continue
		}
		dup[id] = true
		e, ok := f.known[id]
		if !ok {
			e = &entry{firstSeen: now}
			f.known[id] = e
		}
		e.lastPoll = f.polls
		published := e.firstSeen
		switch {
		case gi.PublishedParsed != nil && !gi.PublishedParsed.IsZero():
			published = *gi.PublishedParsed
		case gi.UpdatedParsed != nil && !gi.UpdatedParsed.IsZero():
			published = *gi.UpdatedParsed
		}
		// A date in the future (a skewed clock, a broken feed) would
		// carry a crawler's cursor past every real item to come.
		if published.After(e.firstSeen) {
			published = e.firstSeen
		}
		author := personName(gi.Authors)
		if author == "" {
			author = feedAuthor
		}
		out = append(out, source.Item{
			ID:          id,
			Author:      author,
			Text:        itemText(gi),
			URL:         f.resolve(gi.Link),
			PublishedAt: published.UTC(),
			FetchedAt:   now.UTC(),
		})
	}
	// Feeds list newest first; reversing before the stable sort keeps
	// undated items (all first seen now) in publication order.
	slices.Reverse(out)
	slices.SortStableFunc(out, func(a, b source.Item) int { return a.PublishedAt.Compare(b.PublishedAt) })
	return out
}

// forget bounds the remembered ids: when there are too many, it drops the
// ones absent from the feed for longest. Ids in the current feed are never
// dropped, or their items would be emitted again.
func (f *feed) forget(feedLen int) {
	limit := max(f.opts.SeenLimit, 2*feedLen)
	if len(f.known) <= limit {
		return
	}
	type aged struct {
		id   string
		poll uint64
	}
	var old []aged
	for id, e := range f.known {
		if e.lastPoll != f.polls {
			old = append(old, aged{id, e.lastPoll})
		}
	}
	slices.SortFunc(old, func(a, b aged) int { return compareUint(a.poll, b.poll) })
	// Drop to 90% of the limit, so pruning does not run on every poll.
	target := limit - limit/10
	for _, a := range old {
		if len(f.known) <= target {
			break
		}
		delete(f.known, a.id)
	}
}

func compareUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (f *feed) resolve(link string) string {
	link = strings.TrimSpace(link)
	if link == "" {
		return ""
	}
	u, err := url.Parse(link)
	if err != nil {
		return link
	}
	return f.base.ResolveReference(u).String()
}

// itemID is stable for the same upstream item: its GUID, else a hash of its
// link, else a hash of its title and date, else a hash of its text.
func itemID(gi *gofeed.Item) string {
	if g := strings.TrimSpace(gi.GUID); g != "" {
		return g
	}
	if l := strings.TrimSpace(gi.Link); l != "" {
		return hashID(l)
	}
	if gi.Title != "" || gi.Published != "" || gi.Updated != "" {
		return hashID(gi.Title + "\n" + gi.Published + "\n" + gi.Updated)
	}
	return hashID(gi.Description + "\n" + gi.Content)
}

func hashID(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func personName(ps []*gofeed.Person) string {
	for _, p := range ps {
		if p == nil {
			continue
		}
		if n := strings.TrimSpace(p.Name); n != "" {
			return n
		}
		if e := strings.TrimSpace(p.Email); e != "" {
			return e
		}
	}
	return ""
}

// itemText is the title and the body (the full content when the feed has
// it, else the description) as plain text, capped at maxTextBytes.
func itemText(gi *gofeed.Item) string {
	title := stripHTML(gi.Title)
	body := stripHTML(gi.Content)
	if body == "" {
		body = stripHTML(gi.Description)
	}
	text := title
	switch {
	case body == "" || body == title:
	case title == "":
		text = body
	default:
		text = title + "\n" + body
	}
	return truncate(text, maxTextBytes)
}

// truncate cuts s to at most n bytes on a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
