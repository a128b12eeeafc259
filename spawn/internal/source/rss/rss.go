// Package rss is the RSS and Atom data source: one poller per feed URL on a
// node, shared by every subscriber that reads the feed. A poller fetches its
// feed through the guarded crawl client (private addresses refused at
// connect time), within a size cap and connect, header and whole-fetch time
// limits; asks only for what changed (ETag and Last-Modified); is polite to
// publishers (one request at a time per host, a minimum delay between them,
// never sooner than the feed's Cache-Control max-age or RSS <ttl> asks);
// adapts its interval to how often the feed publishes; backs off with jitter
// while the feed fails and reports its health; reads RSS 2.0, RSS 1.0, Atom
// and JSON Feed in whatever character set they come (charset.go) as clean
// text; and hands each item to the spawn once, oldest first, with an id
// that stays the same across fetches and nodes.
package rss

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/blackwidow-crawl/blackwidow/pkg/netguard"
	"github.com/blackwidow-crawl/blackwidow/pkg/query"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
)

// Defaults of Options.
const (
	// DefaultInterval is the base polling interval: how often a feed is
	// fetched before its publishing rate is known, and what the adaptive
	// bounds derive from when they are not set.
	DefaultInterval = 30 * time.Second
	// DefaultMaxBackoff caps the wait between fetches of a failing feed;
	// the wait doubles from Interval with every failure in a row.
	DefaultMaxBackoff = 10 * time.Minute
	// DefaultFetchTimeout bounds one fetch: connect, headers and body.
	DefaultFetchTimeout = 30 * time.Second
	// DefaultHeaderTimeout bounds the wait for a response's headers once
	// the request is on its way: a server that accepts and never answers
	// is given up on well before the whole fetch's time runs out.
	DefaultHeaderTimeout = 15 * time.Second
	// DefaultConnectTimeout bounds a TCP connect of the client the source
	// builds when Options.Client is nil.
	DefaultConnectTimeout = 10 * time.Second
	// DefaultMaxBodyBytes caps a feed document; a larger one is an error.
	DefaultMaxBodyBytes = 10 << 20
	// DefaultHostDelay is the minimum time between the end of one request
	// to a host and the start of the next, whichever feed of the node
	// sends them. It is shortened to MinInterval when that is shorter, so
	// that a spawn told to poll faster (a test, a demo) is not held back.
	DefaultHostDelay = time.Second
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
	// minIntervalDivisor sets the default MinInterval: a busy feed may be
	// fetched up to this many times as often as the base interval.
	minIntervalDivisor = 2
	// maxIntervalFactor sets the default MaxInterval: a quiet feed may be
	// fetched down to once per this many base intervals.
	maxIntervalFactor = 8
	// failingAfter is how many failed fetches in a row turn a degraded
	// feed into a failing one.
	failingAfter = 3
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
	// ErrTimeout means a fetch ran out of time: no headers within
	// HeaderTimeout, or no complete answer within FetchTimeout.
	ErrTimeout = errors.New("rss: feed timed out")
	// ErrDegraded marks the error of a feed whose last fetches failed,
	// fewer than failingAfter in a row.
	ErrDegraded = errors.New("rss: feed degraded")
	// ErrFailing marks the error of a feed that failed failingAfter
	// fetches in a row or more.
	ErrFailing = errors.New("rss: feed failing")
)

// Options configure the rss source kind. Zero fields take the defaults.
type Options struct {
	// Client fetches feeds. nil means a netguard client with no allowed
	// private ranges, never http.DefaultClient: crawl targets are
	// untrusted.
	Client *http.Client
	// Interval is the base interval between fetches of a healthy feed
	// (the spawn's --feed-interval).
	Interval time.Duration
	// MinInterval and MaxInterval bound the adaptive interval: a feed is
	// fetched about twice per gap between its recent items, never more
	// often than MinInterval nor less often than MaxInterval. They
	// default to Interval/2 and 8×Interval.
	MinInterval time.Duration
	MaxInterval time.Duration
	// MaxBackoff caps the wait after failures (at least Interval).
	MaxBackoff time.Duration
	// FetchTimeout bounds one fetch, body included.
	FetchTimeout time.Duration
	// HeaderTimeout bounds the wait for response headers.
	HeaderTimeout time.Duration
	// ConnectTimeout bounds a TCP connect when Client is nil (a given
	// Client brings its own).
	ConnectTimeout time.Duration
	// MaxBodyBytes caps a feed document.
	MaxBodyBytes int64
	// HostDelay is the minimum pause between two requests to one host;
	// negative means none. Requests to one host never overlap either way.
	HostDelay time.Duration
	// SeenLimit bounds the ids remembered per feed.
	SeenLimit int
	// UserAgent is sent with every fetch.
	UserAgent string
	// Logger receives a line when a feed starts failing and when it
	// recovers; nil discards.
	Logger *slog.Logger
}

func (o Options) withDefaults() Options {
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	if o.MinInterval <= 0 {
		o.MinInterval = o.Interval / minIntervalDivisor
	}
	if o.MaxInterval <= 0 {
		o.MaxInterval = o.Interval * maxIntervalFactor
	}
	o.MaxInterval = max(o.MaxInterval, o.MinInterval)
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = DefaultMaxBackoff
	}
	if o.MaxBackoff < o.Interval {
		o.MaxBackoff = o.Interval
	}
	if o.FetchTimeout <= 0 {
		o.FetchTimeout = DefaultFetchTimeout
	}
	if o.HeaderTimeout <= 0 {
		o.HeaderTimeout = DefaultHeaderTimeout
	}
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = DefaultConnectTimeout
	}
	if o.Client == nil {
		o.Client = netguard.NewClient(netguard.Options{
			Timeout: o.FetchTimeout, DialTimeout: o.ConnectTimeout, ResponseHeaderTimeout: o.HeaderTimeout,
		})
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	switch {
	case o.HostDelay < 0:
		o.HostDelay = 0
	case o.HostDelay == 0:
		o.HostDelay = min(DefaultHostDelay, o.MinInterval)
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

// Kind builds rss data sources: one per feed URL. Its host limiter is
// shared by all of them, so the node as a whole is polite to each host.
type Kind struct {
	opts  Options
	hosts *hostLimiter
}

var _ source.Kind = (*Kind)(nil)

// New returns the rss source kind.
func New(opts Options) *Kind {
	opts = opts.withDefaults()
	return &Kind{opts: opts, hosts: newHostLimiter(opts.HostDelay)}
}

// Keys returns one key per feed URL of the subscriber's query, so crawlers
// reading the same feed share one poller even when their other feeds differ.
// URLs are canonicalised first: "HTTP://Example.com:80/a" and
// "http://example.com/a" are one feed.
func (k *Kind) Keys(sub source.Sub) ([]string, error) {
	urls, err := query.URLs(sub.Spec.Query)
	if err != nil {
		return nil, fmt.Errorf("rss: crawler %d: %w", sub.Spec.CrawlerID, err)
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
	return newFeed(u, k.opts, k.hosts), nil
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
	host   string
	opts   Options
	hosts  *hostLimiter
	logger *slog.Logger
	replay chan struct{}

	mu     sync.Mutex
	health Health
	subs   map[[2]int64]bool // (crawler id, spec version) pairs using the source

	etag, lastModified string
	known              map[string]*entry
	polls              uint64
	current            []source.Item // the feed's items at the last fetch, oldest first
	maxAge             time.Duration // the publisher's Cache-Control max-age (or Expires)
	ttl                time.Duration // the feed's RSS <ttl>
	charsetNote        string        // the last character set correction logged
}

func newFeed(u *url.URL, opts Options, hosts *hostLimiter) *feed {
	return &feed{
		url:    u.String(),
		base:   u,
		host:   strings.ToLower(u.Host),
		opts:   opts,
		hosts:  hosts,
		logger: opts.Logger.With("feed", u.String()),
		replay: make(chan struct{}, 1),
		known:  map[string]*entry{},
		health: Health{State: Healthy, Interval: opts.Interval},
	}
}

// Err is nil while the feed is healthy. After a failed fetch it is a
// *FeedError: the last fetch's error with the feed's state (ErrDegraded or
// ErrFailing), how many fetches failed in a row and when the next attempt
// is due.
func (f *feed) Err() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.health.err(f.url)
}

// Health is the feed's current health.
func (f *feed) Health() Health {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.health
}

// SetSubscribers notices subscribers that are new to the poller (or whose
// spec changed) and hands them the feed's current items again: items
// emitted before they joined would otherwise never reach them, and a
// crawler would see a different feed depending on whether its data source
// happened to be shared. Subscribers that already have an item recognise it
// by its id, and a subscriber moved from another node skips what it stored
// there by its cursor.
func (f *feed) SetSubscribers(subs []source.Sub) {
	next := make(map[[2]int64]bool, len(subs))
	added := false
	f.mu.Lock()
	for _, s := range subs {
		k := [2]int64{s.Spec.CrawlerID, s.Spec.Version}
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

// Run polls the feed until ctx ends: right away, then at the adaptive
// interval while fetches succeed, and with capped, jittered exponential
// backoff while they fail.
func (f *feed) Run(ctx context.Context, emit source.Emit) {
	timer := time.NewTimer(0)
	defer timer.Stop()
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
		timer.Reset(f.record(time.Now(), err, retryAfter))
	}
}

// poll fetches the feed once and emits the items not emitted before. The
// feed's validators are kept only once its items are handed over, so a
// failed hand-over is retried with a full fetch instead of a 304.
func (f *feed) poll(ctx context.Context, emit source.Emit) (time.Duration, error) {
	fetched, err := f.fetch(ctx)
	if fetched.cacheHint {
		f.maxAge = fetched.maxAge
	}
	if err != nil {
		return fetched.retryAfter, err
	}
	if fetched.notModified {
		return 0, nil
	}
	parsed, skipped, dec, err := parseDocument(fetched.body, fetched.contentType)
	if err != nil {
		return 0, fmt.Errorf("rss: unable to parse %s: %w", f.url, err)
	}
	f.noteCharset(dec)
	f.skip(skipped, len(parsed.Items)+skipped)
	f.ttl = feedTTL(parsed)
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
