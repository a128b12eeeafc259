package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/hub/internal/sqlstore"
)

// Retractions: what sources and operators take back (api.Retraction). A
// spawn reports what its sources took back in its poll answers, numbered on
// the spawn; the hub logs each in SQL (sqlstore.Retraction: its id is its
// place in the log) and acknowledges it in the next poll, as it does usage.
// Every poll then hands the spawn the log's entries after the one it last
// applied (PollResponse.RetractionsApplied, kept in its store, told again
// when it registers), so a removal reaches every store however many spawns
// share it or keep their own. The same post or account told by several
// spawns (every Bluesky spawn reads the whole network) is logged once.
const (
	// maxRetractionsPerPoll bounds the log entries one poll hands a spawn.
	maxRetractionsPerPoll = 2000
	// retractionCache is how many of the newest entries the hub keeps in
	// memory, so spawns that keep up are served without reading SQL.
	retractionCache = 8192
	// retractionDedupe is how long a retraction logged keeps an equal one
	// told by another spawn out of the log, and dedupeKept how many are
	// remembered for that.
	retractionDedupe = 10 * time.Minute
	dedupeKept       = 1 << 16
	// RetractionsKept is how long the log keeps an entry: longer than any
	// tombstone lasts (a spawn that needs an older one would find its
	// tombstone expired anyway).
	RetractionsKept = 9 * 24 * time.Hour
	// retractionPruneEvery is how often the leader prunes the log.
	retractionPruneEvery = time.Hour
	// forgetCallTimeout bounds one spawn's answer to a forget.
	forgetCallTimeout = 2 * time.Minute
	// maxAuthorBytes bounds the author a forget names.
	maxAuthorBytes = 1024
)

// retractLog is the hub's view of the log.
type retractLog struct {
	// appendMu serialises appends: each commits before the next takes
	// ids, so no spawn reads an entry past one not yet committed (and
	// skips it).
	appendMu  sync.Mutex
	mu        sync.Mutex
	head      int64 // the log's last id
	headKnown bool
	recent    []api.Retraction // the newest entries, oldest first
	last      map[string]loggedRetraction
	lastFIFO  []string
}

// loggedRetraction is what de-duplication compares of a logged entry.
type loggedRetraction struct {
	active   bool
	status   string
	editedAt time.Time
	at       time.Time
}

func newRetractLog() *retractLog {
	return &retractLog{last: map[string]loggedRetraction{}}
}

// nodeRetract is one spawn's place in the log.
type nodeRetract struct {
	mu sync.Mutex
	// applied is the log's highest entry the spawn's store has applied.
	applied uint64
	// logged is the spawn's highest retraction number logged, acks those
	// to acknowledge in the next poll.
	logged uint64
	acks   []uint64
	// storeID names the spawn's store (api.RegisterRequest.Store).
	storeID string
}

// registeredRetract records what a registering spawn says of its store.
func (n *node) registeredRetract(req api.RegisterRequest) {
	n.retract.mu.Lock()
	defer n.retract.mu.Unlock()
	n.retract.applied, n.retract.storeID = req.RetractionsApplied, req.Store
}

// head reads the log's end once, then keeps it.
func (h *Hub) retractionHead(ctx context.Context) (int64, error) {
	l := h.retract
	l.mu.Lock()
	if l.headKnown {
		defer l.mu.Unlock()
		return l.head, nil
	}
	l.mu.Unlock()
	head, err := h.cfg.Store.RetractionHead(ctx)
	if err != nil {
		return 0, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.headKnown {
		l.head, l.headKnown = max(l.head, head), true
	}
	return l.head, nil
}

// addRetractions puts into a poll the acknowledgements of what the spawn
// reported and the log's entries it has not applied. The caller holds
// n.opMu, not h.mu: entries beyond the cache are read from SQL.
func (h *Hub) addRetractions(ctx context.Context, n *node, req *api.PollRequest) {
	n.retract.mu.Lock()
	req.RetractionAcks = n.retract.acks
	n.retract.acks = nil
	applied := n.retract.applied
	n.retract.mu.Unlock()
	head, err := h.retractionHead(ctx)
	if err != nil {
		h.logger.Warn("unable to read the retraction log", "err", err)
		return
	}
	if applied >= uint64(head) {
		return
	}
	l := h.retract
	l.mu.Lock()
	if len(l.recent) > 0 && l.recent[0].Seq <= applied+1 {
		i, _ := slices.BinarySearchFunc(l.recent, applied+1, func(r api.Retraction, seq uint64) int {
			return cmpSeq(r.Seq, seq)
		})
		req.Retractions = slices.Clone(l.recent[i:min(len(l.recent), i+maxRetractionsPerPoll)])
		l.mu.Unlock()
		return
	}
	l.mu.Unlock()
	rows, err := h.cfg.Store.RetractionsAfter(ctx, int64(applied), maxRetractionsPerPoll)
	if err != nil {
		h.logger.Warn("unable to read the retraction log", "node_id", n.id, "err", err)
		return
	}
	req.Retractions = make([]api.Retraction, len(rows))
	for i, r := range rows {
		req.Retractions[i] = r.API()
	}
}

func cmpSeq(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// takeRetractions takes in a poll answer's part: how far the spawn's store
// got through the log, and what its sources took back, which is logged
// (once, whichever spawns tell it) and acknowledged in the next poll.
func (h *Hub) takeRetractions(ctx context.Context, n *node, resp api.PollResponse) {
	n.retract.mu.Lock()
	n.retract.applied = max(n.retract.applied, resp.RetractionsApplied)
	logged := n.retract.logged
	n.retract.mu.Unlock()
	if len(resp.Retractions) == 0 {
		return
	}
	var fresh []api.Retraction
	var seqs []uint64
	for _, r := range resp.Retractions {
		seqs = append(seqs, r.Seq)
		if r.Seq > logged && h.validRetraction(r) {
			fresh = append(fresh, r)
		}
	}
	rows := h.retract.dedupe(fresh, time.Now())
	if err := h.logRetractions(ctx, rows, n.id); err != nil {
		h.logger.Warn("retractions not logged, the spawn tells them again", "node_id", n.id, "count", len(rows), "err", err)
		return
	}
	n.retract.mu.Lock()
	n.retract.acks = append(n.retract.acks, seqs...)
	n.retract.logged = max(n.retract.logged, slices.Max(seqs))
	n.retract.mu.Unlock()
}

// validRetraction keeps out what no store could apply.
func (h *Hub) validRetraction(r api.Retraction) bool {
	if _, ok := h.Sources().Lookup(r.Source); !ok {
		return false
	}
	switch r.Op {
	case api.RetractDelete, api.RetractUpdate:
		return r.ID != ""
	case api.RetractAccount, api.RetractForget:
		return r.Author != ""
	}
	return false
}

// dedupe leaves out the retractions equal to one logged within
// retractionDedupe (told by another spawn), and the repeats within rs.
func (l *retractLog) dedupe(rs []api.Retraction, now time.Time) []api.Retraction {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []api.Retraction
	batch := map[string]loggedRetraction{}
	for _, r := range rs {
		k := r.Key()
		cur := loggedRetraction{active: r.Active, status: r.Status, editedAt: r.EditedAt, at: now}
		same := func(old loggedRetraction) bool {
			return old.active == cur.active && old.status == cur.status && old.editedAt.Equal(cur.editedAt)
		}
		if old, ok := l.last[k]; ok && now.Sub(old.at) < retractionDedupe && same(old) {
			continue
		}
		if old, ok := batch[k]; ok && same(old) {
			continue
		}
		batch[k] = cur
		out = append(out, r)
	}
	return out
}

// rememberLocked records retractions as logged now, for dedupe. The caller
// holds l.mu.
func (l *retractLog) rememberLocked(rs []api.Retraction, now time.Time) {
	for _, r := range rs {
		k := r.Key()
		if _, ok := l.last[k]; !ok {
			l.lastFIFO = append(l.lastFIFO, k)
		}
		l.last[k] = loggedRetraction{active: r.Active, status: r.Status, editedAt: r.EditedAt, at: now}
	}
	for len(l.last) > dedupeKept && len(l.lastFIFO) > 0 {
		delete(l.last, l.lastFIFO[0])
		l.lastFIFO = l.lastFIFO[1:]
	}
}

// logRetractions appends retractions to the log and to the cache.
func (h *Hub) logRetractions(ctx context.Context, rs []api.Retraction, origin string) error {
	if len(rs) == 0 {
		return nil
	}
	rows := make([]sqlstore.Retraction, 0, len(rs))
	for _, r := range rs {
		row, err := sqlstore.RetractionRow(r, origin)
		if err != nil {
			continue // too long to keep: no spawn told a real one
		}
		rows = append(rows, row)
	}
	// The head must be known before the entries are added to the cache.
	if _, err := h.retractionHead(ctx); err != nil {
		return err
	}
	h.retract.appendMu.Lock()
	defer h.retract.appendMu.Unlock()
	rows, err := h.cfg.Store.AppendRetractions(ctx, rows)
	if err != nil {
		return err
	}
	l := h.retract
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, row := range rows {
		e := row.API()
		// Entries logged concurrently may land out of id order: keep the
		// cache sorted.
		i, _ := slices.BinarySearchFunc(l.recent, e.Seq, func(r api.Retraction, seq uint64) int { return cmpSeq(r.Seq, seq) })
		l.recent = slices.Insert(l.recent, i, e)
		l.head = max(l.head, row.ID)
	}
	if over := len(l.recent) - retractionCache; over > 0 {
		l.recent = slices.Delete(l.recent, 0, over)
	}
	h.metrics.retractionsLogged.Add(float64(len(rows)))
	l.rememberLocked(rs, time.Now())
	h.scrubSamples(rs)
	return nil
}

// scrubSamples takes what the retractions removed out of the alerts'
// samples, in the background (h.wg joins it).
func (h *Hub) scrubSamples(rs []api.Retraction) {
	var ids, authors []string
	for _, r := range rs {
		switch {
		case r.Op == api.RetractDelete:
			ids = append(ids, r.ID)
		case r.Removes():
			authors = append(authors, r.Author)
		}
	}
	if len(ids) == 0 && len(authors) == 0 {
		return
	}
	h.run.wg.Add(1)
	go func() {
		defer h.run.wg.Done()
		ctx, cancel := context.WithTimeout(h.runContext(), storeReadTimeout)
		defer cancel()
		if _, err := h.cfg.Store.ScrubAlertSamples(ctx, ids, authors); err != nil && ctx.Err() == nil {
			h.logger.Warn("alert samples not scrubbed of removed comments", "err", err)
		}
	}()
}

// ErrNoStore is returned by Forget when no live spawn can remove comments.
var ErrNoStore = errors.New("cluster: no live spawn can remove comments")

// Forget erases an author: every comment of theirs in every crawler of
// the source, published before now, is removed and kept from being stored
// again. It is logged for every spawn (those that do not answer now apply
// it when they next hear from the hub), and one spawn of each store applies
// it at once; the answer counts what they removed, per crawler, and the
// stores that did not answer.
func (h *Hub) Forget(ctx context.Context, source, author string) (api.ForgetResult, error) {
	author = strings.TrimSpace(author)
	switch {
	case !h.knownKind(source):
		return api.ForgetResult{}, fmt.Errorf("%w: %w", ErrInvalid, h.Sources().Unknown(source))
	case author == "":
		return api.ForgetResult{}, fmt.Errorf("%w: author is required (an author_id or a handle)", ErrInvalid)
	case len(author) > maxAuthorBytes:
		return api.ForgetResult{}, fmt.Errorf("%w: author must be at most %d bytes", ErrInvalid, maxAuthorBytes)
	}
	r := api.Retraction{Op: api.RetractForget, Source: source, Author: author, At: time.Now().UTC(), Reason: "forget request"}
	if err := h.logRetractions(ctx, []api.Retraction{r}, ""); err != nil {
		return api.ForgetResult{}, err
	}
	// One spawn per store; a spawn that does not name its store is its
	// own.
	h.mu.Lock()
	epoch := h.epoch
	byStore := map[string][]*node{}
	for _, id := range h.sortedNodeIDsLocked() {
		n := h.nodes[id]
		n.retract.mu.Lock()
		key := n.retract.storeID
		n.retract.mu.Unlock()
		if key == "" {
			key = "node:" + n.id
		}
		byStore[key] = append(byStore[key], n)
	}
	h.mu.Unlock()
	if len(byStore) == 0 {
		return api.ForgetResult{}, ErrNoStore
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	out := api.ForgetResult{}
	crawlers := map[int64]bool{}
	for _, nodes := range byStore {
		wg.Go(func() {
			for _, n := range nodes { // the next spawn of the store when one fails
				cctx, cancel := context.WithTimeout(ctx, forgetCallTimeout)
				resp, err := h.nodeAPI(n).Retract(cctx, api.RetractRequest{Epoch: epoch, Retractions: []api.Retraction{r}})
				cancel()
				if err != nil {
					h.logger.Warn("forget not applied by a spawn, it applies it from the log", "node_id", n.id, "err", err)
					continue
				}
				mu.Lock()
				for id, k := range resp.Removed {
					out.Removed += k
					crawlers[id] = true
				}
				mu.Unlock()
				return
			}
			mu.Lock()
			out.Pending++
			mu.Unlock()
		})
	}
	wg.Wait()
	h.mu.Lock()
	// The event names neither the author nor anything they wrote.
	h.events.add("forget", fmt.Sprintf("an author of %s was forgotten on request: %d comments removed in %d crawlers%s",
		source, out.Removed, len(crawlers), pendingNote(out.Pending)))
	h.mu.Unlock()
	h.logger.Info("author forgotten", "source", source, "removed", out.Removed, "crawlers", len(crawlers), "pending_stores", out.Pending)
	return out, nil
}

func pendingNote(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d stores apply it when they next hear from the hub)", n)
}

// pruneLoop drops log entries older than RetractionsKept, hourly, while
// the hub leads.
func (h *Hub) pruneLoop(ctx context.Context) {
	t := time.NewTicker(retractionPruneEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		n, err := h.cfg.Store.PruneRetractions(ctx, time.Now().Add(-RetractionsKept))
		if err != nil && ctx.Err() == nil {
			h.logger.Warn("unable to prune the retraction log", "err", err)
		}
		if n > 0 {
			h.logger.Info("retraction log pruned", "entries", n)
		}
	}
}

// retentionLocked is a crawler's retention: its own, else its user's
// default; 0 for none.
func (h *Hub) retentionLocked(r sqlstore.Crawler) time.Duration {
	if r.RetentionSeconds > 0 {
		return time.Duration(r.RetentionSeconds) * time.Second
	}
	if u, ok := h.users[r.UserID]; ok && u.row.RetentionSeconds > 0 {
		return time.Duration(u.row.RetentionSeconds) * time.Second
	}
	return 0
}
