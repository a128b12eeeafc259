// Package twitterv1 is the twitter data source over Twitter API v1.1: one
// per node, shared by every twitter subscriber on it. It tracks the union
// of the subscribers' query terms on the filter stream (statuses/filter.json,
// at most MaxTrackTerms terms a connection, as many connections as needed),
// hands each tweet over with the tracked terms it contains, and fills every
// gap from the search API. Why the stream is driven here on go-twitter's
// types: docs/decisions/0012-twitter-v1-stream-on-go-twitter-types.md; what
// a comment keeps: docs/sources/twitter.md.
package twitterv1

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/blackwidow-crawl/blackwidow/pkg/netguard"
	"github.com/blackwidow-crawl/blackwidow/pkg/query"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source/internal/linestream"
)

// Endpoints of the real service.
const (
	// DefaultAPIURL is the base of the REST API (search).
	DefaultAPIURL = "https://api.twitter.com"
	// DefaultStreamURL is the base of the streaming API.
	DefaultStreamURL = "https://stream.twitter.com"
	// filterPath is the filter stream below the stream base URL.
	filterPath = "/1.1/statuses/filter.json"
)

// Limits Twitter sets on a filter stream.
const (
	// MaxTrackTerms is the most track terms one filter connection may
	// carry; a larger union opens further connections.
	MaxTrackTerms = 400
	// MaxTrackBytes is the longest term Twitter tracks.
	MaxTrackBytes = 60
)

// Defaults of Options: the reconnect policy of Twitter's streaming guide
// and the limits of one connection.
const (
	// The waits after HTTP errors, rate limiting and network errors are
	// those of every HTTP stream (linestream): the streaming guide's.
	DefaultHTTPBackoffMin      = linestream.DefaultHTTPMin
	DefaultHTTPBackoffMax      = linestream.DefaultHTTPMax
	DefaultRateLimitBackoffMin = linestream.DefaultRateLimitMin
	DefaultNetworkBackoffStep  = linestream.DefaultNetworkStep
	DefaultNetworkBackoffMax   = linestream.DefaultNetworkMax
	// DefaultRateLimitBackoffMax caps the wait after rate limiting.
	DefaultRateLimitBackoffMax = 16 * time.Minute
	// DefaultStallTimeout is how long a stream may send neither data nor
	// a keep-alive before it is dropped and reopened. Twitter sends a
	// keep-alive every 30 seconds.
	DefaultStallTimeout = 90 * time.Second
	// DefaultConnectTimeout bounds the wait for a stream's response
	// headers.
	DefaultConnectTimeout = linestream.DefaultHeaderTimeout
	// DefaultReopenDelay gathers subscriber changes for this long before
	// the streams are opened or reopened with the new terms: Twitter
	// penalises clients that reconnect too often.
	DefaultReopenDelay = 2 * time.Second
	// DefaultSearchTimeout bounds one search request.
	DefaultSearchTimeout = 30 * time.Second
	// DefaultMaxMessageBytes caps one stream message; a longer one ends
	// the connection.
	DefaultMaxMessageBytes = 1 << 20
	// DefaultSeenLimit is how many tweet ids the source remembers so a
	// tweet found both by the stream and by a backfill is handed over
	// once.
	DefaultSeenLimit = 10000
	// DefaultUserAgent names the client to Twitter.
	DefaultUserAgent = "BlackWidow-Spawn/1.0 (+https://github.com/blackwidow-crawl/blackwidow)"
)

const (
	// Key is the one data source key of every twitter subscriber of a
	// node: the node runs one tracker, however many subscribers it has.
	Key = "twitter"
	// searchPageSize is the count of one search request (the API's
	// maximum).
	searchPageSize = 100
	// maxSearchQueryBytes is the longest query the standard search takes;
	// a larger term set is searched in several queries.
	maxSearchQueryBytes = 500
	// maxBackfillPages bounds the pages read per query in one backfill,
	// so a long outage costs a bounded number of search calls.
	maxBackfillPages = 10
	// maxBackfillAttempts is how often a failed backfill is tried before
	// it is given up (and reported through Err).
	maxBackfillAttempts = 5
	// maxSearchBodyBytes caps one search response.
	maxSearchBodyBytes = 8 << 20
	// maxErrorBodyBytes is how much of an error response is read for its
	// message.
	maxErrorBodyBytes = 4 << 10
	// backfillClockSkew widens a backfill anchored on a time instead of a
	// tweet id, for the difference between our clock and Twitter's.
	backfillClockSkew = 10 * time.Second
	// maxTextBytes caps the text of one item.
	maxTextBytes = 32 << 10
	// twitterEpochMs is the Unix time in milliseconds tweet ids
	// (snowflakes) count from; their bits above snowflakeTimeShift hold
	// milliseconds since then.
	twitterEpochMs     = 1288834974657
	snowflakeTimeShift = 22
)

// ErrNotConfigured is what a twitter subscriber fails with on a spawn that
// has no Twitter credentials.
var ErrNotConfigured = fmt.Errorf("%w: twitter credentials not configured on this spawn", source.ErrUnsupported)

// Errors the source reports through Err and Keys, checked with errors.Is.
var (
	// ErrUnauthorized means Twitter refused the credentials (401).
	ErrUnauthorized = errors.New("twitter: credentials refused")
	// ErrRateLimited means Twitter answered 420 or 429.
	ErrRateLimited = errors.New("twitter: rate limited")
	// ErrStatus means another unexpected HTTP status.
	ErrStatus = errors.New("twitter: unexpected HTTP status")
	// ErrNoAnswer means a stream sent no response headers within
	// Options.ConnectTimeout.
	ErrNoAnswer = errors.New("twitter: stream did not answer")
	// ErrStalled means a stream sent nothing, not even a keep-alive, for
	// Options.StallTimeout.
	ErrStalled = errors.New("twitter: stream stalled")
	// ErrDisconnected means the stream ended (closed by the server, or a
	// disconnect message).
	ErrDisconnected = errors.New("twitter: stream disconnected")
	// ErrMessageTooLarge means one message exceeded
	// Options.MaxMessageBytes.
	ErrMessageTooLarge = source.NewError("twitter: stream message too large", linestream.ErrTooLong)
	// ErrTruncated means the stream ended inside a message.
	ErrTruncated = source.NewError("twitter: stream ended inside a message", linestream.ErrTruncated)
	// ErrMalformed means a message that is not a JSON object, or a tweet
	// without an id.
	ErrMalformed = errors.New("twitter: malformed stream message")
	// ErrResponseTooLarge means a search response exceeded its cap.
	ErrResponseTooLarge = errors.New("twitter: response too large")
	// ErrBadTerm means a query term Twitter cannot track.
	ErrBadTerm = errors.New("twitter: term cannot be tracked")
)

// Credentials are OAuth 1.0a user credentials: the filter stream needs
// user context, so all four are required.
type Credentials struct {
	ConsumerKey    string
	ConsumerSecret string
	AccessToken    string
	AccessSecret   string
}

// IsZero reports whether no credential is set.
func (c Credentials) IsZero() bool { return c == Credentials{} }

// Complete reports whether every credential is set.
func (c Credentials) Complete() bool {
	return c.ConsumerKey != "" && c.ConsumerSecret != "" && c.AccessToken != "" && c.AccessSecret != ""
}

// Options configure the twitter source kind. Zero fields take the defaults;
// Credentials are required.
type Options struct {
	Credentials Credentials
	// APIURL is the base of the REST API; go-twitter's calls to
	// api.twitter.com are rewritten to it (scheme, host and path prefix).
	APIURL string
	// StreamURL is the base of the streaming API; the filter stream is
	// StreamURL + /1.1/statuses/filter.json.
	StreamURL string
	// Client supplies the transport every request goes through (its
	// timeout is not used: streams are long-lived). nil means a netguard
	// client with no allowed private ranges.
	Client *http.Client

	// The reconnect policy and the limits of a connection; each defaults
	// to the Default constant of the same name.
	HTTPBackoffMin      time.Duration
	HTTPBackoffMax      time.Duration
	RateLimitBackoffMin time.Duration
	RateLimitBackoffMax time.Duration
	NetworkBackoffStep  time.Duration
	NetworkBackoffMax   time.Duration
	StallTimeout        time.Duration
	ConnectTimeout      time.Duration
	ReopenDelay         time.Duration
	SearchTimeout       time.Duration
	MaxMessageBytes     int
	SeenLimit           int
	UserAgent           string
	// Logger receives connection changes and failures; nil discards.
	Logger *slog.Logger
}

func (o Options) withDefaults() Options {
	if o.APIURL == "" {
		o.APIURL = DefaultAPIURL
	}
	if o.StreamURL == "" {
		o.StreamURL = DefaultStreamURL
	}
	if o.Client == nil {
		o.Client = netguard.NewClient(netguard.Options{})
	}
	source.SetDefault(&o.HTTPBackoffMin, DefaultHTTPBackoffMin)
	source.SetDefault(&o.HTTPBackoffMax, DefaultHTTPBackoffMax)
	source.SetDefault(&o.RateLimitBackoffMin, DefaultRateLimitBackoffMin)
	source.SetDefault(&o.RateLimitBackoffMax, DefaultRateLimitBackoffMax)
	source.SetDefault(&o.NetworkBackoffStep, DefaultNetworkBackoffStep)
	source.SetDefault(&o.NetworkBackoffMax, DefaultNetworkBackoffMax)
	source.SetDefault(&o.StallTimeout, DefaultStallTimeout)
	source.SetDefault(&o.ConnectTimeout, DefaultConnectTimeout)
	source.SetDefault(&o.ReopenDelay, DefaultReopenDelay)
	source.SetDefault(&o.SearchTimeout, DefaultSearchTimeout)
	o.HTTPBackoffMax = max(o.HTTPBackoffMax, o.HTTPBackoffMin)
	o.RateLimitBackoffMax = max(o.RateLimitBackoffMax, o.RateLimitBackoffMin)
	o.NetworkBackoffMax = max(o.NetworkBackoffMax, o.NetworkBackoffStep)
	source.SetDefault(&o.MaxMessageBytes, DefaultMaxMessageBytes)
	source.SetDefault(&o.SeenLimit, DefaultSeenLimit)
	if o.UserAgent == "" {
		o.UserAgent = DefaultUserAgent
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// Kind builds the twitter data source of a node.
type Kind struct {
	opts      Options
	apiURL    *url.URL
	filterURL string
}

var _ source.Kind = (*Kind)(nil)

// New returns the twitter source kind. It fails when the credentials are
// incomplete or a base URL is not an http(s) URL.
func New(opts Options) (*Kind, error) {
	if !opts.Credentials.Complete() {
		return nil, errors.New("twitter: consumer key, consumer secret, access token and access secret are all required")
	}
	opts = opts.withDefaults()
	apiURL, err := baseURL("API", opts.APIURL)
	if err != nil {
		return nil, err
	}
	streamURL, err := baseURL("stream", opts.StreamURL)
	if err != nil {
		return nil, err
	}
	return &Kind{opts: opts, apiURL: apiURL, filterURL: strings.TrimSuffix(streamURL.String(), "/") + filterPath}, nil
}

func baseURL(what, raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("twitter: %s URL %q is not an http(s) URL", what, raw)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("twitter: %s URL %q must not carry a query or fragment", what, raw)
	}
	return u, nil
}

// Keys returns the node's one twitter key, after checking that Twitter can
// track every term the query needs.
func (k *Kind) Keys(sub source.Sub) ([]string, error) {
	if _, err := trackTerms(sub.Query); err != nil {
		return nil, fmt.Errorf("twitter: crawler %d: %w", sub.Spec.CrawlerID, err)
	}
	return []string{Key}, nil
}

// trackTerms compiles a subscriber's query to the widest track terms that
// cover it: every tweet the query matches contains one of them, and the
// node evaluates the whole query on what they bring.
func trackTerms(q *query.Query) ([]string, error) {
	if q == nil {
		return nil, errors.New("the query is empty")
	}
	terms, err := compileTrack(q)
	if err != nil {
		return nil, err
	}
	for _, t := range terms {
		if err := checkTerm(t); err != nil {
			return nil, err
		}
	}
	return terms, nil
}

// checkTerm refuses what the track parameter cannot carry.
func checkTerm(t string) error {
	switch {
	case len(t) > MaxTrackBytes:
		return fmt.Errorf("%w: %q is %d bytes, Twitter tracks at most %d", ErrBadTerm, t, len(t), MaxTrackBytes)
	case strings.Contains(t, ","):
		return fmt.Errorf("%w: %q contains a comma, which separates track terms", ErrBadTerm, t)
	}
	return nil
}

// New returns the node's tracker.
func (k *Kind) New(key string) (source.DataSource, error) {
	if err := source.CheckKey("twitter", key, Key); err != nil {
		return nil, err
	}
	return newTracker(k.opts, k.apiURL, k.filterURL), nil
}

// Unconfigured returns the kind to register for "twitter" on a spawn that
// has no Twitter credentials: every subscriber fails with ErrNotConfigured, and
// the spawn does not offer the kind.
func Unconfigured() source.Kind { return source.Unconfigured(ErrNotConfigured) }
