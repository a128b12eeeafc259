package stream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/pkg/backoff"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source/internal/wsconn"
)

// Parts of Err besides source.PartConnection and source.PartMessages.
const (
	compilePrefix = "compile "
	subPrefix     = "subscribe "
)

// counters are what the connection has done, for tests and diagnostics.
type counters struct {
	dials        atomic.Int64
	connects     atomic.Int64
	stalls       atomic.Int64
	tooLarge     atomic.Int64
	malformed    atomic.Int64
	truncated    atomic.Int64
	ticks        atomic.Int64
	items        atomic.Int64 // data messages handed over
	unrouted     atomic.Int64 // data for a hash no query wants (just unsubscribed)
	deleted      atomic.Int64
	compiles     atomic.Int64
	subscribes   atomic.Int64
	unsubscribes atomic.Int64
}

// compiled is a query's cached hash and the definition it was made from.
type compiled struct {
	csdl string
	hash string
}

// multi is the node's one stream connection.
type multi struct {
	opts       Options
	compileURL string
	multiURL   string
	auth       string
	logger     *slog.Logger
	rest       *http.Client   // compile requests
	ws         *wsconn.Config // the WebSocket's handshake and limits
	changed    chan struct{}
	stats      counters

	mu        sync.Mutex
	want      map[string]string   // query uuid → its filter definition (CSDL)
	hashes    map[string]compiled // query uuid → its compiled filter
	hashOrder []string            // query uuids in caching order
	routes    map[string][]string // subscribed hash → query uuids
	// live are the hashes the service confirmed subscribed on the
	// current connection.
	live map[string]bool
	errs source.ErrorSet // by part: the connection, each query, each hash
}

func newMulti(opts Options, compileURL, multiURL string) *multi {
	rest := *opts.Client
	rest.Timeout = opts.RequestTimeout
	m := &multi{
		opts:       opts,
		compileURL: compileURL,
		multiURL:   multiURL,
		auth:       opts.Username + ":" + opts.APIKey,
		logger:     opts.Logger.With("source", Key),
		rest:       &rest,
		changed:    make(chan struct{}, 1),
		want:       map[string]string{},
		hashes:     map[string]compiled{},
		routes:     map[string][]string{},
		live:       map[string]bool{},
	}
	m.ws = &wsconn.Config{
		Client:          wsconn.HandshakeClient(opts.Client, opts.ConnectTimeout),
		Header:          http.Header{"Authorization": {m.auth}, "User-Agent": {"BlackWidow-Spawn/1.0"}},
		MaxMessageBytes: opts.MaxMessageBytes,
		StallTimeout:    opts.StallTimeout,
		Silence:         "no tick or item",
		Peer:            "the service",
		Errors:          wsconn.Errors{ConnectionLost: ErrConnectionLost, Stalled: ErrStalled, MessageTooLarge: ErrMessageTooLarge},
		Counters:        wsconn.Counters{Stalls: &m.stats.stalls, TooLarge: &m.stats.tooLarge},
	}
	return m
}

// SetSubscribers records the distinct queries (by query uuid) the node's
// stream subscribers want; Run subscribes and unsubscribes on the live
// connection to match. It never blocks: the node calls it under its lock.
func (m *multi) SetSubscribers(subs []source.Sub) {
	want := make(map[string]string, len(subs))
	for _, s := range subs {
		uuid := s.Spec.QueryUUID
		if _, ok := want[uuid]; ok || uuid == "" {
			continue
		}
		// A query that does not compile failed its subscriber in Keys.
		if def, err := csdl(s.Query); err == nil {
			want[uuid] = def
		}
	}
	m.mu.Lock()
	same := maps.Equal(want, m.want)
	if !same {
		m.want = want
	}
	m.mu.Unlock()
	if !same {
		source.Signal(m.changed)
	}
}

// Err joins the current errors of the parts; nil when all is well.
func (m *multi) Err() error { return m.errs.Err() }

// Ready reports whether the service confirmed the subscription of spec's
// query on the live connection: from then on its items arrive. The
// service keeps nothing for later, so a crawler moved here must not stop
// on its old spawn before.
func (m *multi) Ready(spec api.SubscriberSpec) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.hashes[spec.QueryUUID]
	return ok && m.live[c.hash]
}

// ErrFor joins the errors of the connection and of spec's own query (its
// compile and its subscription), leaving out other queries' errors.
func (m *multi) ErrFor(spec api.SubscriberSpec) error {
	m.mu.Lock()
	h := m.hashes[spec.QueryUUID].hash
	m.mu.Unlock()
	return m.errs.ErrOf(func(part string) bool {
		switch {
		case part == source.PartConnection, part == source.PartMessages, part == compilePrefix+spec.QueryUUID:
			return true
		case h != "" && part == subPrefix+h:
			return true
		}
		return false
	})
}

// setErr records a part's error: reconnects and bad messages pass; wrong
// credentials and a filter the service refuses do not.
func (m *multi) setErr(part string, err error) {
	m.errs.Set(part, source.DegradedUnless(err, ErrUnauthorized, ErrRefused))
}

// Run keeps the connection up until ctx ends: connect, subscribe every
// wanted query, follow subscriber changes, and reconnect with back-off
// after any failure.
func (m *multi) Run(ctx context.Context, emit source.Emit) {
	loop := wsconn.Loop{
		Backoff: m.backoff(),
		Refused: func(err error) bool { return errors.Is(err, ErrUnauthorized) },
		Failed:  func(err error) { m.setErr(source.PartConnection, err) },
		Logger:  m.logger,
		Name:    "stream",
	}
	loop.Run(ctx, func(ctx context.Context) (bool, error) { return m.connect(ctx, emit) })
}

// backoff is the wait after failures in a row: from BackoffMin
// (AuthBackoffMin when the key was refused), doubled per failure, capped
// at BackoffMax, then drawn from its upper half so that spawns failing
// together do not return together.
func (m *multi) backoff() wsconn.Backoff {
	return wsconn.Backoff{
		Retry:   backoff.Policy{Min: m.opts.BackoffMin, Max: m.opts.BackoffMax},
		Refused: backoff.Policy{Min: m.opts.AuthBackoffMin, Max: m.opts.BackoffMax},
	}
}

// connect opens the WebSocket and serves it until it fails; healthy says
// whether the service sent anything (a tick will do) before it did.
func (m *multi) connect(ctx context.Context, emit source.Emit) (healthy bool, err error) {
	m.stats.dials.Add(1)
	c, err := wsconn.Dial(ctx, m.multiURL, m.ws)
	if err != nil {
		return false, dialError(err)
	}
	defer c.CloseNow()
	defer func() {
		m.mu.Lock()
		clear(m.live)
		m.mu.Unlock()
	}()
	m.stats.connects.Add(1)
	m.setErr(source.PartConnection, nil)
	m.logger.Info("stream connected", "url", m.multiURL)
	err = m.serve(ctx, c, emit)
	return c.Delivered(), err
}

// dialError maps a refused handshake to the source's errors.
func dialError(err error) error {
	var he *wsconn.HandshakeError
	if !errors.As(err, &he) {
		return err
	}
	detail := serviceError(he.Body)
	switch he.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden:
		return fmt.Errorf("%w: the service answered %s%s; check --stream-username and --stream-api-key", ErrUnauthorized, he.Status, detail)
	}
	return fmt.Errorf("%w: the service answered %s%s", ErrStatus, he.Status, detail)
}

// serviceError is ": <message>" from an error document {"error": …}.
func serviceError(body []byte) string {
	var doc struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(body, &doc) == nil && doc.Error != "" {
		return ": " + clip(doc.Error)
	}
	return ""
}

// serve subscribes the wanted queries and keeps the subscriptions in step
// with the subscribers, while a reader hands the items over, until the
// connection fails or ctx ends.
func (m *multi) serve(ctx context.Context, c *wsconn.Conn, emit source.Emit) error {
	sctx, cancel := context.WithCancel(ctx)
	readDone := make(chan error, 1)
	go func() { readDone <- m.read(sctx, c, emit) }()
	stop := func(err error) error {
		cancel()
		c.CloseNow()
		<-readDone
		return err
	}
	subscribed := map[string]bool{}
	compileRetry := m.backoff()
	var retry <-chan time.Time
	resync := func() error {
		failed, auth, err := m.reconcile(sctx, c, subscribed)
		retry = nil
		if failed {
			retry = time.After(compileRetry.Next(auth, false))
		} else {
			compileRetry.Reset(false)
		}
		return err
	}
	if err := resync(); err != nil {
		return stop(err)
	}
	for {
		select {
		case <-ctx.Done():
			return stop(ctx.Err())
		case err := <-readDone:
			cancel()
			return err
		case <-m.changed:
		case <-retry:
		}
		if err := resync(); err != nil {
			return stop(err)
		}
	}
}

// reconcile compiles the wanted queries not compiled yet, then subscribes
// the hashes not subscribed and unsubscribes the ones no longer wanted. It
// reports whether a compile failed (to retry later) and whether that was
// the key, and returns an error only when the connection failed.
func (m *multi) reconcile(ctx context.Context, c *wsconn.Conn, subscribed map[string]bool) (failed, auth bool, err error) {
	m.mu.Lock()
	want := maps.Clone(m.want)
	m.mu.Unlock()
	desired := map[string][]string{}
	for _, uuid := range slices.Sorted(maps.Keys(want)) {
		if auth {
			break // the key is refused: every compile would be
		}
		h, err := m.hash(ctx, uuid, want[uuid])
		if err != nil {
			if ctx.Err() != nil {
				return false, false, ctx.Err()
			}
			failed, auth = true, errors.Is(err, ErrUnauthorized)
			m.setErr(compilePrefix+uuid, err)
			m.logger.Warn("stream query compile failed", "query_uuid", uuid, "err", err)
			continue
		}
		m.setErr(compilePrefix+uuid, nil)
		desired[h] = append(desired[h], uuid)
	}
	m.mu.Lock()
	// Items for a hash being unsubscribed may still arrive; without a
	// route they are dropped.
	m.routes = desired
	m.errs.Clear(func(part string) bool {
		uuid, ok := strings.CutPrefix(part, compilePrefix)
		return ok && want[uuid] == ""
	})
	m.mu.Unlock()
	for _, h := range slices.Sorted(maps.Keys(subscribed)) {
		if _, ok := desired[h]; ok {
			continue
		}
		if err := m.send(ctx, c, "unsubscribe", h); err != nil {
			return failed, auth, err
		}
		delete(subscribed, h)
		m.mu.Lock()
		delete(m.live, h)
		m.mu.Unlock()
		m.setErr(subPrefix+h, nil)
		m.stats.unsubscribes.Add(1)
	}
	for _, h := range slices.Sorted(maps.Keys(desired)) {
		if subscribed[h] {
			continue
		}
		if err := m.send(ctx, c, "subscribe", h); err != nil {
			return failed, auth, err
		}
		subscribed[h] = true
		m.stats.subscribes.Add(1)
	}
	return failed, auth, nil
}

func (m *multi) send(ctx context.Context, c *wsconn.Conn, action, hash string) error {
	b, _ := json.Marshal(map[string]string{"action": action, "hash": hash})
	if err := c.Write(ctx, m.opts.RequestTimeout, b); err != nil {
		return fmt.Errorf("%w: unable to send %s: %w", ErrConnectionLost, action, err)
	}
	return nil
}

// hash returns a query's filter hash, compiling its definition at the
// service on first use.
func (m *multi) hash(ctx context.Context, uuid, def string) (string, error) {
	m.mu.Lock()
	c, ok := m.hashes[uuid]
	m.mu.Unlock()
	if ok && c.csdl == def {
		return c.hash, nil
	}
	h, err := m.compile(ctx, def)
	if err != nil {
		return "", fmt.Errorf("%w %s: %w", ErrCompile, uuid, err)
	}
	m.stats.compiles.Add(1)
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.hashes[uuid]; !ok {
		m.hashOrder = append(m.hashOrder, uuid)
	}
	m.hashes[uuid] = compiled{csdl: def, hash: h}
	// Forget the oldest queries no longer wanted beyond the cache limit.
	for i := 0; len(m.hashes) > hashCacheLimit && i < len(m.hashOrder); {
		old := m.hashOrder[i]
		if m.want[old] != "" {
			i++
			continue
		}
		delete(m.hashes, old)
		m.hashOrder = slices.Delete(m.hashOrder, i, i+1)
	}
	return h, nil
}

// compile asks the service for the hash of a CSDL definition.
func (m *multi) compile(ctx context.Context, def string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.compileURL, strings.NewReader(url.Values{"csdl": {def}}.Encode()))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Authorization", m.auth)
	resp, err := m.rest.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxCompileResponseBytes))
	if err != nil {
		return "", fmt.Errorf("unable to read the answer: %w", err)
	}
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return "", fmt.Errorf("%w: the service answered %s%s", ErrUnauthorized, resp.Status, serviceError(body))
	case resp.StatusCode == http.StatusBadRequest:
		return "", fmt.Errorf("%w: the service answered %s%s", ErrRefused, resp.Status, serviceError(body))
	case resp.StatusCode != http.StatusOK:
		return "", fmt.Errorf("%w: the service answered %s%s", ErrStatus, resp.Status, serviceError(body))
	}
	var doc struct {
		Hash string `json:"hash"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return "", fmt.Errorf("%w: compile answer: %v", ErrMalformed, err)
	}
	if !validHash(doc.Hash) {
		return "", fmt.Errorf("%w: compile answered hash %q", ErrMalformed, clip(doc.Hash))
	}
	return doc.Hash, nil
}

func validHash(h string) bool {
	if h == "" || len(h) > maxHashBytes {
		return false
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

func (m *multi) route(hash string) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.routes[hash]
}

// read handles the service's messages until the connection fails: items go
// to the spawn tagged with their query uuid, ticks prove the connection
// alive, status messages report refused subscriptions. Silence longer than
// StallTimeout ends the connection; time spent handing items over (the
// store pushing back) does not count as silence.
func (m *multi) read(ctx context.Context, c *wsconn.Conn, emit source.Emit) error {
	for {
		data, err := c.Read(ctx)
		if err != nil {
			return err
		}
		msg, err := decodeMessage(data)
		if err != nil {
			if errors.Is(err, ErrTruncated) {
				m.stats.truncated.Add(1)
			} else {
				m.stats.malformed.Add(1)
			}
			m.setErr(source.PartMessages, err)
			m.logger.Warn("stream message skipped", "err", err, "bytes", len(data))
			continue
		}
		switch msg.kind {
		case kindTick:
			m.stats.ticks.Add(1)
		case kindStatus:
			m.status(msg)
		case kindData:
			if err := m.deliver(ctx, msg, emit); err != nil {
				return err
			}
		}
	}
}

// status records the service's answer to a subscription.
func (m *multi) status(msg message) {
	if msg.hash == "" {
		if msg.status == "failure" {
			m.setErr(source.PartMessages, fmt.Errorf("%w: %s", ErrSubscribe, clip(msg.text)))
		}
		return
	}
	if len(m.route(msg.hash)) == 0 {
		return // an answer about a hash no longer wanted
	}
	switch msg.status {
	case "failure":
		err := fmt.Errorf("%w: hash %s: %s", ErrSubscribe, msg.hash, clip(msg.text))
		m.setErr(subPrefix+msg.hash, err)
		m.logger.Warn("stream subscription refused", "hash", msg.hash, "message", msg.text)
	case "success":
		m.setErr(subPrefix+msg.hash, nil)
		m.mu.Lock()
		m.live[msg.hash] = true
		m.mu.Unlock()
	}
}

// deliver hands over one interaction, once per query its hash stands for.
func (m *multi) deliver(ctx context.Context, msg message, emit source.Emit) error {
	if msg.deleted {
		m.stats.deleted.Add(1)
		return nil
	}
	uuids := m.route(msg.hash)
	if len(uuids) == 0 {
		m.stats.unrouted.Add(1)
		return nil
	}
	it, err := interactionItem(msg.interaction, time.Now())
	if err != nil {
		m.stats.malformed.Add(1)
		m.setErr(source.PartMessages, err)
		return nil
	}
	m.setErr(source.PartMessages, nil)
	items := make([]source.Item, len(uuids))
	for i, uuid := range uuids {
		items[i] = it
		items[i].QueryUUID = uuid
	}
	if err := emit(ctx, items); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("stream: unable to hand over an item: %w", err)
	}
	m.stats.items.Add(1)
	return nil
}
