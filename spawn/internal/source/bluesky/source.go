package bluesky

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/pkg/backoff"
	"github.com/blackwidow-crawl/blackwidow/pkg/query"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source/internal/wsconn"
)

// userAgent names the spawn to the service.
const userAgent = "BlackWidow-Spawn/1.0 (bluesky)"

// errRewind ends a connection so that the next one starts further back,
// for a subscriber whose cursor the connection has passed.
var errRewind = errors.New("bluesky: replaying for a subscriber behind the connection")

// Stats is what the source has done since it started, for the node's
// metrics.
type Stats struct {
	Items      int64 // posts handed over (a post tagged for several queries counts once)
	Connects   int64 // connections opened
	Reconnects int64 // connections opened after the first
	Rewinds    int64 // reconnects further back for a subscriber with an older cursor
	Malformed  int64 // events skipped as invalid
	Truncated  int64 // events skipped because their JSON ended early
	TooLarge   int64 // events over MaxMessageBytes (skipped, or ending a connection when too large to skip)
	Stalls     int64 // connections ended by silence
	Gaps       int64 // subscribers told that posts were skipped
	Repeats    int64 // posts read again (resume overlap, replay) and not handed over
	Future     int64 // events whose time_us was past the clock and ClockSlack
	WireBytes  int64 // event bytes received, as sent (compressed or not)
	// Retractions are the deletes, edits and account changes told to
	// the node.
	Retractions int64
	Handles     int // DIDs whose handle (or its absence) is remembered
	// AppViewCalls are the getProfiles calls made, AppViewActors the
	// actors asked for in them, AppViewFailures the calls that failed.
	AppViewCalls    int64
	AppViewActors   int64
	AppViewFailures int64
	// Position is the time_us of the last event read; 0 before the
	// first.
	Position int64
	// Lag is how far Position is behind the clock: the delay of the
	// stream, or how far back a replay under way still is; 0 before the
	// first event.
	Lag time.Duration
}

// counters are Stats' live counters.
type counters struct {
	items, connects, rewinds, malformed, truncated, tooLarge, stalls, gaps, repeats atomic.Int64
	wireBytes, future, retractions                                                  atomic.Int64
}

// gap is a subscriber's notice that posts were skipped, shown until until.
type gap struct {
	err   error
	until time.Time
}

// Source is the node's one Jetstream connection. The node gets it from
// Kind.New as a source.DataSource; it also implements
// source.SubscriberErrors and Stats.
type Source struct {
	opts      Options
	logger    *slog.Logger
	overlapUS int64
	rewind    chan struct{}
	ws        *wsconn.Config
	stats     counters
	position  atomic.Int64 // time_us of the last event read
	plain     []byte       // the read loop's room for a decompressed event

	handles *resolver
	// zstd decompresses events when Options.Compress asked for them;
	// the read loop alone uses it.
	zstd *zstd.Decoder

	mu   sync.Mutex
	cov  *coverage
	gaps map[string]gap // query uuid → its notice
	// skipPast is the position of an event too large even to read past:
	// the next connection starts after it.
	skipPast int64
	errs     source.ErrorSet
	// retract tells the node what the service took back (retract.go);
	// down are the accounts this source saw go inactive, whose return it
	// then tells.
	retract func([]api.Retraction)
	down    *downAccounts
}

var (
	_ source.DataSource       = (*Source)(nil)
	_ source.SubscriberErrors = (*Source)(nil)
	_ source.AuthorNamer      = (*Source)(nil)
	_ source.Retracter        = (*Source)(nil)
)

// partHandles is the part of the source's errors about handle lookups.
const partHandles = "handles"

func newSource(opts Options) (*Source, error) {
	overlap := opts.ResumeOverlap.Microseconds()
	s := &Source{
		opts:      opts,
		logger:    opts.Logger.With("source", Key),
		overlapUS: overlap,
		rewind:    make(chan struct{}, 1),
		cov:       newCoverage(overlap, opts.RecentLimit),
		gaps:      map[string]gap{},
		down:      newDownAccounts(),
	}
	s.handles = newResolver(opts, s.logger, func(err error) { s.errs.Set(partHandles, source.Degraded(err)) })
	if opts.Compress {
		d, err := newDecoder(opts.MaxMessageBytes)
		if err != nil {
			return nil, err
		}
		s.zstd = d
	}
	s.ws = &wsconn.Config{
		Client:          opts.HTTPClient,
		Header:          http.Header{"User-Agent": {userAgent}},
		MaxMessageBytes: opts.MaxMessageBytes,
		MaxSkipBytes:    opts.MaxSkipBytes,
		StallTimeout:    opts.StallTimeout,
		Silence:         "no event",
		Peer:            "the service",
		Errors:          wsconn.Errors{ConnectionLost: ErrConnectionLost, Stalled: ErrStalled, MessageTooLarge: ErrMessageTooLarge},
		Counters:        wsconn.Counters{Stalls: &s.stats.stalls, TooLarge: &s.stats.tooLarge},
	}
	return s, nil
}

// SetSubscribers records the node's bluesky subscribers. A query new to the
// source starts at the oldest cursor position its subscribers bring, or, with
// none, at the live stream; when that is behind the connection, Run
// reconnects from it. A cursor in the future (past the clock and
// ClockSlack) starts from now, and its subscribers are told. It never
// blocks: the node calls it under its lock.
func (s *Source) SetSubscribers(subs []source.Sub) {
	now := time.Now()
	cursors := make(map[string]int64, len(subs))
	future := map[string]error{}
	for _, sub := range subs {
		sp := sub.Spec
		if sp.QueryUUID == "" {
			continue
		}
		pos := int64(0)
		if sp.Cursor != nil && sp.Cursor.Position > 0 {
			var err error
			if pos, err = s.boundCursor(sp.Cursor.Position, now); err != nil {
				future[sp.QueryUUID] = err
			}
		}
		if cur, ok := cursors[sp.QueryUUID]; !ok || pos != 0 && (cur == 0 || pos < cur) {
			cursors[sp.QueryUUID] = pos
		}
	}
	s.mu.Lock()
	behind := s.cov.set(cursors)
	for uuid := range s.gaps {
		if _, ok := cursors[uuid]; !ok {
			delete(s.gaps, uuid)
		}
	}
	for uuid, err := range future {
		s.gaps[uuid] = gap{err: source.Degraded(err), until: now.Add(gapErrorTTL)}
		s.logger.Warn("bluesky cursor from the future", "query_uuid", uuid, "err", err)
	}
	s.mu.Unlock()
	if behind > 0 {
		source.Signal(s.rewind)
	}
	if !s.opts.TextOnly {
		s.handles.watch(fromHandles(subs), time.Now())
	}
}

// NameAuthors takes the function told of the handles the source learns
// for DIDs whose posts it may have handed over under the DID; false when
// the source looks up no handles (Options.TextOnly).
func (s *Source) NameAuthors(fn func([]source.AuthorName)) bool {
	if s.opts.TextOnly {
		return false
	}
	s.handles.setNames(fn)
	return true
}

// fromHandles collects the handles that the specs' from: atoms name (DIDs
// match through AuthorID and need no lookup).
func fromHandles(subs []source.Sub) map[string]bool {
	out := map[string]bool{}
	for _, sub := range subs {
		if sub.Query == nil {
			continue
		}
		for _, a := range sub.Query.Atoms() {
			if a.Kind != query.From {
				continue
			}
			if h := normalHandle(a.Value); h != "" {
				out[h] = true
			}
		}
	}
	return out
}

// Err joins the connection's, the messages' and every subscriber's
// current errors; nil when all is well.
func (s *Source) Err() error {
	errs := []error{s.errs.Err()}
	s.mu.Lock()
	now := time.Now()
	for _, g := range s.gaps {
		if now.Before(g.until) {
			errs = append(errs, g.err)
		}
	}
	s.mu.Unlock()
	return errors.Join(errs...)
}

// ErrFor joins the connection's and the messages' errors with the notice
// of skipped posts that concerns spec's query.
func (s *Source) ErrFor(spec api.SubscriberSpec) error {
	errs := []error{s.errs.Err()}
	s.mu.Lock()
	if g, ok := s.gaps[spec.QueryUUID]; ok && time.Now().Before(g.until) {
		errs = append(errs, g.err)
	}
	s.mu.Unlock()
	return errors.Join(errs...)
}

// Stats returns the source's counters.
func (s *Source) Stats() Stats {
	st := Stats{
		Items:       s.stats.items.Load(),
		Connects:    s.stats.connects.Load(),
		Rewinds:     s.stats.rewinds.Load(),
		Malformed:   s.stats.malformed.Load(),
		Truncated:   s.stats.truncated.Load(),
		TooLarge:    s.stats.tooLarge.Load(),
		Stalls:      s.stats.stalls.Load(),
		Gaps:        s.stats.gaps.Load(),
		Repeats:     s.stats.repeats.Load(),
		Future:      s.stats.future.Load(),
		WireBytes:   s.stats.wireBytes.Load(),
		Position:    s.position.Load(),
		Retractions: s.stats.retractions.Load(),
	}
	st.Reconnects = max(st.Connects-1, 0)
	if st.Position > 0 {
		st.Lag = max(time.Since(time.UnixMicro(st.Position)), 0)
	}
	st.Handles = s.handles.size()
	st.AppViewCalls = s.handles.calls.Load()
	st.AppViewActors = s.handles.asked.Load()
	st.AppViewFailures = s.handles.fails.Load()
	return st
}

// Run keeps the connection up until ctx ends: connect from where the
// subscribers need, hand the posts over, reconnect at once to replay for a
// subscriber behind the connection, and with back-off after a failure.
func (s *Source) Run(ctx context.Context, emit source.Emit) {
	loop := wsconn.Loop{
		Backoff: wsconn.Backoff{Retry: backoff.Policy{Min: s.opts.BackoffMin, Max: s.opts.BackoffMax}},
		Again: func(err error) bool {
			if !errors.Is(err, errRewind) {
				return false
			}
			s.stats.rewinds.Add(1)
			s.logger.Info("bluesky connection rewinding for a subscriber with an older cursor")
			return true
		},
		Failed: func(err error) { s.errs.Set(source.PartConnection, source.Degraded(err)) },
		Logger: s.logger,
		Name:   "bluesky",
	}
	if s.zstd != nil {
		defer s.zstd.Close()
	}
	var wg sync.WaitGroup
	if !s.opts.TextOnly {
		wg.Go(func() { s.handles.run(ctx) })
	}
	defer wg.Wait()
	loop.Run(ctx, func(ctx context.Context) (bool, error) { return s.connect(ctx, emit) })
}

// connect opens the WebSocket from the position the subscribers need and
// reads it until it fails, ctx ends or a subscriber needs a rewind;
// healthy says whether the service sent anything before it did.
func (s *Source) connect(ctx context.Context, emit source.Emit) (healthy bool, err error) {
	select {
	case <-s.rewind: // this connection starts from every query's position
	default:
	}
	dialed := time.Now()
	s.mu.Lock()
	cursor := s.cov.resumeFrom()
	if cursor > 0 {
		cursor = max(cursor-s.overlapUS, dialed.Add(-s.opts.ReplayWindow).UnixMicro())
		if s.skipPast >= cursor {
			cursor = s.skipPast + 1 // past an event too large to read
		}
	}
	s.skipPast = 0
	s.cov.connected(cursor)
	s.mu.Unlock()
	u := s.opts.JetstreamURL + "?wantedCollections=" + url.QueryEscape(PostCollection)
	if cursor > 0 {
		u += "&cursor=" + strconv.FormatInt(cursor, 10)
	}
	if s.zstd != nil {
		u += "&compress=true"
	}
	c, err := wsconn.Dial(ctx, u, s.ws)
	if err != nil {
		return false, s.dialError(err)
	}
	defer c.CloseNow()
	s.stats.connects.Add(1)
	s.errs.Set(source.PartConnection, nil)
	s.logger.Info("bluesky connected", "url", s.opts.JetstreamURL, "cursor", cursor)

	rctx, cancel := context.WithCancelCause(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel(nil)
		wg.Wait()
	}()
	wg.Go(func() {
		select {
		case <-s.rewind:
			cancel(errRewind)
		case <-rctx.Done():
		}
	})
	err = s.read(ctx, rctx, c, emit, dialed, cursor)
	return c.Delivered(), err
}

// dialError maps a refused handshake to ErrStatus.
func (s *Source) dialError(err error) error {
	var he *wsconn.HandshakeError
	if !errors.As(err, &he) {
		return err
	}
	detail := ""
	if t := strings.TrimSpace(string(he.Body)); t != "" && source.ItemID(t) == t {
		detail = ": " + clip(t)
	}
	return fmt.Errorf("%w: %s answered %w%s", ErrStatus, s.opts.JetstreamURL, source.StatusError{Code: he.StatusCode, Status: he.Status}, detail)
}

// read handles the service's events until the connection fails: posts go
// to the node, identity events teach handles. Silence longer than
// StallTimeout ends the connection; time spent handing posts over (the
// store pushing back) does not count as silence. rctx ends the reading
// (a rewind); ctx, Run's, bounds the hand-over, so a post routed is never
// dropped by a rewind. start is the connection's cursor, 0 for the live
// tail. An event over MaxMessageBytes is skipped; a time_us from the
// future is bounded (boundEvent).
func (s *Source) read(ctx, rctx context.Context, c *wsconn.Conn, emit source.Emit, dialed time.Time, start int64) error {
	first, badMessages := true, false
	at := readPos{pos: start}
	for {
		data, err := c.Read(rctx) // ends with rctx's cause: errRewind
		var tl *wsconn.TooLargeError
		if errors.As(err, &tl) {
			badMessages = true
			s.tooLarge(tl, err)
			if tl.Skipped {
				continue
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		s.stats.wireBytes.Add(int64(len(data)))
		if s.zstd != nil {
			if data, err = s.zstd.DecodeAll(data, s.plain[:0]); err != nil {
				err = fmt.Errorf("%w: not a zstd frame of the dictionary: %v", ErrMalformed, err)
			} else {
				s.plain = data
			}
		}
		var ev event
		if err == nil {
			ev, err = decodeEvent(data)
		}
		if err != nil {
			if errors.Is(err, ErrTruncated) {
				s.stats.truncated.Add(1)
			} else {
				s.stats.malformed.Add(1)
			}
			badMessages = true
			s.errs.Set(source.PartMessages, source.Degraded(err))
			s.logger.Warn("bluesky event skipped", "err", err, "bytes", len(data))
			continue
		}
		if badMessages {
			badMessages = false
			s.errs.Set(source.PartMessages, nil)
		}
		if s.boundEvent(&ev, &at, time.Now()) {
			badMessages = true
		}
		s.position.Store(ev.timeUS)
		if first {
			first = false
			s.checkGap(ev.timeUS, dialed)
		}
		switch ev.kind {
		case kindIdentity:
			s.handles.identity(ev.did, ev.handle, time.Now())
		case kindPost:
			if err := s.deliver(ctx, ev, emit); err != nil {
				return err
			}
		case kindUpdate, kindDelete, kindAccount:
			s.takeBack(ev)
		}
	}
}

// deliver hands a post over to the queries that have not had it: once for
// all, or once per query tagged with its uuid.
func (s *Source) deliver(ctx context.Context, ev event, emit source.Emit) error {
	s.mu.Lock()
	all, uuids := s.cov.route(postURI(ev.did, ev.rkey), ev.timeUS)
	s.mu.Unlock()
	if !all && len(uuids) == 0 {
		s.stats.repeats.Add(1)
		return nil
	}
	now := time.Now()
	var it source.Item
	if s.opts.TextOnly {
		it = plainItem(ev, s.handles.known(ev.did), now)
	} else {
		it = postItem(ev, s.handles.handle(ev.did, now), now)
	}
	items := []source.Item{it}
	if !all {
		items = make([]source.Item, len(uuids))
		for i, uuid := range uuids {
			items[i] = it
			items[i].QueryUUID = uuid
		}
	}
	if err := emit(ctx, items); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("bluesky: unable to hand over a post: %w", err)
	}
	s.stats.items.Add(1)
	return nil
}

// checkGap compares the first event of a connection with where each query
// stood: a first event much later than a query's position, when that
// position is beyond the service's replay window or the event is itself a
// replayed one, means the service started later than asked (it does so
// silently for cursors it no longer keeps): the query's subscribers are
// told which posts they missed.
func (s *Source) checkGap(firstUS int64, dialed time.Time) {
	slack := s.opts.GapSlack.Microseconds()
	windowStart := dialed.Add(-s.opts.ReplayWindow).UnixMicro()
	replayed := firstUS < dialed.UnixMicro()-slack
	s.mu.Lock()
	defer s.mu.Unlock()
	for uuid, after := range s.cov.afters() {
		if after <= 0 || firstUS-after <= slack || (after >= windowStart && !replayed) {
			continue
		}
		from, to := usTime(after), usTime(firstUS)
		err := fmt.Errorf("%w: cursor %s is older than the service's replay window; posts between %s and %s were skipped",
			ErrSkipped, from, from, to)
		s.gaps[uuid] = gap{err: source.Degraded(err), until: time.Now().Add(gapErrorTTL)}
		s.stats.gaps.Add(1)
		s.logger.Warn("bluesky posts skipped", "query_uuid", uuid, "from", from, "to", to)
	}
}

// usTime formats a time_us for people.
func usTime(us int64) string {
	return time.UnixMicro(us).UTC().Format(time.RFC3339Nano)
}

// Report gives the source's counters and its lag to the spawn's metrics.
func (s *Source) Report() []source.Stat {
	st := s.Stats()
	out := source.StandardStats(st.Items, st.Reconnects, st.Stalls, map[string]int64{
		"malformed": st.Malformed, "truncated": st.Truncated, "too_large": st.TooLarge, "repeat": st.Repeats,
	})
	return append(out,
		source.Stat{Name: source.StatLag, Help: "How far a data source's log position is behind the clock.", Gauge: true, Value: st.Lag.Seconds()},
		source.Stat{Name: "bw_spawn_bluesky_rewinds_total", Help: "Jetstream reconnects further back for a subscriber with an older cursor.", Value: float64(st.Rewinds)},
		source.Stat{Name: "bw_spawn_bluesky_future_events_total", Help: "Jetstream events whose time_us was past the spawn's clock, kept at the stream's position.", Value: float64(st.Future)},
		source.Stat{Name: "bw_spawn_bluesky_gaps_total", Help: "Subscribers told that posts beyond the replay window were skipped.", Value: float64(st.Gaps)},
		source.Stat{Name: "bw_spawn_bluesky_retractions_total", Help: "Post deletes and edits and account takedowns the bluesky source told the spawn.", Value: float64(st.Retractions)},
		source.Stat{Name: "bw_spawn_bluesky_received_bytes_total", Help: "Jetstream event bytes received, as sent (compressed or not).", Value: float64(st.WireBytes)},
		source.Stat{Name: "bw_spawn_bluesky_appview_calls_total", Help: "getProfiles calls made to the AppView for handles.", Value: float64(st.AppViewCalls)},
		source.Stat{Name: "bw_spawn_bluesky_appview_failures_total", Help: "getProfiles calls that failed.", Value: float64(st.AppViewFailures)},
		source.Stat{Name: "bw_spawn_bluesky_handles", Help: "DIDs whose handle the bluesky source remembers.", Gauge: true, Value: float64(st.Handles)},
	)
}
