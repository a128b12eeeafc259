// Package reddit is the Reddit data source over the OAuth Data API with an
// app's client credentials. A reddit query names its subreddits
// (`subreddit:golang (generics OR iterators)`); each subreddit's two
// listings, /r/{sub}/comments and /r/{sub}/new, are data sources of their
// own, shared by every crawler that names the subreddit, so each is polled
// once however many crawlers want it, and a crawler's cursor holds, per
// listing, the newest thing it stored (Reddit's base36 ids grow with time).
// Each poll reads the newest page (limit=100, raw_json=1) and pages back
// with after=<fullname> until it reaches what it read before, so nothing
// between two polls is missed while a listing holds it (about 1000
// things). Every request of the spawn goes through one budget: at most
// RequestsPerMinute, slowed further by Reddit's X-Ratelimit-Remaining and
// -Reset and stopped by a 429 until its retry-after; the kind is
// fleet-scoped, so one spawn holds every reddit crawler and the budget is
// the fleet's. Things handed over are re-checked through /api/info at
// growing intervals and taken back when their author or body became
// [deleted] or [removed], as Reddit's terms require; an edit replaces the
// stored text. That schedule is the spawn's own, so the kind also checks,
// daily, the stored things the hub's compliance loop hands it
// (source.Rechecker). A refused secret fails the crawlers saying so. What
// it costs and why: docs/sources/reddit.md.
package reddit

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/blackwidow-crawl/blackwidow/pkg/netguard"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
)

// Default base URLs.
const (
	DefaultAPIURL  = "https://oauth.reddit.com"
	DefaultAuthURL = "https://www.reddit.com"
)

// Endpoints.
const (
	tokenPath = "/api/v1/access_token"
	infoPath  = "/api/info"
)

// Defaults of Options.
const (
	// DefaultRequestsPerMinute is the spawn's budget: Reddit allows an
	// OAuth client id 100 requests a minute (averaged over ten minutes);
	// a tenth is left for a handover's overlap and clocks that differ.
	DefaultRequestsPerMinute = 90
	// DefaultRecheck is when a thing handed over is first re-checked for
	// deletion; each next re-check waits twice as long as the one before,
	// until DefaultRecheckFor: eight re-checks in a week, one request per
	// hundred things each.
	DefaultRecheck    = time.Hour
	DefaultRecheckFor = 7 * 24 * time.Hour
	// DefaultRecheckItems bounds the things one listing re-checks; past
	// it the oldest are dropped first (counted).
	DefaultRecheckItems = 100_000
	// DefaultStoredMax bounds the stored things one daily check reads
	// (stored.go): 200 requests, about two minutes and a quarter of the
	// whole budget, taken only when no poll waits.
	DefaultStoredMax = 20_000
	// DefaultMinInterval and DefaultMaxInterval bound the wait between
	// two polls of a listing; DefaultStartInterval is the first.
	DefaultMinInterval   = 5 * time.Second
	DefaultMaxInterval   = 5 * time.Minute
	DefaultStartInterval = 30 * time.Second
	// DefaultTargetFill is how many new things a poll aims to find: half
	// a page, so a burst still fits the first page.
	DefaultTargetFill = 50
	// DefaultMaxPages bounds the pages one poll reads back: Reddit's
	// listings stop near 1000 things.
	DefaultMaxPages = 10
	// DefaultRequestTimeout bounds one request.
	DefaultRequestTimeout = 30 * time.Second
	// DefaultBackoffMin is the first wait after a failed poll; it
	// doubles up to DefaultBackoffMax.
	DefaultBackoffMin = 5 * time.Second
	DefaultBackoffMax = 5 * time.Minute
	// DefaultAuthBackoff is the wait after Reddit refused the
	// credentials before asking again: only an operator can fix them.
	DefaultAuthBackoff = time.Minute
	// DefaultRateLimitWait is the wait after a 429 without retry-after
	// or reset.
	DefaultRateLimitWait = time.Minute
)

// Bounds on what Reddit sends.
const (
	maxListingBytes = 16 << 20
	maxTokenBytes   = 64 << 10
	maxTextBytes    = 40 << 10 // a comment is at most 10,000 characters
	maxLinks        = 64
	pageSize        = 100
	maxInfoIDs      = 100
	// tokenMargin is how long before its expiry a token is replaced.
	tokenMargin = 5 * time.Minute
	clipBytes   = 120
)

// Errors, checked with errors.Is.
var (
	// ErrCredentialsRefused means Reddit refused the client id and secret:
	// the crawlers fail until an operator fixes them.
	ErrCredentialsRefused = errors.New("reddit: client credentials refused")
	// ErrUserAgent means a User-Agent not of Reddit's required form.
	ErrUserAgent = errors.New("reddit: User-Agent is not of the form <platform>:<app id>:<version> (by /u/<name>)")
	// ErrNoSubreddit refuses a query that names no subreddit.
	ErrNoSubreddit = errors.New("reddit: the query names no subreddit (add subreddit:NAME)")
	// ErrSubreddit refuses a subreddit name Reddit cannot have.
	ErrSubreddit = errors.New("reddit: not a subreddit name")
	// ErrRateLimited means Reddit answered 429.
	ErrRateLimited = errors.New("reddit: rate limited")
	// ErrStatus means an unexpected HTTP status.
	ErrStatus = errors.New("reddit: unexpected HTTP status")
	// ErrMalformed means an answer that is not what the API documents.
	ErrMalformed = errors.New("reddit: malformed answer")
	// ErrNotConfigured is what a reddit subscriber fails with on a spawn
	// without credentials.
	ErrNotConfigured = fmt.Errorf("%w: no Reddit client credentials on this spawn (BW_REDDIT_CLIENT_ID, BW_REDDIT_CLIENT_SECRET, --reddit-user-agent)", source.ErrUnsupported)
)

// userAgentForm is Reddit's required User-Agent: platform, app id and
// version separated by colons, then the developer's username.
var userAgentForm = regexp.MustCompile(`^[^:\s]+:[^:\s]+:[^:\s]+ \(by /u/[A-Za-z0-9_-]{3,20}\)$`)

// CheckUserAgent refuses a User-Agent not of Reddit's required form
// (github.com/reddit-archive/reddit/wiki/API: "<platform>:<app
// ID>:<version string> (by /u/<reddit username>)").
func CheckUserAgent(ua string) error {
	if !userAgentForm.MatchString(ua) {
		return fmt.Errorf("%w: %q", ErrUserAgent, source.Clip(ua, clipBytes))
	}
	return nil
}

// Options configure the reddit source kind. ClientID, ClientSecret and
// UserAgent are required; zero fields take the defaults.
type Options struct {
	ClientID     string
	ClientSecret string
	UserAgent    string
	// APIURL is the OAuth API's base (DefaultAPIURL); AuthURL the token
	// endpoint's (DefaultAuthURL).
	APIURL  string
	AuthURL string
	// Client supplies the transport; nil means a netguard client with no
	// allowed private ranges.
	Client *http.Client

	// The budget, polling and re-checks; each defaults to the Default
	// constant of the same name.
	RequestsPerMinute float64
	Recheck           time.Duration
	RecheckFor        time.Duration
	RecheckItems      int
	StoredMax         int
	MinInterval       time.Duration
	MaxInterval       time.Duration
	StartInterval     time.Duration
	TargetFill        int
	MaxPages          int
	RequestTimeout    time.Duration
	BackoffMin        time.Duration
	BackoffMax        time.Duration
	AuthBackoff       time.Duration
	RateLimitWait     time.Duration
	// Logger receives polls' progress and failures; nil discards.
	Logger *slog.Logger
}

func (o Options) withDefaults() Options {
	if o.APIURL == "" {
		o.APIURL = DefaultAPIURL
	}
	if o.AuthURL == "" {
		o.AuthURL = DefaultAuthURL
	}
	if o.Client == nil {
		o.Client = netguard.NewClient(netguard.Options{})
	}
	if o.RequestsPerMinute <= 0 {
		o.RequestsPerMinute = DefaultRequestsPerMinute
	}
	source.SetDefault(&o.Recheck, DefaultRecheck)
	source.SetDefault(&o.RecheckFor, DefaultRecheckFor)
	source.SetDefault(&o.RecheckItems, DefaultRecheckItems)
	source.SetDefault(&o.StoredMax, DefaultStoredMax)
	source.SetDefault(&o.MinInterval, DefaultMinInterval)
	source.SetDefault(&o.MaxInterval, DefaultMaxInterval)
	source.SetDefault(&o.StartInterval, DefaultStartInterval)
	source.SetDefault(&o.TargetFill, DefaultTargetFill)
	source.SetDefault(&o.MaxPages, DefaultMaxPages)
	source.SetDefault(&o.RequestTimeout, DefaultRequestTimeout)
	source.SetDefault(&o.BackoffMin, DefaultBackoffMin)
	source.SetDefault(&o.BackoffMax, DefaultBackoffMax)
	source.SetDefault(&o.AuthBackoff, DefaultAuthBackoff)
	source.SetDefault(&o.RateLimitWait, DefaultRateLimitWait)
	o.MaxInterval = max(o.MaxInterval, o.MinInterval)
	o.StartInterval = min(max(o.StartInterval, o.MinInterval), o.MaxInterval)
	o.BackoffMax = max(o.BackoffMax, o.BackoffMin)
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// Kind builds the reddit data sources of a spawn: one per listing of
// each subreddit its crawlers name, all sharing one token and one budget.
type Kind struct {
	opts   Options
	client *client
}

var _ source.Kind = (*Kind)(nil)

// New returns the kind. It fails without credentials, with a User-Agent
// not of Reddit's form, or with a base URL that is not http(s).
func New(opts Options) (*Kind, error) {
	if opts.ClientID == "" || opts.ClientSecret == "" {
		return nil, errors.New("reddit: a client id and secret are required (BW_REDDIT_CLIENT_ID, BW_REDDIT_CLIENT_SECRET)")
	}
	if err := CheckUserAgent(opts.UserAgent); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	urls := map[string]string{}
	for name, raw := range map[string]string{"API": opts.APIURL, "auth": opts.AuthURL} {
		u, ok := source.BaseURL(raw, "http", "https")
		if !ok || u.User != nil {
			return nil, fmt.Errorf("reddit: %s URL %q is not an http(s) base URL", name, raw)
		}
		urls[name] = strings.TrimSuffix(u.String(), "/")
	}
	return &Kind{opts: opts, client: newClient(opts, urls["API"], urls["auth"])}, nil
}

// New returns the data source of one listing key.
func (k *Kind) New(key string) (source.DataSource, error) {
	sub, listing, err := parseKey(key)
	if err != nil {
		return nil, err
	}
	return newSource(k.opts, k.client, key, sub, listing), nil
}

// Unconfigured returns the kind to register for "reddit" on a spawn
// without credentials: every subscriber fails with ErrNotConfigured.
func Unconfigured() source.Kind { return source.Unconfigured(ErrNotConfigured) }

func clip(s string) string { return source.Clip(s, clipBytes) }
