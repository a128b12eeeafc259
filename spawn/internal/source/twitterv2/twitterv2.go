// Package twitterv2 is the twitter data source over X API v2's filtered
// stream: one stream connection per spawn, shared by every twitter
// subscriber on it, and the app's stream rules kept equal to the
// subscribers' queries (packed, tagged, reconciled by diff). Why it speaks
// the API on net/http: docs/decisions/0013-x-api-v2-without-a-client-library.md;
// what a comment keeps: docs/sources/twitter.md.
// TooManyConnections right after the stream changed hands is retried on a
// short schedule within X's connection limits, and every reconnect,
// handover and crawler moved here opens a gap that recent search fills
// (backfill.go): docs/decisions/0015-no-gaps.md.
package twitterv2

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/pkg/netguard"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source/internal/linestream"
)

// Endpoints of the service, below Options.APIURL.
const (
	// DefaultAPIURL is X's API base.
	DefaultAPIURL = "https://api.x.com"
	rulesPath     = "/2/tweets/search/stream/rules"
	streamPath    = "/2/tweets/search/stream"
)

// Handover retries: see the package documentation.
const (
	// DefaultHandoverRetryInterval is the wait between the short retries
	// after TooManyConnections.
	DefaultHandoverRetryInterval = 2 * time.Second
	// DefaultHandoverRetries is how many TooManyConnections in a row are
	// retried on the short schedule.
	DefaultHandoverRetries = 10
	// DefaultStreamRequestReserve is how many of the stream endpoint's
	// connection requests (50 per 15 minutes) the short retries leave
	// untouched.
	DefaultStreamRequestReserve = 10
)

// Key is the one data source key of every twitter subscriber of a spawn:
// one stream connection carries them all.
const Key = "twitter"

// Defaults of Options.
const (
	// DefaultMaxRules is how many rules the app may hold (X's Pro tier;
	// Basic allows 25 rules of 512 characters).
	DefaultMaxRules = 1000
	// DefaultMaxRuleLength is the longest rule in characters (Pro tier).
	DefaultMaxRuleLength = 1024
	// The waits after network errors, HTTP errors and rate limiting (429
	// Too Many Requests, TooManyConnections included) are those of every
	// HTTP stream (linestream): X's streaming guide's.
	DefaultNetworkBackoffStep  = linestream.DefaultNetworkStep
	DefaultNetworkBackoffMax   = linestream.DefaultNetworkMax
	DefaultHTTPBackoffMin      = linestream.DefaultHTTPMin
	DefaultHTTPBackoffMax      = linestream.DefaultHTTPMax
	DefaultRateLimitBackoffMin = linestream.DefaultRateLimitMin
	// DefaultRateLimitBackoffMax caps the wait after 429s: the length of
	// X's rate-limit window.
	DefaultRateLimitBackoffMax = 15 * time.Minute
	// KeepAliveInterval is how often X sends a keep-alive newline on an
	// idle stream.
	KeepAliveInterval = 20 * time.Second
	// DefaultStallTimeout is how long the stream may send nothing, not even
	// a keep-alive, before it is dropped and reopened: X's 20 s and a
	// margin, since its keep-alives arrive a little late at times.
	DefaultStallTimeout = KeepAliveInterval + 5*time.Second
	// DefaultConnectTimeout bounds the wait for the stream's headers.
	DefaultConnectTimeout = linestream.DefaultHeaderTimeout
	// DefaultRequestTimeout bounds one rules request.
	DefaultRequestTimeout = 30 * time.Second
	// DefaultReconcileDelay gathers subscriber changes for this long
	// before the rules are reconciled.
	DefaultReconcileDelay = 2 * time.Second
	// DefaultRulesRequestInterval spaces rules requests: X allows 450 per
	// 15 minutes to an app, one every 2 s.
	DefaultRulesRequestInterval = 2 * time.Second
	// DefaultReconcileRetryMin is the first wait after a failed reconcile;
	// it doubles up to DefaultReconcileRetryMax.
	DefaultReconcileRetryMin = 5 * time.Second
	// DefaultReconcileRetryMax caps the wait between reconcile attempts.
	DefaultReconcileRetryMax = 5 * time.Minute
	// DefaultMaxLineBytes caps one stream message; a longer one is
	// skipped. A post with its expansions is a few kilobytes.
	DefaultMaxLineBytes = 512 << 10
	// DefaultSeenLimit is how many post ids the source remembers so a
	// post delivered twice (around a reconnect) is emitted once.
	DefaultSeenLimit = 10000
	// DefaultUserAgent names the client to X.
	DefaultUserAgent = "BlackWidow-Spawn/1.0 (+https://github.com/blackwidow-crawl/blackwidow)"
)

// Errors the source reports through Keys, Err and ErrFor, checked with
// errors.Is.
var (
	// ErrUnauthorized means X refused the bearer token (401, 403).
	ErrUnauthorized = errors.New("twitter: bearer token refused")
	// ErrRateLimited means X answered 429.
	ErrRateLimited = errors.New("twitter: rate limited")
	// ErrTooManyConnections means the app's one stream connection is
	// taken, by another spawn or tool using the same bearer token.
	ErrTooManyConnections = errors.New("twitter: the app's stream connection is held elsewhere (TooManyConnections)")
	// ErrStatus means another unexpected HTTP status.
	ErrStatus = errors.New("twitter: unexpected HTTP status")
	// ErrStalled means the stream sent nothing for StallTimeout.
	ErrStalled = errors.New("twitter: stream stalled")
	// ErrDisconnected means the stream ended or X announced its end.
	ErrDisconnected = errors.New("twitter: stream disconnected")
	// ErrMalformed means a stream message that is not a post X describes.
	ErrMalformed = errors.New("twitter: malformed stream message")
	// ErrOversized means a stream message longer than MaxLineBytes.
	ErrOversized = source.NewError("twitter: stream message too large", linestream.ErrTooLong)
	// ErrRuleRefused means X refused a query's rule as invalid.
	ErrRuleRefused = errors.New("twitter: X refused the rule")
	// ErrRuleTooLong means a query's rule is longer than MaxRuleLength.
	ErrRuleTooLong = errors.New("twitter: rule too long")
	// ErrNoRoom means the app's MaxRules rules are full.
	ErrNoRoom = errors.New("twitter: no room for the rule")
	// ErrRuleCap means X refused rules past the app's cap: MaxRules is
	// set higher than the app's tier allows.
	ErrRuleCap = errors.New("twitter: X's rule cap exceeded")
)

// Options configure the kind. BearerToken is required; zero fields take
// the Default constants of the same name.
type Options struct {
	// APIURL is the base of the rules and stream endpoints.
	APIURL      string
	BearerToken string
	// MaxRules and MaxRuleLength are the app's limits (its X tier).
	MaxRules      int
	MaxRuleLength int
	// Client supplies the transport (its Timeout is not used: the stream
	// is long-lived). nil means a netguard client.
	Client *http.Client
	// Logger receives connection and rule changes; nil discards.
	Logger *slog.Logger

	NetworkBackoffStep   time.Duration
	NetworkBackoffMax    time.Duration
	HTTPBackoffMin       time.Duration
	HTTPBackoffMax       time.Duration
	RateLimitBackoffMin  time.Duration
	RateLimitBackoffMax  time.Duration
	StallTimeout         time.Duration
	ConnectTimeout       time.Duration
	RequestTimeout       time.Duration
	ReconcileDelay       time.Duration
	RulesRequestInterval time.Duration
	ReconcileRetryMin    time.Duration
	ReconcileRetryMax    time.Duration
	MaxLineBytes         int
	SeenLimit            int
	UserAgent            string

	// The short retries after TooManyConnections.
	HandoverRetryInterval time.Duration
	HandoverRetries       int
	StreamRequestReserve  int
	// MaxSearchQueryLength is the longest query recent search takes (the
	// app's access level); MaxBackfillPages bounds one gap's search.
	MaxSearchQueryLength int
	MaxBackfillPages     int
}

func (o Options) withDefaults() Options {
	if o.APIURL == "" {
		o.APIURL = DefaultAPIURL
	}
	if o.Client == nil {
		o.Client = netguard.NewClient(netguard.Options{})
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	source.SetDefault(&o.MaxRules, DefaultMaxRules)
	source.SetDefault(&o.MaxRuleLength, DefaultMaxRuleLength)
	source.SetDefault(&o.MaxLineBytes, DefaultMaxLineBytes)
	source.SetDefault(&o.SeenLimit, DefaultSeenLimit)
	source.SetDefault(&o.NetworkBackoffStep, DefaultNetworkBackoffStep)
	source.SetDefault(&o.NetworkBackoffMax, DefaultNetworkBackoffMax)
	source.SetDefault(&o.HTTPBackoffMin, DefaultHTTPBackoffMin)
	source.SetDefault(&o.HTTPBackoffMax, DefaultHTTPBackoffMax)
	source.SetDefault(&o.RateLimitBackoffMin, DefaultRateLimitBackoffMin)
	source.SetDefault(&o.RateLimitBackoffMax, DefaultRateLimitBackoffMax)
	source.SetDefault(&o.StallTimeout, DefaultStallTimeout)
	source.SetDefault(&o.ConnectTimeout, DefaultConnectTimeout)
	source.SetDefault(&o.RequestTimeout, DefaultRequestTimeout)
	source.SetDefault(&o.ReconcileDelay, DefaultReconcileDelay)
	source.SetDefault(&o.RulesRequestInterval, DefaultRulesRequestInterval)
	source.SetDefault(&o.ReconcileRetryMin, DefaultReconcileRetryMin)
	source.SetDefault(&o.ReconcileRetryMax, DefaultReconcileRetryMax)
	source.SetDefault(&o.HandoverRetryInterval, DefaultHandoverRetryInterval)
	source.SetDefault(&o.HandoverRetries, DefaultHandoverRetries)
	source.SetDefault(&o.StreamRequestReserve, DefaultStreamRequestReserve)
	source.SetDefault(&o.MaxSearchQueryLength, DefaultMaxSearchQueryLength)
	source.SetDefault(&o.MaxBackfillPages, DefaultMaxBackfillPages)
	o.NetworkBackoffMax = max(o.NetworkBackoffMax, o.NetworkBackoffStep)
	o.HTTPBackoffMax = max(o.HTTPBackoffMax, o.HTTPBackoffMin)
	o.RateLimitBackoffMax = max(o.RateLimitBackoffMax, o.RateLimitBackoffMin)
	o.ReconcileRetryMax = max(o.ReconcileRetryMax, o.ReconcileRetryMin)
	if o.UserAgent == "" {
		o.UserAgent = DefaultUserAgent
	}
	return o
}

// Kind builds the spawn's v2 twitter data source.
type Kind struct {
	opts      Options
	rulesURL  string
	streamURL string
	searchURL string
}

var _ source.Kind = (*Kind)(nil)

// New returns the kind. It fails without a bearer token or with an APIURL
// that is not an http(s) URL.
func New(opts Options) (*Kind, error) {
	if opts.BearerToken == "" {
		return nil, errors.New("twitter: a bearer token is required for X API v2")
	}
	opts = opts.withDefaults()
	u, ok := source.BaseURL(opts.APIURL, "http", "https")
	if !ok {
		return nil, fmt.Errorf("twitter: API URL %q is not an http(s) base URL", opts.APIURL)
	}
	base := strings.TrimSuffix(u.String(), "/")
	return &Kind{opts: opts, rulesURL: base + rulesPath, streamURL: base + streamPath, searchURL: base + searchPath}, nil
}

// Keys returns the spawn's one twitter key, after checking that the query
// can be a rule of this app at all: expressible in X's syntax and no
// longer than MaxRuleLength. Whether it finds room among the app's rules
// shows later, through ErrFor.
func (k *Kind) Keys(sub source.Sub) ([]string, error) {
	w := compile(sub, k.opts.MaxRuleLength)
	if w.err != nil {
		return nil, fmt.Errorf("crawler %d: %w", sub.Spec.CrawlerID, w.err)
	}
	return []string{Key}, nil
}

// New returns the spawn's data source.
func (k *Kind) New(key string) (source.DataSource, error) {
	if err := source.CheckKey("twitter", key, Key); err != nil {
		return nil, err
	}
	return newSource(k.opts, k.rulesURL, k.streamURL, k.searchURL), nil
}

// wanted is one subscriber query as a rule.
type wanted struct {
	uuid string
	rule string // X rule text, empty when err is set
	err  error  // the query cannot be a rule
}

// compile turns a subscriber's query into its rule text.
func compile(sub source.Sub, maxLen int) wanted {
	q := sub.Query
	if q == nil {
		return wanted{uuid: sub.Spec.QueryUUID, err: errors.New("twitter: the query is empty")}
	}
	w := wanted{uuid: sub.Spec.QueryUUID}
	if w.uuid == "" {
		w.uuid = q.UUID(api.SourceTwitter).String()
	}
	rule, err := compileRule(q)
	if err != nil {
		w.err = fmt.Errorf("twitter: %w", err)
		return w
	}
	if n := ruleLen(rule); n > maxLen {
		w.err = fmt.Errorf("%w: the query's rule has %d characters, the app's rules at most %d", ErrRuleTooLong, n, maxLen)
		return w
	}
	w.rule = rule
	return w
}
