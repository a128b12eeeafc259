// Package mastodon is the Mastodon data source: one multiplexed WebSocket
// per instance (/api/v1/streaming) carrying the hashtag or public streams
// its subscribers' queries need, or, on an instance whose live feeds are
// closed, the home timeline of an account that follows the queries' tags.
// Statuses become items keyed by their federation uri, so a status read
// through two instances is one comment; replies are linked by uri, never by
// an instance's local id. The streaming host an instance advertises is used
// only when it is the instance's host or a subdomain and keeps TLS, so the
// token (sent in the handshake's Authorization header, never the URL) never
// reaches a third party. What a comment keeps and how closed feeds are
// served: docs/sources/mastodon.md.
package mastodon

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/blackwidow-crawl/blackwidow/pkg/netguard"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source/internal/wsconn"
)

// Defaults of Options.
const (
	// DefaultBackoffMin, DefaultBackoffMax and DefaultAuthBackoffMin (the
	// first wait after the instance refused the token) are the reconnect
	// waits of every WebSocket source (wsconn).
	DefaultBackoffMin     = wsconn.DefaultRetryMin
	DefaultBackoffMax     = wsconn.DefaultRetryMax
	DefaultAuthBackoffMin = wsconn.DefaultRefusedMin
	// DefaultStallTimeout is how long a connection may carry no message,
	// ping or pong before it is dropped and reopened: three missed pings.
	DefaultStallTimeout = 90 * time.Second
	// DefaultPingInterval is how often the source pings the instance, so a
	// quiet hashtag stream still proves the connection alive.
	DefaultPingInterval = 30 * time.Second
	// DefaultConnectTimeout bounds the instance discovery requests and the
	// WebSocket handshake.
	DefaultConnectTimeout = wsconn.DefaultHandshakeTimeout
	// DefaultWriteTimeout bounds sending one subscribe or unsubscribe
	// message.
	DefaultWriteTimeout = 10 * time.Second
	// DefaultMaxMessageBytes caps one message from the instance; a larger
	// one closes the connection. A status with every field filled stays
	// well below it.
	DefaultMaxMessageBytes = 1 << 20
	// DefaultMaxHashtagStreams caps the hashtag streams one connection
	// subscribes; when the queries need more, the source subscribes the
	// public stream instead, which covers them all.
	DefaultMaxHashtagStreams = 100
	// DefaultStatusCacheSize bounds the statuses remembered per instance
	// (local id → uri and thread), which link replies to their parents and
	// drop a status that arrives through several streams.
	DefaultStatusCacheSize = 50_000
	// DefaultClosedAfterDeletes is how many delete events in a row, with
	// no status between them, make the public stream count as closed: an
	// open one carries far more statuses than deletes.
	DefaultClosedAfterDeletes = 25
	// DefaultFollowCheckInterval is how often the source checks that the
	// account still follows the tags it needs.
	DefaultFollowCheckInterval = time.Minute
	// DefaultUnfollowTimeout bounds letting the tags go when a data
	// source stops.
	DefaultUnfollowTimeout = 5 * time.Second
	// DefaultResolveRate is how many reply contexts a second the source
	// may look up on one instance (Mastodon allows an account 300 calls
	// in 5 minutes); DefaultResolveBurst how many at once.
	DefaultResolveRate  = 1.0
	DefaultResolveBurst = 10
	// DefaultReplyWait is how long a reply whose parent is unknown may
	// wait for a look-up the instance's rate limit allows (or for its
	// parent to arrive) before it is handed over without reply_to; the
	// statuses that arrived after it wait behind it, so their order, and
	// the crawlers' cursors, stay the instance's.
	DefaultReplyWait = 30 * time.Second
	// DefaultReplyQueue bounds the statuses waiting so: past it the
	// oldest goes without reply_to.
	DefaultReplyQueue = 1000
)

// Bounds on what a status carries into an item.
const (
	// maxTextBytes caps the text of one item.
	maxTextBytes = 32 << 10
	// maxAuthorBytes caps an author (user@domain; a domain is at most 253
	// bytes).
	maxAuthorBytes = 320
	// maxLocalIDBytes caps an instance-local status id.
	maxLocalIDBytes = 64
	// maxLangBytes caps a language code.
	maxLangBytes = 16
	// maxLinks caps the links of one item.
	maxLinks = 64
	// maxExtraLines bounds the lines a status's card and media add to its
	// text (a card's title and URL, four images on Mastodon, more from
	// other servers), as the bluesky source bounds an embed's.
	maxExtraLines = 16
	// maxContextBytes caps a status context answer.
	maxContextBytes = 8 << 20
	// maxInstanceDocBytes caps an /api/v*/instance answer.
	maxInstanceDocBytes = 256 << 10
	// maxClipBytes caps a string from the instance quoted in an error or
	// a log.
	maxClipBytes = 80
	// streamingPath is the WebSocket endpoint below the streaming base URL.
	streamingPath = "/api/v1/streaming"
	// keyPrefix starts every data source key of this kind; the rest is the
	// instance's base URL.
	keyPrefix = "mastodon:"
	// userAgent names the spawn to the instances.
	userAgent = "BlackWidow-Spawn/1.0"
)

// ErrNotConfigured is what a mastodon subscriber fails with on a spawn that
// has no instance configured.
var ErrNotConfigured = fmt.Errorf("%w: no Mastodon instance configured on this spawn", source.ErrUnsupported)

// Errors the source reports through Err, checked with errors.Is.
var (
	// ErrTokenRefused means the instance refused the access token (or
	// requires one): the subscribers fail until an operator fixes it.
	ErrTokenRefused = errors.New("mastodon: access token refused")
	// ErrStatus means an unexpected HTTP status at the handshake.
	ErrStatus = errors.New("mastodon: unexpected HTTP status")
	// ErrConnectionLost means the connection ended.
	ErrConnectionLost = source.NewError("mastodon: connection lost", wsconn.ErrConnectionLost)
	// ErrStalled means nothing arrived for Options.StallTimeout.
	ErrStalled = source.NewError("mastodon: connection stalled", wsconn.ErrStalled)
	// ErrMessageTooLarge means one message exceeded
	// Options.MaxMessageBytes.
	ErrMessageTooLarge = source.NewError("mastodon: message too large", wsconn.ErrMessageTooLarge)
	// ErrMalformed means a message or status that is not what the
	// protocol defines.
	ErrMalformed = errors.New("mastodon: malformed message")
	// ErrTruncated means a message or payload whose JSON ends early.
	ErrTruncated = errors.New("mastodon: truncated message")
	// ErrServer means an error event from the instance (an unknown stream,
	// a missing tag).
	ErrServer = errors.New("mastodon: the instance reported an error")
	// ErrLiveFeedsClosed fails a query that needs free text on an
	// instance whose live feeds are closed to the token.
	ErrLiveFeedsClosed = errors.New("mastodon: live feeds closed")
	// ErrFollowRefused means the instance refused to list, follow or
	// unfollow tags for the token (it lacks read:follows or
	// write:follows): hashtag subscribers on an instance with closed
	// feeds fail until an operator fixes it.
	ErrFollowRefused = errors.New("mastodon: tag follows refused")
)

// Options configure the mastodon source kind. Instances is required; zero
// fields take the defaults.
type Options struct {
	// Instances are the base URLs (http or https) of the instances to
	// read, one or several.
	Instances []string
	// Token is the access token: a user token with read:statuses, which
	// Mastodon 4.2 and later require for the public and hashtag streams.
	Token string
	// Client supplies the transport (its timeout is not used for the
	// long-lived connection). nil means a netguard client with no allowed
	// private ranges.
	Client *http.Client

	// The reconnect policy and the limits of a connection; each defaults
	// to the Default constant of the same name.
	BackoffMin        time.Duration
	BackoffMax        time.Duration
	AuthBackoffMin    time.Duration
	StallTimeout      time.Duration
	PingInterval      time.Duration
	ConnectTimeout    time.Duration
	WriteTimeout      time.Duration
	MaxMessageBytes   int64
	MaxHashtagStreams int
	StatusCacheSize   int
	// Closed feeds, and reply look-ups; each defaults to the Default
	// constant of the same name.
	ClosedAfterDeletes  int
	FollowCheckInterval time.Duration
	UnfollowTimeout     time.Duration
	ResolveRate         float64
	ResolveBurst        int
	ReplyWait           time.Duration
	ReplyQueue          int
	// MaxBackfillPages bounds the timeline pages one gap reads; it
	// defaults to DefaultMaxBackfillPages.
	MaxBackfillPages int
	// Logger receives connection changes and failures; nil discards.
	Logger *slog.Logger
}

func (o Options) withDefaults() Options {
	if o.Client == nil {
		o.Client = netguard.NewClient(netguard.Options{})
	}
	source.SetDefault(&o.BackoffMin, DefaultBackoffMin)
	source.SetDefault(&o.BackoffMax, DefaultBackoffMax)
	source.SetDefault(&o.AuthBackoffMin, DefaultAuthBackoffMin)
	source.SetDefault(&o.StallTimeout, DefaultStallTimeout)
	source.SetDefault(&o.PingInterval, DefaultPingInterval)
	source.SetDefault(&o.ConnectTimeout, DefaultConnectTimeout)
	source.SetDefault(&o.WriteTimeout, DefaultWriteTimeout)
	o.BackoffMax = max(o.BackoffMax, o.BackoffMin, o.AuthBackoffMin)
	source.SetDefault(&o.MaxMessageBytes, DefaultMaxMessageBytes)
	source.SetDefault(&o.MaxHashtagStreams, DefaultMaxHashtagStreams)
	source.SetDefault(&o.StatusCacheSize, DefaultStatusCacheSize)
	source.SetDefault(&o.ClosedAfterDeletes, DefaultClosedAfterDeletes)
	source.SetDefault(&o.FollowCheckInterval, DefaultFollowCheckInterval)
	source.SetDefault(&o.UnfollowTimeout, DefaultUnfollowTimeout)
	source.SetDefault(&o.ResolveBurst, DefaultResolveBurst)
	source.SetDefault(&o.ReplyWait, DefaultReplyWait)
	source.SetDefault(&o.ReplyQueue, DefaultReplyQueue)
	source.SetDefault(&o.MaxBackfillPages, DefaultMaxBackfillPages)
	if o.ResolveRate <= 0 {
		o.ResolveRate = DefaultResolveRate
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// Kind builds the mastodon data sources of a node: one per instance.
type Kind struct {
	opts      Options
	instances map[string]*url.URL // key → instance base URL
	keys      []string            // sorted
	// stats are the counters of each key, kept across the data sources
	// the key gets over time so they only grow.
	stats map[string]*counters
	// follows are the tag follows of each key, shared by the data sources
	// the key gets over time.
	follows map[string]*tagFollows
}

var _ source.Kind = (*Kind)(nil)

// New returns the mastodon source kind. It fails without an instance or
// with an instance URL that is not an http(s) base URL.
func New(opts Options) (*Kind, error) {
	k := &Kind{instances: map[string]*url.URL{}, stats: map[string]*counters{}, follows: map[string]*tagFollows{}}
	for _, raw := range opts.Instances {
		raw = strings.TrimSpace(raw)
		if raw == "" {
			continue
		}
		u, err := instanceURL(raw)
		if err != nil {
			return nil, err
		}
		key := keyPrefix + u.String()
		if _, dup := k.instances[key]; !dup {
			k.instances[key] = u
			k.stats[key] = &counters{}
			k.follows[key] = newTagFollows()
			k.keys = append(k.keys, key)
		}
	}
	if len(k.keys) == 0 {
		return nil, errors.New("mastodon: at least one instance URL is required")
	}
	slices.Sort(k.keys)
	k.opts = opts.withDefaults()
	return k, nil
}

// instanceURL checks and normalises an instance base URL: lower-case scheme
// and host, no trailing slash, no credentials, query or fragment.
func instanceURL(raw string) (*url.URL, error) {
	u, ok := source.BaseURL(raw, "http", "https")
	if !ok || u.User != nil {
		return nil, fmt.Errorf("mastodon: instance URL %q is not an http(s) base URL", raw)
	}
	u.Scheme = strings.ToLower(u.Scheme)
	u.Host = strings.ToLower(u.Host)
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.RawPath = ""
	return u, nil
}

// Keys returns one key per configured instance after checking the query:
// every subscriber reads every instance.
func (k *Kind) Keys(sub source.Sub) ([]string, error) {
	if _, _, err := needs(sub.Query); err != nil {
		return nil, fmt.Errorf("mastodon: crawler %d: %w", sub.Spec.CrawlerID, err)
	}
	return slices.Clone(k.keys), nil
}

// New returns the data source of one instance.
func (k *Kind) New(key string) (source.DataSource, error) {
	u, ok := k.instances[key]
	if !ok {
		return nil, fmt.Errorf("mastodon: data source key %q names no configured instance", key)
	}
	return newInstance(k.opts, u, k.stats[key], k.follows[key]), nil
}

// Stats returns the counters of every configured instance, by instance
// base URL, for metrics: they cover every data source the instance had
// since the kind was built.
func (k *Kind) Stats() map[string]Stats {
	out := make(map[string]Stats, len(k.stats))
	for key, c := range k.stats {
		out[k.instances[key].String()] = c.snapshot()
	}
	return out
}

// Unconfigured returns the kind to register for "mastodon" on a spawn that
// has no instance configured: every subscriber fails with ErrNotConfigured,
// and the spawn does not offer the kind.
func Unconfigured() source.Kind { return source.Unconfigured(ErrNotConfigured) }
