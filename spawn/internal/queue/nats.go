package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/blackwidow-crawl/blackwidow/api"
)

// Defaults of the JetStream stream the spawn creates when it is missing.
const (
	// DefaultStream names the stream that keeps the comments.
	DefaultStream = "BW_COMMENTS"
	// DefaultMaxAge is how long the stream keeps a comment: long enough
	// for a consumer to be down over a weekend and catch up.
	DefaultMaxAge = 7 * 24 * time.Hour
	// DuplicateWindow is how long JetStream remembers a Nats-Msg-Id and
	// drops a re-sent comment (the server's own default, set explicitly so
	// the promise does not change with the server). It is cut to the max
	// age when that is shorter.
	DuplicateWindow = 2 * time.Minute
)

// Connection tuning.
const (
	// connectTimeout bounds dialling one server.
	connectTimeout = 5 * time.Second
	// setupTimeout bounds detecting JetStream and setting up the stream at
	// start.
	setupTimeout = 10 * time.Second
	// reconnectWait is the pause between reconnect attempts to a server;
	// reconnectJitter (reconnectJitterTLS for tls://) is added at random
	// so that a fleet of spawns does not reconnect in lockstep.
	reconnectWait      = time.Second
	reconnectJitter    = 500 * time.Millisecond
	reconnectJitterTLS = time.Second
	// pingInterval and maxPingsOut detect a server that went away without
	// closing the connection, within about their product.
	pingInterval = 10 * time.Second
	maxPingsOut  = 3
	// publishTimeout bounds publishing one batch (its acks or its flush);
	// a batch that takes longer fails and the writer retries it.
	publishTimeout = 10 * time.Second
	// maxAcksInFlight bounds the JetStream publishes of one batch awaiting
	// their ack: the writer's largest batch, so a batch goes out in one
	// stream and its acks come back while it is still being sent (256 was
	// measured about 15 % slower with BenchmarkPublish).
	maxAcksInFlight = 512
)

// publishMode is how a batch is published. BenchmarkPublish on the 2-core
// test machine (other builds running beside it, so the numbers are noisy:
// medians of 5 runs, each run's number in brackets), nats-server 2.9.10 from
// Debian bookworm on loopback with file storage; one op is a batch of 512
// comments of ~400 bytes of JSON:
//
//	jetstream, async, 512 acks in flight     73,364 comments/s  (56,833 56,764 73,364 74,298 76,879)
//	jetstream, sync, one ack at a time        8,384 comments/s  (8,592 8,384 7,918 8,830 7,306)
//	core nats, publish + one flush          211,567 comments/s  (191,534 209,042 237,036 211,567 238,296)
//
// A sync publish waits a round trip and the stream's write for every
// comment; async sends the batch at once and collects the acks as they come,
// for the same promise (every comment acknowledged before Publish returns).
// So async is the JetStream mode; sync stays for the benchmark's comparison.
// Core NATS is fastest because the server keeps nothing.
type publishMode int

const (
	modeJetStreamAsync publishMode = iota
	modeJetStreamSync
	modeCore
)

func (m publishMode) String() string {
	switch m {
	case modeJetStreamAsync, modeJetStreamSync:
		return "jetstream"
	}
	return "core"
}

// ErrNotConnected is returned by Publish while the connection to NATS is
// down (it reconnects by itself; the caller retries).
var ErrNotConnected = errors.New("queue: not connected to nats")

// Options configure a NATS publisher.
type Options struct {
	// URL is nats://host:port or tls://host:port, several separated by
	// commas for the servers of one cluster. Credentials may be given as
	// nats://user:password@host or nats://token@host. The last server may
	// be followed by ?replicas=N (see Replicas).
	URL string
	// CredsFile is a NATS credentials file (user JWT and nkey seed).
	CredsFile string
	// Name is the connection's name, shown by the server's monitoring.
	Name string
	// Stream names the JetStream stream (default DefaultStream).
	Stream string
	// MaxAge is how long the stream keeps a comment (default
	// DefaultMaxAge).
	MaxAge time.Duration
	// Replicas is how many servers of a JetStream cluster keep the stream
	// when the spawn creates it; zero takes the URL's replicas parameter
	// (nats://a,nats://b,nats://c?replicas=3), else 1.
	Replicas int
	// Logger receives connection events.
	Logger *slog.Logger
	// Registerer is the spawn's metrics registry, which GET /metrics
	// serves; nil leaves the publisher's metrics on no registry.
	Registerer prometheus.Registerer
}

// Conn publishes comments to NATS: to JetStream, with acknowledgements and
// de-duplication, when the server has it, else with core NATS.
type Conn struct {
	nc       *nats.Conn
	js       jetstream.JetStream // nil on core NATS
	mode     publishMode
	prefix   string
	stream   string
	maxAge   time.Duration
	replicas int
	logger   *slog.Logger
	metrics  metrics
	// checkStream is set when a publish found no stream listening, so
	// the next Publish sets the stream up again first.
	checkStream atomic.Bool
}

var _ Publisher = (*Conn)(nil)

// maxReplicas is JetStream's limit on a stream's replicas.
const maxReplicas = 5

// ParseURL checks a --queue URL and returns it with credentials removed,
// for logs and errors.
func ParseURL(raw string) (redacted string, err error) {
	q, err := parseURL(raw)
	if err != nil {
		return "", err
	}
	return q.shown, nil
}

// queueURL is a parsed --queue URL.
type queueURL struct {
	servers  string // for nats.Connect: comma-separated, no parameters
	shown    string // for logs: without credentials
	replicas int    // the replicas parameter, 0 when absent
}

// parseURL parses one or more comma-separated server URLs; the last may
// end in ?replicas=N, which applies to the stream, not to that server.
func parseURL(raw string) (queueURL, error) {
	if strings.TrimSpace(raw) == "" {
		return queueURL{}, errors.New("queue: empty URL (want nats://host:port or tls://host:port)")
	}
	var servers, shown []string
	var q queueURL
	list := strings.Split(raw, ",")
	for i, s := range list {
		s = strings.TrimSpace(s)
		u, err := url.Parse(s)
		if err != nil || u.Host == "" || u.Opaque != "" {
			return queueURL{}, fmt.Errorf("queue: URL %q names no server (want nats://host:port or tls://host:port)", redactOne(s))
		}
		one := redactOne(s)
		if u.Scheme != "nats" && u.Scheme != "tls" {
			return queueURL{}, fmt.Errorf("queue: URL %q has scheme %q; only nats:// and tls:// are supported", one, u.Scheme)
		}
		if u.RawQuery != "" && i == len(list)-1 {
			n, err := parseReplicas(u.RawQuery)
			if err != nil {
				return queueURL{}, fmt.Errorf("queue: URL %q: %w", one, err)
			}
			q.replicas = n
			s, one = strings.TrimSuffix(s, "?"+u.RawQuery), strings.TrimSuffix(one, "?"+u.RawQuery)
		} else if u.RawQuery != "" {
			return queueURL{}, fmt.Errorf("queue: URL %q must name only a server (parameters go after the last server)", one)
		}
		if (u.Path != "" && u.Path != "/") || u.Fragment != "" {
			return queueURL{}, fmt.Errorf("queue: URL %q must name only a server (no path or fragment)", one)
		}
		servers, shown = append(servers, s), append(shown, one)
	}
	q.servers, q.shown = strings.Join(servers, ","), strings.Join(shown, ",")
	if q.replicas > 0 {
		q.shown += fmt.Sprintf("?replicas=%d", q.replicas)
	}
	return q, nil
}

// parseReplicas reads replicas=N, the only parameter a --queue URL takes.
func parseReplicas(rawQuery string) (int, error) {
	v, err := url.ParseQuery(rawQuery)
	if err != nil || len(v) != 1 || len(v["replicas"]) != 1 {
		return 0, fmt.Errorf("must name only a server and at most the parameter replicas=N, not %q", rawQuery)
	}
	n, err := strconv.Atoi(v.Get("replicas"))
	if err != nil || n < 1 || n > maxReplicas {
		return 0, fmt.Errorf("replicas=%s: want 1 to %d", v.Get("replicas"), maxReplicas)
	}
	return n, nil
}

// redactOne drops the credentials of one server URL.
func redactOne(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		if i := strings.LastIndexByte(s, '@'); i >= 0 {
			return "***@" + s[i+1:]
		}
		return s
	}
	u.User = nil
	return strings.Replace(u.String(), "://", "://***@", 1)
}

// Connect connects to NATS, detects JetStream and, when the server has it,
// makes sure the stream exists. A server that cannot be reached at start
// is an error; after that the connection reconnects forever.
func Connect(ctx context.Context, o Options) (*Conn, error) {
	return connect(ctx, o, SubjectPrefix)
}

func connect(ctx context.Context, o Options, prefix string) (*Conn, error) {
	q, err := parseURL(o.URL)
	if err != nil {
		return nil, err
	}
	shown := q.shown
	if o.Replicas == 0 {
		o.Replicas = max(q.replicas, 1)
	}
	if o.Replicas < 1 || o.Replicas > maxReplicas {
		return nil, fmt.Errorf("queue: replicas must be 1 to %d, got %d", maxReplicas, o.Replicas)
	}
	if o.Stream == "" {
		o.Stream = DefaultStream
	}
	if o.MaxAge == 0 {
		o.MaxAge = DefaultMaxAge
	}
	if o.MaxAge < 0 {
		return nil, fmt.Errorf("queue: max age must be positive, got %s", o.MaxAge)
	}
	logger := o.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	logger = logger.With("component", "queue")
	opts := []nats.Option{
		nats.Name(o.Name),
		nats.Timeout(connectTimeout),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(reconnectWait),
		nats.ReconnectJitter(reconnectJitter, reconnectJitterTLS),
		nats.PingInterval(pingInterval),
		nats.MaxPingsOutstanding(maxPingsOut),
		// No buffering while reconnecting: a publish then fails at once
		// and the writer retries the batch, instead of the client piling
		// up copies of retried batches to send when the server is back.
		nats.ReconnectBufSize(-1),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			logger.Warn("queue disconnected, reconnecting", "err", err)
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			logger.Info("queue reconnected", "server", nc.ConnectedUrlRedacted())
		}),
		nats.ClosedHandler(func(*nats.Conn) { logger.Info("queue connection closed") }),
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			if sub != nil {
				logger.Warn("queue error", "subject", sub.Subject, "err", err)
				return
			}
			logger.Warn("queue error", "err", err)
		}),
	}
	if o.CredsFile != "" {
		opts = append(opts, nats.UserCredentials(o.CredsFile))
	}
	nc, err := nats.Connect(q.servers, opts...)
	if err != nil {
		return nil, fmt.Errorf("queue: unable to connect to %s: %w", shown, err)
	}
	c := &Conn{nc: nc, mode: modeCore, prefix: prefix, stream: o.Stream, maxAge: o.MaxAge, replicas: o.Replicas, logger: logger, metrics: newMetrics(o.Registerer)}
	sctx, cancel := context.WithTimeout(ctx, setupTimeout)
	defer cancel()
	if err := c.detect(sctx); err != nil {
		nc.Close()
		return nil, err
	}
	attrs := []any{"server", nc.ConnectedUrlRedacted(), "server_version", nc.ConnectedServerVersion(), "mode", c.mode.String(), "subjects", c.prefix + ".>"}
	if c.js != nil {
		attrs = append(attrs, "stream", c.stream)
	}
	logger.Info("queue connected", attrs...)
	return c, nil
}

// detect chooses JetStream when the server (and account) has it.
func (c *Conn) detect(ctx context.Context) error {
	js, err := jetstream.New(c.nc,
		// Headroom over one batch's window for concurrent writers.
		jetstream.WithPublishAsyncMaxPending(2*maxAcksInFlight),
		jetstream.WithPublishAsyncTimeout(publishTimeout))
	if err != nil {
		return fmt.Errorf("queue: unable to use jetstream: %w", err)
	}
	if _, err := js.AccountInfo(ctx); err != nil {
		if errors.Is(err, jetstream.ErrJetStreamNotEnabled) || errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount) {
			c.logger.Warn("queue server has no jetstream: publishing with core nats, comments published while no consumer is subscribed are lost to it", "err", err)
			return nil
		}
		return fmt.Errorf("queue: unable to detect jetstream: %w", err)
	}
	c.js, c.mode = js, modeJetStreamAsync
	return c.ensureStream(ctx)
}

// ensureStream creates the stream when it is missing. An existing stream
// keeps what its operator configured (replicas, limits), except the max
// age, which follows the spawn's setting.
func (c *Conn) ensureStream(ctx context.Context) error {
	subjects := c.prefix + ".>"
	dup := min(DuplicateWindow, c.maxAge)
	s, err := c.js.Stream(ctx, c.stream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		_, err = c.js.CreateStream(ctx, jetstream.StreamConfig{
			Name:        c.stream,
			Description: "Comments stored by Black Widow spawns, by crawler: " + c.prefix + ".<crawler id>",
			Subjects:    []string{subjects},
			Storage:     jetstream.FileStorage,
			Retention:   jetstream.LimitsPolicy,
			Discard:     jetstream.DiscardOld,
			MaxAge:      c.maxAge,
			Duplicates:  dup,
			Replicas:    c.replicas,
		})
		if err == nil {
			c.logger.Info("queue stream created", "stream", c.stream, "subjects", subjects, "max_age", c.maxAge, "replicas", c.replicas)
			return nil
		}
		if !errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			return fmt.Errorf("queue: unable to create stream %s: %w", c.stream, err)
		}
		// Another spawn created it meanwhile.
		s, err = c.js.Stream(ctx, c.stream)
	}
	if err != nil {
		return fmt.Errorf("queue: unable to look up stream %s: %w", c.stream, err)
	}
	cfg := s.CachedInfo().Config
	if !slices.Contains(cfg.Subjects, subjects) {
		return fmt.Errorf("queue: stream %s exists but does not take %s (its subjects: %s)", c.stream, subjects, strings.Join(cfg.Subjects, ", "))
	}
	if cfg.Replicas != c.replicas && c.replicas > 1 {
		c.logger.Warn("queue stream keeps its own replicas", "stream", c.stream, "replicas", cfg.Replicas, "asked", c.replicas)
	}
	if cfg.MaxAge != c.maxAge {
		cfg.MaxAge = c.maxAge
		cfg.Duplicates = min(cfg.Duplicates, c.maxAge)
		if _, err := c.js.UpdateStream(ctx, cfg); err != nil {
			return fmt.Errorf("queue: unable to set the max age of stream %s: %w", c.stream, err)
		}
		c.logger.Info("queue stream max age changed", "stream", c.stream, "max_age", c.maxAge)
	}
	return nil
}

// Publish publishes every comment of a batch to comments.<crawler id> and
// returns once all are acknowledged (JetStream) or flushed (core NATS).
// On error some comments may have been published; the caller retries the
// whole batch.
func (c *Conn) Publish(ctx context.Context, comments []api.Comment) error {
	if len(comments) == 0 {
		return nil
	}
	if err := c.publish(ctx, comments); err != nil {
		c.metrics.publishErrors.Inc()
		return err
	}
	c.metrics.published.Add(float64(len(comments)))
	return nil
}

func (c *Conn) publish(ctx context.Context, comments []api.Comment) error {
	if !c.nc.IsConnected() {
		if c.nc.IsClosed() {
			return fmt.Errorf("queue: unable to publish: %w", nats.ErrConnectionClosed)
		}
		return ErrNotConnected
	}
	ctx, cancel := context.WithTimeout(ctx, publishTimeout)
	defer cancel()
	if c.js != nil && c.checkStream.Load() {
		if err := c.ensureStream(ctx); err != nil {
			return err
		}
		c.checkStream.Store(false)
	}
	msgs := make([]*nats.Msg, len(comments))
	for i, cm := range comments {
		data, err := json.Marshal(cm)
		if err != nil {
			return fmt.Errorf("queue: unable to encode comment %s: %w", cm.ID, err)
		}
		msgs[i] = &nats.Msg{Subject: subject(c.prefix, cm.CrawlerID), Data: data}
		if c.js != nil {
			msgs[i].Header = nats.Header{jetstream.MsgIDHeader: []string{msgID(cm)}}
		}
	}
	var err error
	switch c.mode {
	case modeJetStreamAsync:
		err = c.publishAsync(ctx, msgs)
	case modeJetStreamSync:
		err = c.publishSync(ctx, msgs)
	default:
		err = c.publishCore(ctx, msgs)
	}
	if errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, nats.ErrNoResponders) {
		if !c.checkStream.Swap(true) {
			c.logger.Warn("queue stream not answering, setting it up again before the next publish", "stream", c.stream)
		}
	}
	return err
}

// msgID is a comment's Nats-Msg-Id: JetStream drops a second message with
// the same id within its duplicate window.
func msgID(cm api.Comment) string { return fmt.Sprintf("%d:%s", cm.CrawlerID, cm.ID) }

// publishAsync publishes with at most maxAcksInFlight acks outstanding and
// waits for every ack.
func (c *Conn) publishAsync(ctx context.Context, msgs []*nats.Msg) error {
	futures := make([]jetstream.PubAckFuture, 0, len(msgs))
	wait := func(f jetstream.PubAckFuture) error {
		select {
		case <-f.Ok():
			return nil
		case err := <-f.Err():
			return fmt.Errorf("queue: unable to publish to %s: %w", f.Msg().Subject, err)
		case <-ctx.Done():
			return fmt.Errorf("queue: no ack from stream %s: %w", c.stream, ctx.Err())
		}
	}
	for i, m := range msgs {
		if i >= maxAcksInFlight {
			if err := wait(futures[i-maxAcksInFlight]); err != nil {
				return err
			}
		}
		f, err := c.js.PublishMsgAsync(m)
		if err != nil {
			return fmt.Errorf("queue: unable to publish to %s: %w", m.Subject, err)
		}
		futures = append(futures, f)
	}
	for _, f := range futures[max(0, len(futures)-maxAcksInFlight):] {
		if err := wait(f); err != nil {
			return err
		}
	}
	return nil
}

// publishSync publishes one message at a time, each waiting for its ack.
func (c *Conn) publishSync(ctx context.Context, msgs []*nats.Msg) error {
	for _, m := range msgs {
		if _, err := c.js.PublishMsg(ctx, m); err != nil {
			return fmt.Errorf("queue: unable to publish to %s: %w", m.Subject, err)
		}
	}
	return nil
}

// publishCore publishes with core NATS and flushes: when the flush returns,
// the server has every message and has passed it to the subscribers it has.
func (c *Conn) publishCore(ctx context.Context, msgs []*nats.Msg) error {
	for _, m := range msgs {
		if err := c.nc.PublishMsg(m); err != nil {
			return fmt.Errorf("queue: unable to publish to %s: %w", m.Subject, err)
		}
	}
	if err := c.nc.FlushWithContext(ctx); err != nil {
		return fmt.Errorf("queue: unable to flush to nats: %w", err)
	}
	return nil
}

// JetStream reports whether comments go to a JetStream stream.
func (c *Conn) JetStream() bool { return c.js != nil }

// Close closes the connection. Every Publish has waited for its acks or
// its flush, so nothing that returned nil is lost.
func (c *Conn) Close() error {
	c.nc.Close()
	return nil
}
