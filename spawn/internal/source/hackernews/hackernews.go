// Package hackernews is the Hacker News data source: one walk per spawn over
// every item id the official Firebase API hands out (/v0/maxitem.json, then
// /v0/item/<id>.json for each new id, stories and comments alike), shared by
// every hackernews subscriber on the spawn, so no item is missed the way a
// polled search misses them. An id that answers null (an item just created
// is not readable for a while) holds the walk back and is retried with
// back-off until it reads or NullGiveUp passes, so items are handed over in
// id order and a crawler's cursor (the newest id it stored) says exactly
// where it stands. /v0/updates.json is followed for edits, deletions and
// dead items, which are taken back as deletions. A crawler moved here with a
// cursor has its gap walked from that id, or, when the walk would be too
// long, read from the Algolia HN search API (search_by_date,
// numericFilters=created_at_i>…), as is the live walk's own gap when it
// falls too far behind. Items become comments keyed "hn:<id>", text read
// from the item's HTML (entities decoded once, links as full URLs), and
// threaded to their parent and root story. What it costs and why these
// numbers: docs/sources/hackernews.md.
package hackernews

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/blackwidow-crawl/blackwidow/pkg/netguard"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
)

// Default base URLs of the two APIs.
const (
	DefaultAPIURL    = "https://hacker-news.firebaseio.com"
	DefaultSearchURL = "https://hn.algolia.com"
)

// Endpoints below the base URLs.
const (
	maxItemPath = "/v0/maxitem.json"
	itemPath    = "/v0/item/%d.json"
	updatesPath = "/v0/updates.json"
	searchPath  = "/api/v1/search_by_date"
)

// Defaults of Options. Hacker News states no rate limit; these keep the
// walk polite and still far ahead of the item rate measured from recorded
// items (docs/sources/hackernews.md, "Item rate"): about 0.15 items a second
// on average in 2026, 0.23 at a busy moment, so a poll every 5 s finds one
// to a few new ids.
const (
	// DefaultPollInterval is how often maxitem is read.
	DefaultPollInterval = 5 * time.Second
	// DefaultUpdatesInterval is how often updates.json is read.
	DefaultUpdatesInterval = 30 * time.Second
	// DefaultUpdateRecheck is how long an item listed in updates.json is
	// not read again after it was read for an update (it stays on the list
	// for a while).
	DefaultUpdateRecheck = 2 * time.Minute
	// DefaultRequestsPerSecond caps the requests one walk sends, over
	// every endpoint: a catch-up reads ten ids a second, forty times the
	// busiest rate measured.
	DefaultRequestsPerSecond = 10
	// DefaultConcurrency is how many requests may be under way at once.
	DefaultConcurrency = 4
	// DefaultWindow is how many ids past the oldest one not handed over
	// yet the walk reads ahead.
	DefaultWindow = 64
	// DefaultNullRetryMin is the first wait before an id that answered
	// null is read again; it doubles up to DefaultNullRetryMax.
	DefaultNullRetryMin = 500 * time.Millisecond
	DefaultNullRetryMax = 8 * time.Second
	// DefaultNullGiveUp is how long an id may keep answering null before
	// the walk passes it (logged, counted as skipped, reason null_item).
	DefaultNullGiveUp = time.Minute
	// DefaultMaxWalkGap is the longest gap (in ids) walked item by item;
	// a longer one is read from the search API, 1000 items a request
	// instead of one. 2000 ids are about four hours of Hacker News.
	DefaultMaxWalkGap = 2000
	// DefaultMaxSearchPages bounds the search requests one gap may use:
	// 50 pages of 1000 hits, about four days of Hacker News.
	DefaultMaxSearchPages = 50
	// DefaultMaxParentLookups bounds the parents read to find one
	// comment's story.
	DefaultMaxParentLookups = 64
	// DefaultThreadCacheSize bounds the items whose story the source
	// remembers.
	DefaultThreadCacheSize = 200_000
	// DefaultRecentItems bounds the items handed over whose edits and
	// deletions the source follows.
	DefaultRecentItems = 100_000
	// DefaultRequestTimeout bounds one request.
	DefaultRequestTimeout = 30 * time.Second
	// DefaultBackoffMin is the first wait after a failed request; it
	// doubles up to DefaultBackoffMax.
	DefaultBackoffMin = time.Second
	DefaultBackoffMax = 2 * time.Minute
	// DefaultUserAgent names the client to both APIs.
	DefaultUserAgent = "BlackWidow-Spawn/1.0 (+https://github.com/blackwidow-crawl/blackwidow)"
)

// Bounds on what the APIs send.
const (
	// maxItemBytes caps one item answer.
	maxItemBytes = 1 << 20
	// maxListBytes caps maxitem and updates answers.
	maxListBytes = 256 << 10
	// maxSearchBytes caps one search page (1000 hits).
	maxSearchBytes = 32 << 20
	// maxTextBytes caps the text of one item.
	maxTextBytes = 32 << 10
	// maxAuthorBytes caps an author (HN usernames are at most 15).
	maxAuthorBytes = 64
	// maxLinks caps the links of one item.
	maxLinks = 64
	// searchPageSize is hitsPerPage (Algolia's most).
	searchPageSize = 1000
	// searchMargin widens a search's time bounds: item times are whole
	// seconds and a cursor's time is the newest stored item's.
	searchMargin = 2 * time.Second
	// clipBytes caps a string from the service quoted in an error.
	clipBytes = 80
)

// Errors the source reports through Err, checked with errors.Is.
var (
	// ErrStatus means an unexpected HTTP status.
	ErrStatus = errors.New("hackernews: unexpected HTTP status")
	// ErrMalformed means an answer that is not what the API documents.
	ErrMalformed = errors.New("hackernews: malformed answer")
)

// Options configure the hackernews source kind; zero fields take the
// defaults.
type Options struct {
	// APIURL is the Firebase API's base URL (DefaultAPIURL), SearchURL
	// the search API's (DefaultSearchURL).
	APIURL    string
	SearchURL string
	// Client supplies the transport; nil means a netguard client with no
	// allowed private ranges.
	Client *http.Client
	// UserAgent names the client (DefaultUserAgent).
	UserAgent string

	// The polling and politeness; each defaults to the Default constant
	// of the same name.
	PollInterval      time.Duration
	UpdatesInterval   time.Duration
	UpdateRecheck     time.Duration
	RequestsPerSecond float64
	Concurrency       int
	Window            int
	NullRetryMin      time.Duration
	NullRetryMax      time.Duration
	NullGiveUp        time.Duration
	MaxWalkGap        int64
	MaxSearchPages    int
	MaxParentLookups  int
	ThreadCacheSize   int
	RecentItems       int
	RequestTimeout    time.Duration
	BackoffMin        time.Duration
	BackoffMax        time.Duration
	// Logger receives the walk's progress and failures; nil discards.
	Logger *slog.Logger
}

func (o Options) withDefaults() Options {
	if o.APIURL == "" {
		o.APIURL = DefaultAPIURL
	}
	if o.SearchURL == "" {
		o.SearchURL = DefaultSearchURL
	}
	if o.Client == nil {
		o.Client = netguard.NewClient(netguard.Options{})
	}
	if o.UserAgent == "" {
		o.UserAgent = DefaultUserAgent
	}
	if o.RequestsPerSecond <= 0 {
		o.RequestsPerSecond = DefaultRequestsPerSecond
	}
	source.SetDefault(&o.PollInterval, DefaultPollInterval)
	source.SetDefault(&o.UpdatesInterval, DefaultUpdatesInterval)
	source.SetDefault(&o.UpdateRecheck, DefaultUpdateRecheck)
	source.SetDefault(&o.Concurrency, DefaultConcurrency)
	source.SetDefault(&o.Window, DefaultWindow)
	source.SetDefault(&o.NullRetryMin, DefaultNullRetryMin)
	source.SetDefault(&o.NullRetryMax, DefaultNullRetryMax)
	source.SetDefault(&o.NullGiveUp, DefaultNullGiveUp)
	source.SetDefault(&o.MaxWalkGap, DefaultMaxWalkGap)
	source.SetDefault(&o.MaxSearchPages, DefaultMaxSearchPages)
	source.SetDefault(&o.MaxParentLookups, DefaultMaxParentLookups)
	source.SetDefault(&o.ThreadCacheSize, DefaultThreadCacheSize)
	source.SetDefault(&o.RecentItems, DefaultRecentItems)
	source.SetDefault(&o.RequestTimeout, DefaultRequestTimeout)
	source.SetDefault(&o.BackoffMin, DefaultBackoffMin)
	source.SetDefault(&o.BackoffMax, DefaultBackoffMax)
	o.NullRetryMax = max(o.NullRetryMax, o.NullRetryMin)
	o.BackoffMax = max(o.BackoffMax, o.BackoffMin)
	o.Window = max(o.Window, o.Concurrency)
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// Kind builds the spawn's hackernews data source.
type Kind struct {
	opts      Options
	apiURL    string
	searchURL string
}

var _ source.Kind = (*Kind)(nil)

// New returns the kind. It fails when a base URL is not an http(s) base
// URL.
func New(opts Options) (*Kind, error) {
	opts = opts.withDefaults()
	k := &Kind{opts: opts}
	for _, u := range []struct {
		name, raw string
		to        *string
	}{{"API", opts.APIURL, &k.apiURL}, {"search", opts.SearchURL, &k.searchURL}} {
		parsed, ok := source.BaseURL(u.raw, "http", "https")
		if !ok || parsed.User != nil {
			return nil, fmt.Errorf("hackernews: %s URL %q is not an http(s) base URL", u.name, u.raw)
		}
		*u.to = strings.TrimSuffix(parsed.String(), "/")
	}
	return k, nil
}

// New returns the spawn's data source.
func (k *Kind) New(key string) (source.DataSource, error) {
	if err := source.CheckKey(Name, key, Key); err != nil {
		return nil, err
	}
	return newSource(k.opts, k.apiURL, k.searchURL), nil
}

func clip(s string) string { return source.Clip(s, clipBytes) }
