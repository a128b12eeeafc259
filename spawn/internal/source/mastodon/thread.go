package mastodon

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
)

var _ source.SubscriberErrors = (*instance)(nil)

// Pacing of the reply look-ups.
const (
	// lookupRetryAfter is how long the look-ups pause after one failed
	// for a passing reason (the instance answered 5xx, or not at all).
	lookupRetryAfter = time.Second
	// minReleaseWait is the shortest a waiting reply's wake-up is put off,
	// so a clock that has just passed a deadline does not spin.
	minReleaseWait = 5 * time.Millisecond
)

// A reply names its parent only by the parent's id on the instance, so the
// source links it from the statuses it has seen there, else from the
// reply's context on the instance (its ancestors, the thread's first status
// first). A look-up costs one of the token's REST calls, which the
// instance rations (300 in 5 minutes on Mastodon, shared with the follow
// checks and the gap fills). A reply whose parent cannot be named at once
// waits, with every status that arrives after it so their order stays the
// instance's (a crawler's cursor is the newest status it stored), until a
// look-up is allowed, its parent arrives, or ReplyWait passes; then it is
// handed over, without reply_to only if its parent stayed unknown.

// heldFrame is a status waiting its turn.
type heldFrame struct {
	f     frame
	until time.Time // when it goes on whatever its parent
}

// budget is what the instance last said of the token's REST calls
// (RateLimitHeaders): how many it allows in a window, how many are left,
// and when the window ends.
type budget struct {
	known     bool
	limit     int
	remaining int
	reset     time.Time
}

// blocked reports whether the look-ups must wait for the window's end: they
// leave a quarter of the token's calls to the follow checks and gap fills.
func (b budget) blocked(now time.Time) bool {
	return b.known && now.Before(b.reset) && b.remaining <= max(1, b.limit/4)
}

// noteBudget reads the rate limit headers of one of the instance's
// answers; an answer without them changes nothing.
func (i *instance) noteBudget(h http.Header, code int) {
	limit, err1 := strconv.Atoi(h.Get("X-RateLimit-Limit"))
	remaining, err2 := strconv.Atoi(h.Get("X-RateLimit-Remaining"))
	reset, err3 := time.Parse(time.RFC3339Nano, h.Get("X-RateLimit-Reset"))
	if err1 != nil || err2 != nil || err3 != nil || limit <= 0 {
		return
	}
	if code == http.StatusTooManyRequests {
		remaining = 0
	}
	i.mu.Lock()
	i.budget = budget{known: true, limit: limit, remaining: max(0, remaining), reset: reset}
	i.mu.Unlock()
}

func (i *instance) rateBudget() budget {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.budget
}

// status hands a status over, or holds it (and every status after it)
// while its parent cannot be named yet; the caller holds handling.
func (s *session) status(ctx context.Context, f frame, emit source.Emit) error {
	now := time.Now()
	if len(s.held) == 0 {
		if s.duplicate(f) {
			return s.hand(ctx, f, nil, emit)
		}
		if parent, wait := s.parentNow(ctx, f.status, now, false); !wait {
			return s.hand(ctx, f, parent, emit)
		}
	}
	s.held = append(s.held, heldFrame{f: f, until: now.Add(s.opts.ReplyWait)})
	s.stats.held.Add(1)
	source.Signal(s.heldWake)
	return s.release(ctx, emit, now)
}

// release hands the held statuses over, oldest first, while their parents
// can be named or their wait is over; the caller holds handling.
func (s *session) release(ctx context.Context, emit source.Emit, now time.Time) error {
	for len(s.held) > 0 {
		h := s.held[0]
		force := !now.Before(h.until) || len(s.held) > s.opts.ReplyQueue
		var parent *link
		if !s.duplicate(h.f) {
			var wait bool
			if parent, wait = s.parentNow(ctx, h.f.status, now, force); wait {
				return nil
			}
		}
		s.held[0] = heldFrame{}
		s.held = s.held[1:]
		if err := s.hand(ctx, h.f, parent, emit); err != nil {
			return err
		}
	}
	s.held = nil
	return nil
}

// releaseWait is how long until the held statuses may move: the first
// one's deadline, the end of the instance's window, the look-ups' pause or
// the next look-up the spawn's own pacing allows; false when none is held.
// The caller holds handling.
func (s *session) releaseWait(now time.Time) (time.Duration, bool) {
	if len(s.held) == 0 {
		return 0, false
	}
	next := s.held[0].until
	b := s.rateBudget()
	switch {
	case now.Before(s.lookupRetryAt):
		next = minTime(next, s.lookupRetryAt)
	case b.blocked(now):
		next = minTime(next, b.reset)
	case !b.known:
		next = minTime(next, now.Add(s.resolve.wait(now)))
	default:
		next = now
	}
	return max(next.Sub(now), minReleaseWait), true
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// runRelease hands the held statuses over as they become free to go, until
// ctx ends.
func (s *session) runRelease(ctx context.Context, emit source.Emit) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		s.handling.Lock()
		wait, held := s.releaseWait(time.Now())
		s.handling.Unlock()
		var fire <-chan time.Time
		if held {
			timer.Reset(wait)
			fire = timer.C
		}
		select {
		case <-ctx.Done():
			return
		case <-s.heldWake:
		case <-fire:
		}
		timer.Stop()
		s.handling.Lock()
		err := s.release(ctx, emit, time.Now())
		s.handling.Unlock()
		if err != nil {
			return // ctx ended, or the node refused: the reader sees it too
		}
	}
}

// dropHeld forgets a held status deleted before it was handed over; the
// caller holds handling.
func (s *session) dropHeld(id string) bool {
	n := len(s.held)
	s.held = slices.DeleteFunc(s.held, func(h heldFrame) bool { return h.f.status.ID == id })
	return len(s.held) < n
}

// parentNow is the status st replies to, when the source can name it now:
// nil when st is not a reply. wait says st should wait for it, which it
// never does when force is set (its parent then stays unknown).
func (s *session) parentNow(ctx context.Context, st *status, now time.Time, force bool) (parent *link, wait bool) {
	if st.InReplyToID == nil || *st.InReplyToID == "" {
		return nil, false
	}
	pid := *st.InReplyToID
	if !localID(pid) {
		s.stats.unresolved.Add(1)
		return nil, false
	}
	if l, ok := s.recent.get(pid); ok {
		return &l, false
	}
	if l, ok := s.heldLink(pid); ok {
		return &l, false
	}
	if !s.mayLookUp(now) {
		if force {
			s.stats.unresolved.Add(1)
			return nil, false
		}
		return nil, true
	}
	parent, retry := s.lookUp(ctx, st, pid)
	switch {
	case retry && !force:
		return nil, true
	case parent == nil:
		s.stats.unresolved.Add(1)
	}
	return parent, false
}

// heldLink is what a held status says of itself as a parent, when that
// needs no look-up: a status that replies to nothing starts its thread,
// one whose parent the source knows is in that parent's thread.
func (s *session) heldLink(id string) (link, bool) {
	for _, h := range s.held {
		st := h.f.status
		if st.ID != id {
			continue
		}
		uri := source.ItemID(strings.TrimSpace(st.URI))
		if uri == "" {
			return link{}, false
		}
		if st.InReplyToID == nil || *st.InReplyToID == "" {
			return link{uri: uri}, true
		}
		if p, ok := s.recent.get(*st.InReplyToID); ok {
			return link{uri: uri, thread: p.threadOf(), orphan: p.threadOf() == ""}, true
		}
		return link{}, false
	}
	return link{}, false
}

// mayLookUp reports whether a look-up may be made now: not while the
// look-ups pause after a failure, within what the instance says is left
// of the token's calls, and, from an instance that says nothing of them,
// at most ResolveRate a second (bursts of ResolveBurst).
func (s *session) mayLookUp(now time.Time) bool {
	if now.Before(s.lookupRetryAt) {
		return false
	}
	if b := s.rateBudget(); b.known {
		return !b.blocked(now)
	}
	return s.resolve.take(now)
}

// lookUp reads a reply's context on the instance (its ancestors, the
// thread's first status first, the parent last), remembers the statuses
// it names and returns the parent: nil when the instance does not know it
// or hides it. retry says the look-up failed for a passing reason (a 429,
// a 5xx, no answer) and may be made again.
func (s *session) lookUp(ctx context.Context, st *status, pid string) (parent *link, retry bool) {
	var doc struct {
		Ancestors []struct {
			ID          string  `json:"id"`
			URI         string  `json:"uri"`
			InReplyToID *string `json:"in_reply_to_id"`
		} `json:"ancestors"`
	}
	s.busy.Store(true)
	_, err := s.api(ctx, http.MethodGet, "/api/v1/statuses/"+url.PathEscape(st.ID)+"/context", maxContextBytes, &doc)
	s.seen()
	s.busy.Store(false)
	if err != nil {
		if notFound(err) || refused(err) || ctx.Err() != nil {
			return nil, false
		}
		// A 429 also ends the window (noteBudget); one from a server that
		// says nothing of its window pauses the look-ups all the same.
		s.lookupRetryAt = time.Now().Add(lookupRetryAfter)
		s.logger.Warn("mastodon reply context look-up failed", "status", st.ID, "err", err)
		return nil, true
	}
	s.stats.resolved.Add(1)
	// The first ancestor is the thread's first status only when it replies
	// to nothing: the instance leaves out what it does not know or may not
	// show, and then the thread's first status is unknown.
	var root string
	orphan := len(doc.Ancestors) > 0 && doc.Ancestors[0].InReplyToID != nil && *doc.Ancestors[0].InReplyToID != ""
	for n, a := range doc.Ancestors {
		uri := strings.TrimSpace(a.URI)
		if !localID(a.ID) || uri == "" {
			orphan = true // the chain is broken from here on
			continue
		}
		l := link{uri: source.ItemID(uri), thread: root, orphan: orphan}
		if n == 0 && !orphan {
			root = l.uri
		}
		if _, known := s.recent.get(a.ID); !known {
			s.recent.put(a.ID, l)
		}
		if a.ID == pid {
			parent = &l
		}
	}
	return parent, false
}

// bucket is a token bucket: rate tokens a second, at most burst saved.
// Its owner is one goroutine.
type bucket struct {
	rate   float64
	burst  float64
	tokens float64
	last   time.Time
}

func newBucket(rate float64, burst int) *bucket {
	return &bucket{rate: rate, burst: float64(burst), tokens: float64(burst)}
}

// fill adds the tokens earned since the last call.
func (b *bucket) fill(now time.Time) {
	if !b.last.IsZero() {
		b.tokens = min(b.burst, b.tokens+now.Sub(b.last).Seconds()*b.rate)
	}
	b.last = now
}

// take spends a token when there is one.
func (b *bucket) take(now time.Time) bool {
	b.fill(now)
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// wait is how long until a token is there.
func (b *bucket) wait(now time.Time) time.Duration {
	b.fill(now)
	if b.tokens >= 1 {
		return 0
	}
	return time.Duration((1 - b.tokens) / b.rate * float64(time.Second))
}
