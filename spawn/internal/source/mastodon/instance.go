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
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/pkg/backoff"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source/internal/wsconn"
)

// Stats is what one instance's data source has done since the spawn
// started, for metrics and diagnostics. The counters only grow.
type Stats struct {
	Connects   int64 // WebSocket connections opened
	Reconnects int64 // connection attempts after a failure
	Items      int64 // statuses handed to the spawn
	Duplicates int64 // statuses already handed over (another stream, a reblog)
	Ignored    int64 // events the source does not use (delete, notification…)
	Filtered   int64 // home timeline statuses that are not a followed tag's public status
	Malformed  int64 // messages or statuses skipped as malformed
	Truncated  int64 // messages or payloads skipped because their JSON ends early
	TooLarge   int64 // connections closed for a message over the size cap
	Stalls     int64 // connections dropped for silence
	Refused    int64 // times the instance refused the token
	ServerErrs int64 // error events other than a refused token
	Follows    int64 // tags the source followed (again included)
	Unfollows  int64 // tags the source unfollowed
	Refollows  int64 // tags followed again after the account stopped following them
	Resolved   int64 // replies whose parent was looked up on the instance
	Unresolved int64 // replies whose parent stayed unknown (no reply_to)
	Held       int64 // statuses that waited for a reply's parent (thread.go)
	// GapsFilled counts the gaps filled from the REST timelines, GapItems
	// the statuses they found that the stream had not delivered,
	// GapSeconds the gaps' length.
	GapsFilled, GapItems int64
	GapSeconds           float64
	// Retractions are the deletes and edits told to the node; Unmapped
	// the deletes of statuses the instance's cache no longer (or never)
	// held (retract.go).
	Retractions int64
	Unmapped    int64
}

// counters are the live Stats of one instance, shared by the data sources
// the instance's key gets over time.
type counters struct {
	connects, reconnects, items, duplicates, ignored, filtered atomic.Int64
	malformed, truncated, tooLarge, stalls, refused            atomic.Int64
	serverErrs, subscribes, unsubscribes                       atomic.Int64
	follows, unfollows, refollows, resolved, unresolved, held  atomic.Int64
	gapsFilled, gapItems, gapMillis, retractions, unmapped     atomic.Int64
}

func (c *counters) snapshot() Stats {
	return Stats{
		Connects: c.connects.Load(), Reconnects: c.reconnects.Load(), Items: c.items.Load(),
		Duplicates: c.duplicates.Load(), Ignored: c.ignored.Load(), Filtered: c.filtered.Load(),
		Malformed: c.malformed.Load(), Truncated: c.truncated.Load(), TooLarge: c.tooLarge.Load(),
		Stalls: c.stalls.Load(), Refused: c.refused.Load(), ServerErrs: c.serverErrs.Load(),
		Follows: c.follows.Load(), Unfollows: c.unfollows.Load(), Refollows: c.refollows.Load(),
		Resolved: c.resolved.Load(), Unresolved: c.unresolved.Load(), Held: c.held.Load(),
		GapsFilled: c.gapsFilled.Load(), GapItems: c.gapItems.Load(), GapSeconds: float64(c.gapMillis.Load()) / 1000,
		Retractions: c.retractions.Load(), Unmapped: c.unmapped.Load(),
	}
}

// sub is one stream subscription: the public stream, a hashtag's, or the
// token account's home timeline (user).
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

// need is what one subscriber's query needs of the instance.
type need struct {
	tags   []string // the hashtags covering every match, when public is false
	public bool     // the query needs the public stream (free text)
}

// instance is the data source of one instance: one WebSocket carrying the
// subscriptions of every subscriber, and, while the instance's feeds are
// closed to the token, the tags its account follows for them.
type instance struct {
	opts    Options
	base    *url.URL
	logger  *slog.Logger
	rest    *http.Client  // instance documents and REST calls
	ws      wsconn.Config // the WebSocket's handshake and limits
	changed chan struct{} // the subscriptions to make changed
	// followChanged: the tags to follow changed.
	followChanged chan struct{}
	stats         *counters
	follows       *tagFollows
	// refusedByEvent is set when an error event refused the token on an
	// accepted connection; only an item proves the token good again.
	refusedByEvent atomic.Bool
	// retract tells the node the deletes and edits (retract.go).
	retract retracter

	mu    sync.Mutex
	needs []need
	// public says, by query uuid, whether a subscriber's query needs the
	// public stream (free text): it fails where live feeds are closed.
	public     map[string]bool
	want       map[sub]bool    // the subscriptions the needs make
	followWant map[string]bool // the tags to follow
	config     access          // what the instance document says
	deleteOnly string          // why the public stream is known closed
	// live are the subscriptions sent on the open connection.
	live map[sub]bool
	// pending is the gap to fill (backfill.go); lastID the newest status
	// handed over; cursors the crawlers whose cursor opened a gap.
	pending gap
	lastID  string
	cursors map[int64]bool
	errs    source.ErrorSet
	// budget is what the instance's last answer said of the token's REST
	// calls (thread.go).
	budget budget
	// handling serialises handing statuses over between the stream's
	// reader, a gap's filling and the release of the statuses waiting for
	// a reply's parent: the status cache and the fields below it are
	// theirs.
	handling sync.Mutex
	recent   *statusCache
	resolve  *bucket
	// held are the statuses waiting, in arrival order, behind a reply
	// whose parent cannot be named yet; heldWake tells their releaser one
	// was added; lookupRetryAt pauses the look-ups after a failed one.
	held          []heldFrame
	heldWake      chan struct{}
	lookupRetryAt time.Time

	// Owned by Run's reader goroutine.
	domain        string // the domain of the instance's accounts
	publicDeletes int    // delete events in a row on the public stream
}

func newInstance(opts Options, base *url.URL, stats *counters, follows *tagFollows) *instance {
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
		changed:       make(chan struct{}, 1),
		followChanged: make(chan struct{}, 1),
		stats:         stats,
		follows:       follows,
		domain:        base.Hostname(),
		want:          map[sub]bool{},
		live:          map[sub]bool{},
		cursors:       map[int64]bool{},
		followWant:    map[string]bool{},
		recent:        newStatusCache(opts.StatusCacheSize),
		resolve:       newBucket(opts.ResolveRate, opts.ResolveBurst),
		heldWake:      make(chan struct{}, 1),
	}
}

// SetSubscribers works out what the subscribers' queries need; Run
// subscribes, unsubscribes, follows and unfollows to match. It never
// blocks: the node calls it under its lock.
func (i *instance) SetSubscribers(subs []source.Sub) {
	ns := make([]need, 0, len(subs))
	public := make(map[string]bool, len(subs))
	for _, s := range subs {
		tags, pub, err := needs(s.Query)
		if err != nil {
			continue // Keys refused it already
		}
		ns = append(ns, need{tags: tags, public: pub})
		public[s.Spec.QueryUUID] = pub
	}
	i.mu.Lock()
	i.needs = ns
	i.public = public
	i.recomputeLocked()
	i.cursorGapsLocked(source.Specs(subs))
	i.mu.Unlock()
}

// recomputeLocked works out the subscriptions and the follows from the
// needs and the feeds' access, and wakes Run when they changed:
//
//   - Open feeds: the hashtag streams of the tags when every query's
//     matches carry one of them, else the public stream alone, which
//     covers the hashtag streams (also when the tags are more than
//     MaxHashtagStreams).
//   - Closed feeds: the hashtag queries' tags are followed and the home
//     timeline (stream user) read; a free-text query gets the public
//     stream only while the live feeds are open (the hashtag feeds alone
//     were closed), and otherwise fails (ErrFor).
func (i *instance) recomputeLocked() bool {
	a := i.accessLocked()
	want, follow := map[sub]bool{}, map[string]bool{}
	public := false
	for _, n := range i.needs {
		public = public || n.public
		for _, t := range n.tags {
			if a.follow() {
				follow[t] = true
			} else {
				want[sub{stream: streamHashtag, tag: t}] = true
			}
		}
	}
	switch {
	case a.follow():
		if len(follow) > 0 {
			want[sub{stream: streamUser}] = true
		}
		if public && !a.liveClosed {
			want[sub{stream: streamPublic}] = true
		}
	case public || len(want) > i.opts.MaxHashtagStreams:
		want = map[sub]bool{{stream: streamPublic}: true}
	}
	subsChanged, followsChanged := !maps.Equal(want, i.want), !maps.Equal(follow, i.followWant)
	i.want, i.followWant = want, follow
	if subsChanged {
		source.Signal(i.changed)
	}
	if followsChanged {
		source.Signal(i.followChanged)
	}
	return subsChanged || followsChanged
}

// wanted returns the subscriptions the subscribers need, sorted.
func (i *instance) wanted() []sub {
	i.mu.Lock()
	defer i.mu.Unlock()
	return slices.SortedFunc(maps.Keys(i.want), cmpSub)
}

// followWanted returns the tags to follow.
func (i *instance) followWanted() map[string]bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	return maps.Clone(i.followWant)
}

// followed reports whether the source follows one of tags for its
// subscribers: a home timeline status reaches them only then.
func (i *instance) followed(tags []tagJSON) bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	for _, t := range tags {
		if i.followWant[strings.ToLower(t.Name)] {
			return true
		}
	}
	return false
}

func cmpSub(a, b sub) int {
	return cmp.Or(cmp.Compare(a.stream, b.stream), cmp.Compare(a.tag, b.tag))
}

// Err joins the current errors of the connection, its messages and the
// tag follows.
func (i *instance) Err() error { return i.errs.Err() }

// Ready reports whether the open connection carries every subscription
// the subscribers need: from then on their statuses arrive. (Mastodon's
// streaming server confirms no subscription: it streams from the message
// on.)
func (i *instance) Ready(api.SubscriberSpec) bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	for w := range i.want {
		if !i.live[w] {
			return false
		}
	}
	return len(i.live) > 0 || len(i.want) == 0
}

// setLive records a subscription sent (on) or ended (off) on the open
// connection.
func (i *instance) setLive(w sub, on bool) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if on {
		i.live[w] = true
	} else {
		delete(i.live, w)
	}
}

// ErrFor joins the data source's errors with, for a query that needs free
// text while the instance's live feeds are closed to the token,
// ErrLiveFeedsClosed naming the instance and why: such a subscriber fails.
func (i *instance) ErrFor(spec api.SubscriberSpec) error {
	err := i.errs.Err()
	i.mu.Lock()
	public := i.public[spec.QueryUUID]
	a := i.accessLocked()
	i.mu.Unlock()
	if !public {
		return err
	}
	if !a.liveClosed {
		return err
	}
	closed := fmt.Errorf("%w: %s does not stream its public statuses to this token (%s); only queries whose every branch needs a #tag run there, through the tags its account follows",
		ErrLiveFeedsClosed, i.base.Host, a.why)
	return errors.Join(err, closed)
}

// Stats returns the instance's counters.
func (i *instance) Stats() Stats { return i.stats.snapshot() }

// setErr records a part's error: a refused token fails the subscribers,
// anything else passes.
func (i *instance) setErr(part string, err error) {
	i.errs.Set(part, source.DegradedUnless(err, ErrTokenRefused))
}

// Run keeps the connection up until ctx ends: discover the streaming URL
// and the feeds' access, connect, subscribe every wanted stream, follow
// subscriber changes, and reconnect with back-off after any failure —
// from AuthBackoffMin after the token was refused. Beside it, runFollows
// keeps the tags followed while the feeds are closed, and lets them go
// when ctx ends.
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
	var wg sync.WaitGroup
	wg.Go(func() { i.runFollows(ctx) })
	defer wg.Wait()
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
	wsURL := i.discover(ctx) // every time: the instance may have moved it, or changed its feeds
	s := &session{instance: i}
	s.seen()
	cfg := i.ws
	cfg.OnPing = func(context.Context, []byte) bool { s.alive(); return true }
	cfg.OnPong = func(context.Context, []byte) { s.alive() }
	c, err := wsconn.Dial(ctx, wsURL, &cfg)
	if err != nil {
		return false, i.dialError(err)
	}
	defer c.CloseNow()
	defer func() {
		i.mu.Lock()
		clear(i.live)
		i.mu.Unlock()
	}()
	s.conn = c
	i.stats.connects.Add(1)
	i.logger.Info("mastodon connected", "url", wsURL)
	err = s.serve(ctx, emit)
	if s.healthy.Load() && ctx.Err() == nil {
		i.connectionLost(time.Unix(0, s.last.Load()))
	}
	return s.healthy.Load(), err
}

// dialError maps a refused handshake to ErrTokenRefused or ErrStatus,
// with the reason the streaming server gave: in the X-Error-Message header
// of its empty text/plain answer ("Invalid access token"), or in a JSON
// body's "error" from a server that answers that way.
func (i *instance) dialError(err error) error {
	var he *wsconn.HandshakeError
	if !errors.As(err, &he) {
		return err
	}
	detail := ""
	var doc struct {
		Error string `json:"error"`
	}
	if m := strings.TrimSpace(he.Header.Get("X-Error-Message")); m != "" {
		detail = ": " + clip(m)
	} else if json.Unmarshal(he.Body, &doc) == nil && doc.Error != "" {
		detail = ": " + clip(doc.Error)
	}
	switch he.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden:
		return fmt.Errorf("%w: %s answered %s%s; check the spawn's Mastodon access token (a user token with read:statuses)", ErrTokenRefused, i.base.Host, he.Status, detail)
	}
	return fmt.Errorf("%w: %s answered %w%s", ErrStatus, i.base.Host, source.StatusError{Code: he.StatusCode, Status: he.Status}, detail)
}

// Report gives the instance's counters to the spawn's metrics.
func (i *instance) Report() []source.Stat {
	st := i.Stats()
	out := append(source.StandardStats(st.Items, st.Reconnects, st.Stalls, map[string]int64{
		"malformed": st.Malformed, "truncated": st.Truncated, "too_large": st.TooLarge, "duplicate": st.Duplicates,
		"not_followed": st.Filtered, "unmapped_delete": st.Unmapped,
	}), source.GapStats(st.GapsFilled, st.GapItems, st.GapSeconds)...)
	return append(out,
		source.Stat{Name: "bw_spawn_mastodon_retractions_total", Help: "Status deletes and edits a Mastodon instance's streams told the spawn.", Value: float64(st.Retractions)},
		source.Stat{Name: "bw_spawn_mastodon_token_refusals_total", Help: "Times a Mastodon instance refused the access token.", Value: float64(st.Refused)},
		source.Stat{Name: "bw_spawn_mastodon_tag_follows_total", Help: "Tags a spawn followed on a Mastodon instance whose feeds are closed.", Value: float64(st.Follows)},
		source.Stat{Name: "bw_spawn_mastodon_tag_unfollows_total", Help: "Tags a spawn unfollowed on a Mastodon instance.", Value: float64(st.Unfollows)},
		source.Stat{Name: "bw_spawn_mastodon_unresolved_replies_total", Help: "Replies whose parent a spawn could not name (no reply_to).", Value: float64(st.Unresolved)},
		source.Stat{Name: "bw_spawn_mastodon_held_statuses_total", Help: "Statuses that waited for a Mastodon reply's parent to be named (a look-up the rate limit allowed, or the parent's arrival).", Value: float64(st.Held)},
	)
}
