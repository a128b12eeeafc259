// Package bluesky is the Bluesky data source: one WebSocket per spawn to a
// Jetstream service (/subscribe) carrying every post as it is made; the
// node matches each against its subscribers' queries. Posts keep their
// author's handle (resolved through the AppView, filled in after the post
// is stored when not known yet), their links in full and their images' alt
// texts. Every event's time_us is a position in the service's log: a
// reconnect or a crawler moved with a cursor resumes from there, with no
// gap and no repeat (coverage.go). Why /subscribe is spoken directly:
// docs/decisions/0014-jetstream-spoken-directly.md; what a comment keeps:
// docs/sources/bluesky.md.
//
// Nothing the service sends can freeze the stream or pin a cursor. An
// event whose time_us lies more than ClockSlack past the spawn's clock
// keeps the position of the event before it (counted as future events):
// one such event would otherwise make every later post look like a repeat
// and carry the crawlers' saved cursors past them. A subscriber's cursor
// in the future (saved before this bound) reads from now, and its
// subscribers are told (ErrFutureCursor). An event over MaxMessageBytes is
// read past and dropped (too_large), the connection going on; one over
// MaxSkipBytes ends the connection, and the next starts after it (its
// time_us read from the start of the message). A connection that ends
// before any event counts as a failure, so the waits between attempts grow.
package bluesky

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source/internal/wsconn"
)

// Defaults of Options.
const (
	// DefaultJetstreamURL is Bluesky's public Jetstream in us-east.
	DefaultJetstreamURL = "wss://jetstream2.us-east.bsky.network/subscribe"
	// DefaultBackoffMin is the first wait before reconnecting after a
	// failure, as for every WebSocket source (wsconn.DefaultRetryMin).
	DefaultBackoffMin = wsconn.DefaultRetryMin
	// DefaultBackoffMax caps the reconnect wait: shorter than other
	// sources', since Jetstream replays what a reconnect missed only
	// within its window.
	DefaultBackoffMax = 2 * time.Minute
	// DefaultStallTimeout is how long the connection may stay silent
	// before it is dropped and reopened. Bluesky's network makes several
	// posts a second at any hour, so half a minute of silence is a dead
	// connection.
	DefaultStallTimeout = 30 * time.Second
	// DefaultConnectTimeout bounds the WebSocket handshake.
	DefaultConnectTimeout = wsconn.DefaultHandshakeTimeout
	// DefaultMaxMessageBytes caps one event the source decodes. Posts are
	// at most a few KiB; a larger event is skipped (see MaxSkipBytes).
	DefaultMaxMessageBytes = 1 << 20
	// DefaultMaxSkipBytes bounds an event over MaxMessageBytes that the
	// connection reads past and drops, so that an oversized event in the
	// replay window (a post with thousands of facets) is never met again.
	// A larger one ends the connection, and the next one starts after it.
	DefaultMaxSkipBytes = 64 << 20
	// DefaultClockSlack is how far past the spawn's clock an event's
	// time_us may be: the two clocks' difference. It is no more than
	// DefaultResumeOverlap, so an event up to the slack ahead cannot make
	// the posts read after it look like repeats. A later time_us is not
	// believed (see Options.ClockSlack).
	DefaultClockSlack = source.ClockSlack
	// DefaultResumeOverlap is how far before the last position read a
	// reconnect resumes, so events that reached the service slightly out
	// of order are not lost at the seam.
	DefaultResumeOverlap = 2 * time.Second
	// DefaultReplayWindow is how far back the service replays: Bluesky's
	// Jetstream keeps 36 hours. Older cursors start at its oldest event.
	DefaultReplayWindow = 36 * time.Hour
	// DefaultGapSlack is how much later than a cursor the first event
	// after a resume may be before the posts between count as skipped.
	DefaultGapSlack = 10 * time.Second
	// DefaultHandleCacheSize bounds the DIDs whose handles are
	// remembered; the oldest learned are forgotten first.
	DefaultHandleCacheSize = 200_000
	// DefaultRecentLimit bounds the post URIs remembered for the resume
	// overlap, whatever the post rate.
	DefaultRecentLimit = 1 << 16
)

const (
	// Key is the one data source key of every bluesky subscriber of a
	// node: one connection carries all of them.
	Key = "bluesky"
	// PostCollection is the collection of Bluesky posts.
	PostCollection = "app.bsky.feed.post"
	// gapErrorTTL is how long a subscriber shows that posts were skipped
	// for it.
	gapErrorTTL = time.Hour
	// maxClipBytes caps a string from the service quoted in an error.
	maxClipBytes = 40
)

// Errors the source reports through Err and ErrFor, checked with
// errors.Is.
var (
	// ErrStatus means the service refused the WebSocket handshake.
	ErrStatus = errors.New("bluesky: unexpected HTTP status")
	// ErrConnectionLost means the connection could not be opened or ended.
	ErrConnectionLost = source.NewError("bluesky: connection lost", wsconn.ErrConnectionLost)
	// ErrStalled means no event arrived for Options.StallTimeout.
	ErrStalled = source.NewError("bluesky: connection stalled", wsconn.ErrStalled)
	// ErrMessageTooLarge means one event exceeded Options.MaxMessageBytes.
	ErrMessageTooLarge = source.NewError("bluesky: message too large", wsconn.ErrMessageTooLarge)
	// ErrMalformed means an event that is not the JSON the protocol
	// defines, or a post without a usable DID, record key or record.
	ErrMalformed = errors.New("bluesky: malformed event")
	// ErrTruncated means an event whose JSON ends early.
	ErrTruncated = errors.New("bluesky: truncated event")
	// ErrSkipped means a subscriber's cursor was older than the service's
	// replay window: the posts between were never read.
	ErrSkipped = errors.New("bluesky: posts skipped")
	// ErrFutureEvent means an event whose time_us is later than the
	// spawn's clock allows: its post is handed over at the stream's
	// position, which the event does not move.
	ErrFutureEvent = errors.New("bluesky: event from the future")
	// ErrFutureCursor means a subscriber brought a cursor later than the
	// spawn's clock allows (saved before events were bounded): its query
	// reads from now.
	ErrFutureCursor = errors.New("bluesky: cursor in the future")
)

// Options configure the bluesky source kind; zero fields take the
// defaults.
type Options struct {
	// JetstreamURL is the service's /subscribe WebSocket URL (ws or wss).
	// It is the operator's configuration, not crawl input, so it is not
	// held to the crawl-target guard.
	JetstreamURL string
	// HTTPClient performs the WebSocket handshake (its transport; its
	// Timeout is replaced by ConnectTimeout). nil means
	// http.DefaultTransport.
	HTTPClient *http.Client

	// The reconnect policy and the limits of the connection; each
	// defaults to the Default constant of the same name.
	BackoffMin      time.Duration
	BackoffMax      time.Duration
	StallTimeout    time.Duration
	ConnectTimeout  time.Duration
	MaxMessageBytes int64
	MaxSkipBytes    int64
	ResumeOverlap   time.Duration
	ReplayWindow    time.Duration
	GapSlack        time.Duration
	// ClockSlack bounds an event's time_us (and a subscriber's cursor) to
	// the spawn's clock plus it: an event later than that takes the
	// position of the event read before it on the connection, so that
	// one event from the future (a broken or hostile service clock)
	// neither makes every later post look like a repeat nor carries a
	// crawler's saved cursor past them.
	ClockSlack      time.Duration
	HandleCacheSize int
	RecentLimit     int

	// AppViewURL is the AppView asked for handles
	// (app.bsky.actor.getProfiles); the operator's configuration, like
	// JetstreamURL.
	AppViewURL string
	// AppViewClient makes the getProfiles calls; nil means a client over
	// http.DefaultTransport with LookupTimeout.
	AppViewClient *http.Client
	// HandleTTL, MissingTTL, LookupLinger and LookupTimeout tune the
	// handle lookups; each defaults to the Default constant of the same
	// name.
	HandleTTL     time.Duration
	MissingTTL    time.Duration
	LookupLinger  time.Duration
	LookupTimeout time.Duration
	// TextOnly hands each post over as its text alone, under the handle
	// an identity event told, else its DID: no AppView lookups, no links,
	// alt texts or quotes (what the source did before it had them). It is
	// the baseline BenchmarkBlueskyPath measures them against, not a mode
	// for users.
	TextOnly bool
	// Compress asks the service for zstd-compressed events (with
	// Jetstream's dictionary): under half the bandwidth, for some CPU.
	Compress bool
	// Logger receives connection changes and failures; nil discards.
	Logger *slog.Logger
}

func (o Options) withDefaults() Options {
	if o.JetstreamURL == "" {
		o.JetstreamURL = DefaultJetstreamURL
	}
	source.SetDefault(&o.BackoffMin, DefaultBackoffMin)
	source.SetDefault(&o.BackoffMax, DefaultBackoffMax)
	source.SetDefault(&o.StallTimeout, DefaultStallTimeout)
	source.SetDefault(&o.ConnectTimeout, DefaultConnectTimeout)
	source.SetDefault(&o.ResumeOverlap, DefaultResumeOverlap)
	source.SetDefault(&o.ReplayWindow, DefaultReplayWindow)
	source.SetDefault(&o.GapSlack, DefaultGapSlack)
	o.BackoffMax = max(o.BackoffMax, o.BackoffMin)
	o.HTTPClient = wsconn.HandshakeClient(o.HTTPClient, o.ConnectTimeout)
	source.SetDefault(&o.MaxMessageBytes, DefaultMaxMessageBytes)
	source.SetDefault(&o.MaxSkipBytes, DefaultMaxSkipBytes)
	source.SetDefault(&o.ClockSlack, DefaultClockSlack)
	source.SetDefault(&o.HandleCacheSize, DefaultHandleCacheSize)
	source.SetDefault(&o.RecentLimit, DefaultRecentLimit)
	if o.AppViewURL == "" {
		o.AppViewURL = DefaultAppViewURL
	}
	source.SetDefault(&o.HandleTTL, DefaultHandleTTL)
	source.SetDefault(&o.MissingTTL, DefaultMissingTTL)
	source.SetDefault(&o.LookupLinger, DefaultLookupLinger)
	source.SetDefault(&o.LookupTimeout, DefaultLookupTimeout)
	if o.AppViewClient == nil {
		o.AppViewClient = &http.Client{Timeout: o.LookupTimeout}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// Kind builds the bluesky data source of a node.
type Kind struct {
	opts Options
}

var _ source.Kind = (*Kind)(nil)

// New returns the bluesky source kind. It fails for a URL that is not a
// ws(s) URL without a query.
func New(opts Options) (*Kind, error) {
	opts = opts.withDefaults()
	if _, ok := source.BaseURL(opts.JetstreamURL, "ws", "wss"); !ok {
		return nil, fmt.Errorf("bluesky: Jetstream URL %q is not a ws(s) URL without a query", opts.JetstreamURL)
	}
	if _, ok := source.BaseURL(opts.AppViewURL, "http", "https"); !ok {
		return nil, fmt.Errorf("bluesky: AppView URL %q is not an http(s) URL without a query", opts.AppViewURL)
	}
	return &Kind{opts: opts}, nil
}

// Keys returns the node's one bluesky key after checking the query.
func (k *Kind) Keys(sub source.Sub) ([]string, error) {
	if sub.Query == nil {
		return nil, fmt.Errorf("bluesky: crawler %d: the query is empty", sub.Spec.CrawlerID)
	}
	if sub.Spec.QueryUUID == "" {
		return nil, fmt.Errorf("bluesky: crawler %d: the subscriber has no query uuid", sub.Spec.CrawlerID)
	}
	return []string{Key}, nil
}

// New returns the node's Jetstream connection.
func (k *Kind) New(key string) (source.DataSource, error) {
	if err := source.CheckKey("bluesky", key, Key); err != nil {
		return nil, err
	}
	return newSource(k.opts)
}
