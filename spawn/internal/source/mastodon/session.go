package mastodon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source/internal/wsconn"
)

// minWatchInterval is the shortest interval at which a session checks for
// silence, however short the configured timeouts.
const minWatchInterval = 5 * time.Millisecond

// session is one open connection to an instance.
type session struct {
	*instance
	conn *wsconn.Conn
	// last is when the connection last carried something (UnixNano).
	last atomic.Int64
	// healthy is set once the connection carried something valid.
	healthy atomic.Bool
	// busy is set while an item is being handed over: a store pushing
	// back is not silence on the connection.
	busy atomic.Bool
}

func (s *session) seen() { s.last.Store(time.Now().UnixNano()) }

// alive records a valid message, ping or pong: the connection works, and
// unless an error event refused the token, so does the token.
func (s *session) alive() {
	s.seen()
	if !s.healthy.Swap(true) && !s.refusedByEvent.Load() {
		s.setErr(source.PartConnection, nil)
	}
}

// serve subscribes the wanted streams and keeps the subscriptions in step
// with the subscribers, while a reader hands the statuses over and a
// watcher pings and checks for silence, until the connection fails or ctx
// ends.
func (s *session) serve(ctx context.Context, emit source.Emit) error {
	sctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	failed := make(chan error, 2)
	wg.Go(func() { failed <- s.read(sctx, emit) })
	wg.Go(func() { failed <- s.watch(sctx) })
	wg.Go(func() { s.ping(sctx) })
	stop := func(err error) error {
		cancel()
		s.conn.CloseNow()
		wg.Wait()
		return err
	}
	// Statuses waiting for their parents go on beside the reader
	// (thread.go).
	wg.Go(func() { s.runRelease(sctx, emit) })
	// Gaps are filled beside the reader, once the streams they cover
	// are subscribed (backfill.go).
	fillWake := make(chan struct{}, 1)
	wg.Go(func() {
		for {
			select {
			case <-sctx.Done():
				return
			case <-fillWake:
			}
			s.runFill(sctx, emit)
		}
	})
	subscribed := map[sub]bool{}
	for {
		if err := s.reconcile(sctx, subscribed); err != nil {
			return stop(err)
		}
		source.Signal(fillWake)
		select {
		case <-ctx.Done():
			return stop(ctx.Err())
		case err := <-failed:
			return stop(err)
		case <-s.changed:
		}
	}
}

// reconcile subscribes the wanted streams not subscribed yet, then
// unsubscribes the ones no longer wanted: subscribing first means a switch
// from hashtags to public misses nothing.
func (s *session) reconcile(ctx context.Context, subscribed map[sub]bool) error {
	want := s.wanted()
	for _, w := range want {
		if subscribed[w] {
			continue
		}
		if err := s.send(ctx, "subscribe", w); err != nil {
			return err
		}
		subscribed[w] = true
		s.setLive(w, true)
		s.stats.subscribes.Add(1)
	}
	for _, old := range slices.SortedFunc(maps.Keys(subscribed), cmpSub) {
		if slices.Contains(want, old) {
			continue
		}
		if err := s.send(ctx, "unsubscribe", old); err != nil {
			return err
		}
		delete(subscribed, old)
		s.setLive(old, false)
		s.stats.unsubscribes.Add(1)
	}
	return nil
}

// send writes one subscription message.
func (s *session) send(ctx context.Context, typ string, w sub) error {
	msg := map[string]string{"type": typ, "stream": w.stream}
	if w.tag != "" {
		msg["tag"] = w.tag
	}
	b, _ := json.Marshal(msg)
	if err := s.conn.Write(ctx, s.opts.WriteTimeout, b); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("%w: unable to %s %s: %w", ErrConnectionLost, typ, w, err)
	}
	s.logger.Debug("mastodon "+typ, "stream", w.String())
	return nil
}

// ping pings the instance every PingInterval until ctx ends, so that a
// quiet connection still carries pongs. The write may take up to
// WriteTimeout (the library drops a connection whose write outlives its
// context, so a tight one would cut a healthy connection on a busy
// machine); a missing pong shows as silence to watch.
func (s *session) ping(ctx context.Context) {
	t := time.NewTicker(s.opts.PingInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		pctx, cancel := context.WithTimeout(ctx, s.opts.WriteTimeout)
		_ = s.conn.Ping(pctx)
		cancel()
	}
}

// watch ends the connection when nothing (message, ping, pong) arrived
// for StallTimeout outside the time spent handing items over. It returns
// nil when ctx ends.
func (s *session) watch(ctx context.Context) error {
	every := max(s.opts.StallTimeout/4, minWatchInterval)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if s.busy.Load() {
			continue
		}
		if silent := time.Since(time.Unix(0, s.last.Load())); silent > s.opts.StallTimeout {
			s.stats.stalls.Add(1)
			return fmt.Errorf("%w: nothing for %v", ErrStalled, silent.Round(time.Millisecond))
		}
	}
}

// read handles the instance's messages until the connection fails. The
// reads have no deadline of their own: pings and pongs prove the
// connection alive too, and watch sees them.
func (s *session) read(ctx context.Context, emit source.Emit) error {
	for {
		data, err := s.conn.Read(ctx)
		if err != nil {
			return err
		}
		s.seen()
		f, err := decodeFrame(data)
		if err != nil {
			s.skip(err, len(data))
			continue
		}
		s.alive()
		switch f.kind {
		case frameError:
			if err := s.serverError(f); err != nil {
				return err
			}
		case frameOther:
			if f.event == eventDelete {
				s.deleted(f)
				if f.stream == streamPublic {
					s.publicDelete()
				}
				continue
			}
			s.stats.ignored.Add(1)
		case frameStatus:
			switch f.stream {
			case streamPublic:
				s.publicDeletes = 0
			case streamUser:
				if !s.fromFollowedTag(f) {
					s.stats.filtered.Add(1)
					continue
				}
			}
			if _, err := s.handle(ctx, f, emit); err != nil {
				return err
			}
		}
	}
}

// publicDelete counts a delete event of the public stream: ClosedAfterDeletes
// of them in a row, with no status between them, mean the instance keeps
// its public statuses from the token (mastodon/mastodon#37883).
func (s *session) publicDelete() {
	s.publicDeletes++
	if s.publicDeletes >= s.opts.ClosedAfterDeletes {
		s.markDeleteOnly(s.publicDeletes)
	}
}

// fromFollowedTag reports whether a status of the home timeline is one
// the hashtag streams of the followed tags would have carried: public, not
// a reblog, with a tag the source follows for its subscribers. The home
// timeline also carries the account's own statuses and those of the
// accounts it follows, private ones and reblogs included.
func (s *session) fromFollowedTag(f frame) bool {
	return !f.reblog && f.status.Visibility == visibilityPublic && s.followed(f.status.Tags)
}

// skip counts and reports a message or status that could not be used.
func (s *session) skip(err error, size int) {
	if errors.Is(err, ErrTruncated) {
		s.stats.truncated.Add(1)
	} else {
		s.stats.malformed.Add(1)
	}
	s.setErr(source.PartMessages, err)
	s.logger.Warn("mastodon message skipped", "err", err, "bytes", size)
}

// serverError handles an error event: a refused token ends the
// connection, anything else (an unknown stream, a missing tag) shows on
// the subscribers as passing.
func (s *session) serverError(f frame) error {
	if f.code == http.StatusUnauthorized || f.code == http.StatusForbidden {
		s.refusedByEvent.Store(true)
		return fmt.Errorf("%w: %s answered %d: %s; check the spawn's Mastodon access token (a user token with read:statuses)", ErrTokenRefused, s.base.Host, f.code, f.errMsg)
	}
	s.stats.serverErrs.Add(1)
	s.setErr(source.PartMessages, fmt.Errorf("%w: %s (status %d)", ErrServer, f.errMsg, f.code))
	s.logger.Warn("mastodon error event", "error", f.errMsg, "status", f.code)
	return nil
}

// handle hands a status over unless it was handed over already, or holds
// it until its parent can be named (status), and reports whether it was
// new.
func (s *session) handle(ctx context.Context, f frame, emit source.Emit) (bool, error) {
	s.handling.Lock()
	defer s.handling.Unlock()
	before, held := s.stats.items.Load(), s.stats.held.Load()
	if err := s.status(ctx, f, emit); err != nil {
		return false, err
	}
	return s.stats.items.Load() != before || s.stats.held.Load() != held, nil
}

// duplicate reports whether this source has handed a status over
// already: an update seen before came through another stream (a status
// with two subscribed tags, or two followed tags on the home timeline), a
// timeline read to fill a gap, or is a reblog of a status already read;
// an edit is new when its edited_at is. A status deleted before it was
// handed over is not handed over either.
func (s *session) duplicate(f frame) bool {
	l, known := s.recent.get(f.status.ID)
	return known && (l.deleted || l.emitted && (f.event == eventUpdate || l.edited == editedAt(f.status)))
}

// editedAt is a status's edited_at as the instance wrote it, "" when it
// was never edited.
func editedAt(st *status) string {
	if st.EditedAt == nil {
		return ""
	}
	return *st.EditedAt
}

// hand hands a status over as a reply to parent (nil: none, or unknown)
// unless it is a duplicate; the caller holds handling.
func (s *session) hand(ctx context.Context, f frame, parent *link, emit source.Emit) error {
	st := f.status
	edited := editedAt(st)
	l, known := s.recent.get(st.ID)
	if s.duplicate(f) {
		s.stats.duplicates.Add(1)
		return nil
	}
	it, err := statusItem(st, s.domain, parent, time.Now())
	if err != nil {
		s.skip(err, 0)
		return nil
	}
	reply := st.InReplyToID != nil && *st.InReplyToID != ""
	s.recent.put(st.ID, link{uri: it.ID, thread: it.ThreadID, orphan: reply && it.ThreadID == "", emitted: true, edited: edited})
	if f.event == eventEdit && edited != "" {
		// An edit replaces the stored text wherever the status is stored
		// (here or by another spawn); one this connection handed over
		// already is not handed over again.
		s.edited(it, edited)
		if known && l.emitted {
			return nil
		}
	}
	s.busy.Store(true)
	err = emit(ctx, []source.Item{it})
	s.seen()
	s.busy.Store(false)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("mastodon: unable to hand over a status: %w", err)
	}
	s.stats.items.Add(1)
	s.setErr(source.PartMessages, nil)
	if s.refusedByEvent.Swap(false) {
		s.setErr(source.PartConnection, nil)
	}
	s.noteStatus(st.ID)
	return nil
}

// statusCache remembers the last statuses seen on an instance by local
// id, forgetting the oldest beyond its size.
type statusCache struct {
	size  int
	links map[string]link
	order []string // ring of ids, oldest at next once full
	next  int
}

func newStatusCache(size int) *statusCache {
	return &statusCache{size: size, links: map[string]link{}}
}

func (c *statusCache) get(id string) (link, bool) {
	l, ok := c.links[id]
	return l, ok
}

func (c *statusCache) put(id string, l link) {
	if _, ok := c.links[id]; ok {
		c.links[id] = l
		return
	}
	if len(c.order) < c.size {
		c.order = append(c.order, id)
	} else {
		delete(c.links, c.order[c.next])
		c.order[c.next] = id
		c.next = (c.next + 1) % c.size
	}
	c.links[id] = l
}
