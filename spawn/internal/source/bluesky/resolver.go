package bluesky

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/blackwidow-crawl/blackwidow/pkg/backoff"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
)

// Handles. Jetstream names a post's author by DID only, and its identity
// events, which would carry the new handle, mostly carry none. The source
// asks the AppView (app.bsky.actor.getProfiles, at most 25 actors a call)
// for the handles it does not know, never on the data path: a post goes out
// at once, under its DID when the handle is not known yet, and the DID
// waits in a queue for the next call, made when 25 are waiting or after a
// short linger. What is learned is told to the node (source.AuthorNamer),
// which fills it into the stored comment.

// ProfilesPath is the AppView's XRPC method that describes accounts.
const ProfilesPath = "/xrpc/app.bsky.actor.getProfiles"

// Resolver defaults and limits.
const (
	// DefaultAppViewURL is Bluesky's public AppView, which answers
	// getProfiles without authentication.
	DefaultAppViewURL = "https://public.api.bsky.app"
	// DefaultHandleTTL is how long a handle learned is trusted before it
	// is asked for again; it is still used meanwhile. Identity events
	// update it sooner when they carry the handle.
	DefaultHandleTTL = 6 * time.Hour
	// DefaultMissingTTL is how long an account the AppView does not
	// describe (deleted, taken down, handle.invalid) goes without being
	// asked about again.
	DefaultMissingTTL = 30 * time.Minute
	// DefaultLookupLinger is how long a DID waits for others to share its
	// call when fewer than MaxActorsPerCall are waiting.
	DefaultLookupLinger = 250 * time.Millisecond
	// DefaultLookupTimeout bounds one getProfiles call.
	DefaultLookupTimeout = 10 * time.Second
	// MaxActorsPerCall is getProfiles' limit (the lexicon's maxLength of
	// actors); the AppView refuses more with 400.
	MaxActorsPerCall = 25
	// maxLookupQueue bounds the actors waiting for a call; beyond it a new
	// DID is asked for when its next post comes.
	maxLookupQueue = 50_000
	// maxLookupAttempts is how often an actor is asked for while calls
	// fail; then it waits for its next post.
	maxLookupAttempts = 3
	// maxProfilesBytes caps a getProfiles answer (25 detailed profiles
	// are tens of KiB).
	maxProfilesBytes = 4 << 20
	// lookupRetryMin and lookupRetryMax bound the wait after a failed call.
	lookupRetryMin = time.Second
	lookupRetryMax = time.Minute
)

// ErrAppView means a getProfiles call failed: the AppView could not be
// reached or answered with an error.
var ErrAppView = errors.New("bluesky: AppView lookup failed")

// handleEntry is what the source knows of one DID's handle.
type handleEntry struct {
	handle string    // "" when the AppView describes no valid handle
	at     time.Time // when it was learned
}

// resolver knows the handles of DIDs, asks the AppView for those it does
// not, and tells the node what it learns.
type resolver struct {
	base                string // the AppView's getProfiles URL
	client              *http.Client
	logger              *slog.Logger
	ttl, missTTL        time.Duration
	linger              time.Duration
	limit               int
	onErr               func(error) // a failed call (nil: success again)
	calls, asked, fails atomic.Int64

	mu      sync.Mutex
	names   func([]source.AuthorName)
	cache   map[string]handleEntry // DID → handle
	order   []string               // DIDs in the order learned, for the bound
	queue   []string               // actors (DIDs, handles) to ask for
	queued  map[string]int         // actor → failed calls it was in
	watched map[string]time.Time   // handles of from: atoms → last asked
	wake    chan struct{}
}

func newResolver(opts Options, logger *slog.Logger, onErr func(error)) *resolver {
	return &resolver{
		base:    strings.TrimRight(opts.AppViewURL, "/") + ProfilesPath,
		client:  opts.AppViewClient,
		logger:  logger,
		ttl:     opts.HandleTTL,
		missTTL: opts.MissingTTL,
		linger:  opts.LookupLinger,
		limit:   opts.HandleCacheSize,
		onErr:   onErr,
		cache:   map[string]handleEntry{},
		queued:  map[string]int{},
		watched: map[string]time.Time{},
		wake:    make(chan struct{}, 1),
	}
}

// setNames sets the function told of handles learned.
func (r *resolver) setNames(fn func([]source.AuthorName)) {
	r.mu.Lock()
	r.names = fn
	r.mu.Unlock()
}

// handle returns did's handle, "" when it is not known; a DID not known,
// or known for too long, is queued for the next call. It never waits for
// the AppView.
func (r *resolver) handle(did string, now time.Time) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.cache[did]
	if !ok || now.Sub(e.at) > r.ttlOf(e) {
		r.enqueueLocked(did)
	}
	return e.handle
}

// known returns did's handle when one is known, asking nobody.
func (r *resolver) known(did string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cache[did].handle
}

func (r *resolver) ttlOf(e handleEntry) time.Duration {
	if e.handle == "" {
		return r.missTTL
	}
	return r.ttl
}

// enqueueLocked queues an actor for the next call, once, and wakes the
// caller loop when a call is due to start (the first actor, or a full
// call's worth).
func (r *resolver) enqueueLocked(actor string) {
	if _, ok := r.queued[actor]; ok || len(r.queue) >= maxLookupQueue {
		return
	}
	r.queued[actor] = 0
	r.queue = append(r.queue, actor)
	if n := len(r.queue); n == 1 || n == MaxActorsPerCall {
		source.Signal(r.wake)
	}
}

// identity takes an identity event: a handle replaces what was known; an
// event without one (most of them) forgets it, so the DID is asked for
// again at its next post.
func (r *resolver) identity(did, handle string, now time.Time) {
	r.mu.Lock()
	if handle == "" {
		delete(r.cache, did)
		r.mu.Unlock()
		return
	}
	r.setLocked(did, handleEntry{handle: handle, at: now})
	fn := r.names
	r.mu.Unlock()
	if fn != nil {
		fn([]source.AuthorName{{AuthorID: did, Author: handle}})
	}
}

// setLocked records did's entry, forgetting the oldest learned beyond the
// bound.
func (r *resolver) setLocked(did string, e handleEntry) {
	if _, ok := r.cache[did]; !ok {
		r.order = append(r.order, did)
	}
	r.cache[did] = e
	for len(r.cache) > r.limit && len(r.order) > 0 {
		delete(r.cache, r.order[0])
		r.order = r.order[1:]
	}
	if len(r.order) > 2*r.limit {
		// DIDs forgotten by identity events pile up: keep the live
		// ones, in order.
		kept := make([]string, 0, len(r.cache))
		seen := make(map[string]bool, len(r.cache))
		for _, d := range r.order {
			if _, ok := r.cache[d]; ok && !seen[d] {
				seen[d] = true
				kept = append(kept, d)
			}
		}
		r.order = kept
	}
}

// watch asks for the handles that from: atoms name, so their DIDs are
// known before their first post arrives; those asked for within the TTL
// are not asked again.
func (r *resolver) watch(handles map[string]bool, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for h := range r.watched {
		if !handles[h] {
			delete(r.watched, h)
		}
	}
	for h := range handles {
		if at, ok := r.watched[h]; ok && now.Sub(at) <= r.ttl {
			continue
		}
		r.watched[h] = now
		r.enqueueLocked(h)
	}
}

// size is how many DIDs the resolver knows about.
func (r *resolver) size() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.cache)
}

// run makes the calls until ctx ends: one as soon as MaxActorsPerCall
// actors wait, or linger after the first of fewer arrived; the handles of
// from: atoms are asked for again every TTL.
func (r *resolver) run(ctx context.Context) {
	retry := backoff.Policy{Min: lookupRetryMin, Max: lookupRetryMax}
	refresh := time.NewTicker(r.ttl)
	defer refresh.Stop()
	for {
		if r.waiting() == 0 {
			select {
			case <-ctx.Done():
				return
			case <-refresh.C:
				r.refreshWatched(time.Now())
				continue
			case <-r.wake:
				continue
			}
		}
		if !r.lingerFor(ctx) {
			return
		}
		batch := r.take()
		if len(batch) == 0 {
			continue
		}
		if err := r.lookup(ctx, batch); err != nil {
			if ctx.Err() != nil {
				return
			}
			r.requeue(batch)
			r.onErr(err)
			r.logger.Warn("bluesky handle lookup failed", "actors", len(batch), "err", err)
			if !backoff.Sleep(ctx, retry.Next()) {
				return
			}
			continue
		}
		retry.Reset()
		r.onErr(nil)
	}
}

// waiting is how many actors wait for a call.
func (r *resolver) waiting() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.queue)
}

// lingerFor waits up to linger for a call's worth of actors; false when
// ctx ended.
func (r *resolver) lingerFor(ctx context.Context) bool {
	t := time.NewTimer(r.linger)
	defer t.Stop()
	for {
		r.mu.Lock()
		full := len(r.queue) >= MaxActorsPerCall
		r.mu.Unlock()
		if full {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
			return true
		case <-r.wake:
		}
	}
}

// refreshWatched queues again the handles of from: atoms.
func (r *resolver) refreshWatched(now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for h := range r.watched {
		r.watched[h] = now
		r.enqueueLocked(h)
	}
}

// take removes up to MaxActorsPerCall actors from the queue.
func (r *resolver) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := min(len(r.queue), MaxActorsPerCall)
	batch := append([]string(nil), r.queue[:n]...)
	r.queue = r.queue[n:]
	if len(r.queue) == 0 {
		r.queue = nil // let the backing array go
	}
	return batch
}

// requeue puts the actors of a failed call back, except those that
// failed maxLookupAttempts times.
func (r *resolver) requeue(batch []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, a := range batch {
		n := r.queued[a] + 1
		if n >= maxLookupAttempts {
			delete(r.queued, a)
			continue
		}
		r.queued[a] = n
		r.queue = append(r.queue, a)
	}
}

// profilesAnswer is getProfiles' output, the fields the source reads.
type profilesAnswer struct {
	Profiles []struct {
		DID    string `json:"did"`
		Handle string `json:"handle"`
	} `json:"profiles"`
}

// xrpcError is the body of an XRPC error answer.
type xrpcError struct {
	Error   string `json:"error"`
	Message string `json:"message"`
}

// lookup makes one getProfiles call for actors (DIDs and handles) and
// records what it says: a DID it describes gets its handle, one it leaves
// out (deleted, taken down, unknown) is remembered as having none. The
// node is told every handle learned.
func (r *resolver) lookup(ctx context.Context, actors []string) error {
	q := url.Values{"actors": actors}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.base+"?"+q.Encode(), nil)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrAppView, err)
	}
	req.Header.Set("User-Agent", userAgent)
	req.Header.Set("Accept", "application/json")
	r.calls.Add(1)
	r.asked.Add(int64(len(actors)))
	resp, err := r.client.Do(req)
	if err != nil {
		r.fails.Add(1)
		return fmt.Errorf("%w: %v", ErrAppView, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxProfilesBytes+1))
	if err != nil {
		r.fails.Add(1)
		return fmt.Errorf("%w: reading the answer: %v", ErrAppView, err)
	}
	if resp.StatusCode != http.StatusOK {
		r.fails.Add(1)
		var xe xrpcError
		_ = json.Unmarshal(body, &xe)
		return fmt.Errorf("%w: %s answered %s: %s %s", ErrAppView, r.base, resp.Status, clip(xe.Error), clip(xe.Message))
	}
	if len(body) > maxProfilesBytes {
		r.fails.Add(1)
		return fmt.Errorf("%w: answer over %d bytes", ErrAppView, maxProfilesBytes)
	}
	var ans profilesAnswer
	if err := json.Unmarshal(body, &ans); err != nil {
		r.fails.Add(1)
		return fmt.Errorf("%w: answer is not getProfiles output: %v", ErrAppView, err)
	}
	now := time.Now()
	described := map[string]bool{}
	var learned []source.AuthorName
	r.mu.Lock()
	for _, p := range ans.Profiles {
		if !validDID(p.DID) {
			continue
		}
		h := normalHandle(p.Handle)
		described[p.DID] = true
		described[strings.ToLower(p.Handle)] = true
		r.setLocked(p.DID, handleEntry{handle: h, at: now})
		if h != "" {
			learned = append(learned, source.AuthorName{AuthorID: p.DID, Author: h})
		}
	}
	for _, a := range actors {
		delete(r.queued, a)
		if strings.HasPrefix(a, "did:") && !described[a] {
			r.setLocked(a, handleEntry{at: now})
		}
	}
	fn := r.names
	r.mu.Unlock()
	if fn != nil && len(learned) > 0 {
		fn(learned)
	}
	return nil
}
