// Package stream is the commercial push-stream data source, shaped like
// DataSift's multi-stream API: each distinct query (query uuid) on a node is
// compiled once to a filter hash (POST /v1/compile with a CSDL definition),
// and one long-lived WebSocket per node (GET /multi) carries a subscription
// per hash. Subscribers are added and removed with subscribe and unsubscribe
// messages on the live connection, never by reconnecting; every item arrives
// wrapped with its hash and is handed to the spawn with the query uuid the
// hash stands for, so the node gives it only to that query's subscribers.
//
// The transport is a WebSocket (github.com/coder/websocket), as DataSift's
// multi-stream was: the service pushes items and ticks, the client pushes
// subscription changes, over one connection. Credentials are sent in the
// handshake's Authorization header as "username:api_key" (the format of
// DataSift's REST API) rather than in the URL, so they stay out of access
// logs. The connection is watched for silence (no tick or item for
// StallTimeout), re-established with exponential back-off and jitter, and
// every subscription is sent again after a reconnect. A refused API key
// backs off from AuthBackoffMin, so a wrong key does not hammer the service.
package stream

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/blackwidow-crawl/blackwidow/pkg/netguard"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source/internal/wsconn"
)

// Defaults of Options.
const (
	// DefaultBackoffMin, DefaultBackoffMax and DefaultAuthBackoffMin (the
	// first wait after the service refused the API key) are the reconnect
	// waits of every WebSocket source (wsconn).
	DefaultBackoffMin     = wsconn.DefaultRetryMin
	DefaultBackoffMax     = wsconn.DefaultRetryMax
	DefaultAuthBackoffMin = wsconn.DefaultRefusedMin
	// DefaultStallTimeout is how long the connection may carry neither a
	// tick nor an item before it is dropped and reopened. Ticks come
	// every 30 seconds or so.
	DefaultStallTimeout = 90 * time.Second
	// DefaultConnectTimeout bounds the WebSocket handshake.
	DefaultConnectTimeout = wsconn.DefaultHandshakeTimeout
	// DefaultRequestTimeout bounds one compile request and one write.
	DefaultRequestTimeout = 30 * time.Second
	// DefaultMaxMessageBytes caps one message from the service; a larger
	// one ends the connection.
	DefaultMaxMessageBytes = 1 << 20
)

const (
	// Key is the one data source key of every stream subscriber of a
	// node: one connection carries all of them.
	Key = "stream"
	// compilePath and multiPath are the endpoints below the base URL.
	compilePath = "/v1/compile"
	multiPath   = "/multi"
	// hashCacheLimit bounds the compiled hashes remembered for queries no
	// longer subscribed, so a query that comes back is not compiled again.
	hashCacheLimit = 4096
	// maxCompileResponseBytes caps a compile answer.
	maxCompileResponseBytes = 64 << 10
	// maxHashBytes is the longest hash accepted from the service.
	maxHashBytes = 128
	// maxTextBytes caps the text of one item.
	maxTextBytes = 32 << 10
	// maxClipBytes caps a string from the service quoted in an error.
	maxClipBytes = 40
)

// ErrNotConfigured is what a stream subscriber fails with on a spawn that
// has no stream endpoint or API key.
var ErrNotConfigured = fmt.Errorf("%w: stream endpoint and API key not configured on this spawn", source.ErrUnsupported)

// Errors the source reports through Err, checked with errors.Is.
var (
	// ErrUnauthorized means the service refused the username or API key.
	ErrUnauthorized = errors.New("stream: API key refused")
	// ErrStatus means an unexpected HTTP status.
	ErrStatus = errors.New("stream: unexpected HTTP status")
	// ErrCompile means a query could not be compiled to a hash.
	ErrCompile = errors.New("stream: unable to compile query")
	// ErrRefused means the service refused to compile a query's filter (400
	// Bad Request): its subscribers fail, the others carry on.
	ErrRefused = errors.New("stream: filter refused")
	// ErrSubscribe means the service refused a subscription.
	ErrSubscribe = errors.New("stream: subscription refused")
	// ErrStalled means neither a tick nor an item arrived for
	// Options.StallTimeout.
	ErrStalled = source.NewError("stream: connection stalled", wsconn.ErrStalled)
	// ErrConnectionLost means the connection ended.
	ErrConnectionLost = source.NewError("stream: connection lost", wsconn.ErrConnectionLost)
	// ErrMessageTooLarge means one message exceeded
	// Options.MaxMessageBytes.
	ErrMessageTooLarge = source.NewError("stream: message too large", wsconn.ErrMessageTooLarge)
	// ErrMalformed means a message that is not the JSON the protocol
	// defines.
	ErrMalformed = errors.New("stream: malformed message")
	// ErrTruncated means a message whose JSON ends early.
	ErrTruncated = errors.New("stream: truncated message")
)

// Options configure the stream source kind. URL and APIKey are required;
// zero fields take the defaults.
type Options struct {
	// URL is the service's base URL (http or https; the WebSocket uses ws
	// or wss on the same host).
	URL      string
	Username string
	APIKey   string
	// Client supplies the transport (its timeout is not used for the
	// long-lived connection). nil means a netguard client with no allowed
	// private ranges.
	Client *http.Client

	// The reconnect policy and the limits of the connection; each
	// defaults to the Default constant of the same name.
	BackoffMin      time.Duration
	BackoffMax      time.Duration
	AuthBackoffMin  time.Duration
	StallTimeout    time.Duration
	ConnectTimeout  time.Duration
	RequestTimeout  time.Duration
	MaxMessageBytes int64
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
	source.SetDefault(&o.ConnectTimeout, DefaultConnectTimeout)
	source.SetDefault(&o.RequestTimeout, DefaultRequestTimeout)
	o.BackoffMax = max(o.BackoffMax, o.BackoffMin, o.AuthBackoffMin)
	source.SetDefault(&o.MaxMessageBytes, DefaultMaxMessageBytes)
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// Kind builds the stream data source of a node.
type Kind struct {
	opts       Options
	compileURL string
	multiURL   string
}

var _ source.Kind = (*Kind)(nil)

// New returns the stream source kind. It fails without an API key or with a
// URL that is not http(s).
func New(opts Options) (*Kind, error) {
	if opts.APIKey == "" {
		return nil, errors.New("stream: an API key is required")
	}
	u, ok := source.BaseURL(opts.URL, "http", "https")
	if !ok {
		return nil, fmt.Errorf("stream: URL %q is not an http(s) base URL", opts.URL)
	}
	opts = opts.withDefaults()
	base := strings.TrimSuffix(u.String(), "/")
	ws := *u
	ws.Scheme = map[string]string{"http": "ws", "https": "wss"}[u.Scheme]
	return &Kind{opts: opts, compileURL: base + compilePath, multiURL: strings.TrimSuffix(ws.String(), "/") + multiPath}, nil
}

// Keys returns the node's one stream key after checking the query.
func (k *Kind) Keys(sub source.Sub) ([]string, error) {
	if _, err := csdl(sub.Query); err != nil {
		return nil, fmt.Errorf("stream: crawler %d: %w", sub.Spec.CrawlerID, err)
	}
	if sub.Spec.QueryUUID == "" {
		return nil, fmt.Errorf("stream: crawler %d: the subscriber has no query uuid", sub.Spec.CrawlerID)
	}
	return []string{Key}, nil
}

// New returns the node's multi-stream connection.
func (k *Kind) New(key string) (source.DataSource, error) {
	if err := source.CheckKey("stream", key, Key); err != nil {
		return nil, err
	}
	return newMulti(k.opts, k.compileURL, k.multiURL), nil
}

// Unconfigured returns the kind to register for "stream" on a spawn that
// has no stream endpoint or API key: every subscriber fails with ErrNotConfigured, and
// the spawn does not offer the kind.
func Unconfigured() source.Kind { return source.Unconfigured(ErrNotConfigured) }
