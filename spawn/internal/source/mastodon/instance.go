package mastodon

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/pkg/backoff"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source/wsconn"
)

// Stats is what one instance's data source has done since the spawn
// started, for metrics and diagnostics. The counters only grow.
type Stats struct {
	Connects   int64 // WebSocket connections opened
	Reconnects int64 // connection attempts after a failure
	Items      int64 // statuses handed to the spawn
	Duplicates int64 // statuses already handed over (another stream, a reblog)
	Ignored    int64 // events the source does not use (delete, notification…)
	Malformed  int64 // messages or statuses skipped as malformed
	Truncated  int64 // messages or payloads skipped because their JSON ends early
	TooLarge   int64 // connections closed for a message over the size cap
	Stalls     int64 // connections dropped for silence
	Refused    int64 // times the instance refused the token
	ServerErrs int64 // error events other than a refused token
}

// counters are the live Stats of one instance, shared by the data sources
// the instance's key gets over time.
type counters struct {
	connects, reconnects, items, duplicates, ignored atomic.Int64
	malformed, truncated, tooLarge, stalls, refused  atomic.Int64
	serverErrs, subscribes, unsubscribes             atomic.Int64
}

func (c *counters) snapshot() Stats {
	return Stats{
		Connects: c.connects.Load(), Reconnects: c.reconnects.Load(), Items: c.items.Load(),
		Duplicates: c.duplicates.Load(), Ignored: c.ignored.Load(), Malformed: c.malformed.Load(),
		Truncated: c.truncated.Load(), TooLarge: c.tooLarge.Load(), Stalls: c.stalls.Load(),
		Refused: c.refused.Load(), ServerErrs: c.serverErrs.Load(),
	}
}

// sub is one stream subscription: the public stream, or a hashtag's.
type sub struct {
	stream string
	tag    string
}

func (s sub) String() string {
	if s.tag == "" {
		return s.stream
	}
	return s.stream + " #" + s.tag
}

// instance is the data source of one instance: one WebSocket carrying the
// subscriptions of every subscriber.
type instance struct {
	opts    Options
	base    *url.URL
	logger  *slog.Logger
	rest    *http.Client  // instance documents
	ws      wsconn.Config // the WebSocket's handshake and limits
	changed chan struct{}
	stats   *counters
	// refusedByEvent is set when an error event refused the token on an
	// accepted connection; only an item proves the token good again.
	refusedByEvent atomic.Bool

	mu   sync.Mutex
	want map[sub]bool
	errs source.ErrorSet

	// Owned by Run's goroutine (and the reader it waits for).
	wsURL  string
	domain string // the domain of the instance's accounts
	recent *statusCache
}

func newInstance(opts Options, base *url.URL, stats *counters) *instance {
	rest := *opts.Client
	rest.Timeout = opts.ConnectTimeout
	header := http.Header{"User-Agent": {userAgent}}
	if opts.Token != "" {
		header.Set("Authorization", "Bearer "+opts.Token)
	}
	return &instance{
		opts:   opts,
		base:   base,
		logger: opts.Logger.With("source", "mastodon", "instance", base.String()),
		rest:   &rest,
		ws: wsconn.Config{
			Client:          wsconn.HandshakeClient(opts.Client, opts.ConnectTimeout),
			Header:          header,
			MaxMessageBytes: opts.MaxMessageBytes,
			Peer:            "the instance",
			Errors:          wsconn.Errors{ConnectionLost: ErrConnectionLost, Stalled: ErrStalled, MessageTooLarge: ErrMessageTooLarge},
			Counters:        wsconn.Counters{TooLarge: &stats.tooLarge}, // watch counts the stalls
		},
		changed: make(chan struct{}, 1),
		stats:   stats,
		domain:  base.Hostname(),
		want:    map[sub]bool{},
		recent:  newStatusCache(opts.StatusCacheSize),
	}
}

// SetSubscribers works out the streams the subscribers' queries need; Run
// subscribes and unsubscribes on the live connection to match. The public
// stream covers every hashtag stream, so when one query needs it (or the
// tags are more than MaxHashtagStreams) it is the only subscription. It
// never blocks: the node calls it under its lock.
func (i *instance) SetSubscribers(specs []api.SubscriberSpec) {
	want := map[sub]bool{}
	public := false
	for _, s := range specs {
		tags, pub, err := needs(s)
		if err != nil {
			continue // Keys refused it already
		}
		public = public || pub
		for _, t := range tags {
			want[sub{stream: streamHashtag, tag: t}] = true
		}
	}
	if public || len(want) > i.opts.MaxHashtagStreams {
		want = map[sub]bool{{stream: streamPublic}: true}
	}
	i.mu.Lock()
	same := maps.Equal(want, i.want)
	i.want = want
	i.mu.Unlock()
	if !same {
		source.Signal(i.changed)
	}
}

// wanted returns the subscriptions the subscribers need, sorted.
func (i *instance) wanted() []sub {
	i.mu.Lock()
	defer i.mu.Unlock()
	return slices.SortedFunc(maps.Keys(i.want), cmpSub)
}

func cmpSub(a, b sub) int {
	return cmp.Or(cmp.Compare(a.stream, b.stream), cmp.Compare(a.tag, b.tag))
}

// Err joins the current errors of the connection and its messages.
func (i *instance) Err() error { return i.errs.Err() }

// Stats returns the instance's counters.
func (i *instance) Stats() Stats { return i.stats.snapshot() }

// setErr records a part's error: a refused token fails the subscribers,
// anything else passes.
func (i *instance) setErr(part string, err error) {
	i.errs.Set(part, source.DegradedUnless(err, ErrTokenRefused))
}

// Run keeps the connection up until ctx ends: discover the streaming URL,
// connect, subscribe every wanted stream, follow subscriber changes, and
// reconnect with back-off after any failure — from AuthBackoffMin after the
// token was refused.
func (i *instance) Run(ctx context.Context, emit source.Emit) {
	refused := func(err error) bool { return errors.Is(err, ErrTokenRefused) }
	loop := wsconn.Loop{
		Backoff: wsconn.Backoff{
			Retry:   backoff.Policy{Min: i.opts.BackoffMin, Max: i.opts.BackoffMax},
			Refused: backoff.Policy{Min: i.opts.AuthBackoffMin, Max: i.opts.BackoffMax},
		},
		Refused: refused,
		Failed: func(err error) {
			if refused(err) {
				i.stats.refused.Add(1)
			}
			i.setErr(source.PartConnection, err)
		},
		Logger: i.logger,
		Name:   "mastodon",
	}
	first := true
	loop.Run(ctx, func(ctx context.Context) (bool, error) {
		if !first {
			i.stats.reconnects.Add(1)
		}
		first = false
		return i.connect(ctx, emit)
	})
}

// connect opens the WebSocket and serves it until it fails. healthy says
// whether the connection carried anything valid before it did.
func (i *instance) connect(ctx context.Context, emit source.Emit) (healthy bool, err error) {
	if i.wsURL == "" {
		i.wsURL = i.discover(ctx)
	}
	s := &session{instance: i}
	s.seen()
	cfg := i.ws
	cfg.OnPing = func(context.Context, []byte) bool { s.alive(); return true }
	cfg.OnPong = func(context.Context, []byte) { s.alive() }
	c, err := wsconn.Dial(ctx, i.wsURL, &cfg)
	if err != nil {
		err = i.dialError(err)
		if !errors.Is(err, ErrTokenRefused) {
			i.wsURL = "" // the instance may have moved its streaming API
		}
		return false, err
	}
	defer c.CloseNow()
	s.conn = c
	i.stats.connects.Add(1)
	i.logger.Info("mastodon connected", "url", i.wsURL)
	err = s.serve(ctx, emit)
	return s.healthy.Load(), err
}

// dialError maps a refused handshake to ErrTokenRefused or ErrStatus.
func (i *instance) dialError(err error) error {
	var he *wsconn.HandshakeError
	if !errors.As(err, &he) {
		return err
	}
	detail := ""
	var doc struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(he.Body, &doc) == nil && doc.Error != "" {
		detail = ": " + clip(doc.Error)
	}
	switch he.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden:
		return fmt.Errorf("%w: %s answered %s%s; check the spawn's Mastodon access token (a user token with read:statuses)", ErrTokenRefused, i.base.Host, he.Status, detail)
	}
	return fmt.Errorf("%w: %s answered %s%s", ErrStatus, i.base.Host, he.Status, detail)
}

// Report gives the instance's counters to the spawn's metrics.
func (i *instance) Report() []source.Stat {
	st := i.Stats()
	return append(source.StandardStats(st.Items, st.Reconnects, st.Stalls, map[string]int64{
		"malformed": st.Malformed, "truncated": st.Truncated, "too_large": st.TooLarge, "duplicate": st.Duplicates,
	}), source.Stat{Name: "bw_spawn_mastodon_token_refusals_total", Help: "Times a Mastodon instance refused the access token.", Value: float64(st.Refused)})
}
