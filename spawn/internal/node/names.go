package node

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/blackwidow-crawl/blackwidow/pkg/backoff"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store"
)

// Authors' names that arrive late. A source that hands items over before
// it knows their author's name (source.AuthorNamer) gives them the
// author's id as Author and tells the node the name when it learns it. The
// store writer puts a name that arrived between match and write into the
// comment (most comments are never stored without it); the comments
// stored without one are noted, and amended (store.Amender) when it comes.
// Amendments change what is stored, never usage: they are not new
// comments.
const (
	// namesKept bounds the names remembered for the writer, and
	// nameKeptFor how long each is: the time between a comment's match
	// and its write is seconds at most.
	namesKept   = 1 << 16
	nameKeptFor = 2 * time.Minute
	// unnamedKept bounds the stored comments waiting for their author's
	// name, and unnamedKeptFor how long each waits: a source asks for a
	// name within seconds, or not at all.
	unnamedKept    = 1 << 16
	unnamedKeptFor = 5 * time.Minute
	// amendBatch is the most amendments one store call carries, and
	// amendLinger how long the first waits for others to share the call.
	amendBatch  = 512
	amendLinger = 200 * time.Millisecond
	// amendQueued bounds the amendments waiting for the store; beyond it
	// the oldest are dropped (the comment keeps its author id).
	amendQueued = 1 << 16
	// amendAttempts is how often a failing amendment call is tried.
	amendAttempts = 3
	// amendRetryMin and amendRetryMax bound the wait between attempts.
	amendRetryMin = 500 * time.Millisecond
	amendRetryMax = 10 * time.Second
)

// learnedName is a name and when it was learned.
type learnedName struct {
	name string
	at   time.Time
}

// unnamedComment is a stored comment whose Author is still its author's
// id, and when it was stored.
type unnamedComment struct {
	ref store.Amendment // Author unset until the name comes
	at  time.Time
}

// authorNames keeps the names sources learn late, fills them into
// comments on their way to the store, and amends stored comments.
type authorNames struct {
	logger *slog.Logger
	wake   chan struct{}
	// namers counts the data sources started that name authors late;
	// without any, nothing is noted.
	namers atomic.Int64

	mu        sync.Mutex
	known     map[string]learnedName // author id → name
	knownFIFO []string
	unnamed   map[string][]unnamedComment // author id → comments stored under it
	waitFIFO  []string                    // author ids, in the order first noted
	nUnnamed  int
	ready     []store.Amendment // named, for the store
	amended   int64             // comments amended (for tests and metrics)
}

func newAuthorNames(logger *slog.Logger) *authorNames {
	return &authorNames{
		logger:  logger,
		wake:    make(chan struct{}, 1),
		known:   map[string]learnedName{},
		unnamed: map[string][]unnamedComment{},
	}
}

// learn takes names from a source: remembered for the writer, and queued
// as amendments for the comments stored without them. It never blocks.
func (a *authorNames) learn(names []source.AuthorName) {
	now := time.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	queued := false
	for _, n := range names {
		if n.AuthorID == "" || n.Author == "" || n.Author == n.AuthorID {
			continue
		}
		if _, ok := a.known[n.AuthorID]; !ok {
			a.knownFIFO = append(a.knownFIFO, n.AuthorID)
		}
		a.known[n.AuthorID] = learnedName{name: n.Author, at: now}
		if waiting, ok := a.unnamed[n.AuthorID]; ok {
			delete(a.unnamed, n.AuthorID)
			a.nUnnamed -= len(waiting)
			for _, w := range waiting {
				w.ref.Author = n.Author
				a.ready = append(a.ready, w.ref)
			}
			queued = true
		}
	}
	a.pruneLocked(now)
	if queued {
		source.Signal(a.wake)
	}
}

// pruneLocked forgets names and unnamed comments kept too long or beyond
// their bounds, and drops the oldest amendments beyond amendQueued.
func (a *authorNames) pruneLocked(now time.Time) {
	for len(a.knownFIFO) > 0 {
		id := a.knownFIFO[0]
		k, ok := a.known[id]
		if ok && len(a.known) <= namesKept && now.Sub(k.at) <= nameKeptFor {
			break
		}
		a.knownFIFO = a.knownFIFO[1:]
		if ok && (len(a.known) > namesKept || now.Sub(k.at) > nameKeptFor) {
			delete(a.known, id)
		}
	}
	for len(a.waitFIFO) > 0 {
		id := a.waitFIFO[0]
		w, ok := a.unnamed[id]
		if ok && a.nUnnamed <= unnamedKept && now.Sub(w[0].at) <= unnamedKeptFor {
			break
		}
		a.waitFIFO = a.waitFIFO[1:]
		if ok {
			delete(a.unnamed, id)
			a.nUnnamed -= len(w)
		}
	}
	if over := len(a.ready) - amendQueued; over > 0 {
		a.ready = append(a.ready[:0:0], a.ready[over:]...)
	}
}

// fill puts the names known into the batch's comments whose Author is
// still their author id, before the batch is written.
func (a *authorNames) fill(batch []pending) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.known) == 0 {
		return
	}
	for i := range batch {
		c := &batch[i].comment
		if c.AuthorID == "" || c.Author != c.AuthorID {
			continue
		}
		if k, ok := a.known[c.AuthorID]; ok {
			c.Author = k.name
		}
	}
}

// note records the written comments whose Author is still their author id,
// to amend when the name comes (at once when it came meanwhile).
func (a *authorNames) note(batch []pending) {
	if a.namers.Load() == 0 {
		return
	}
	now := time.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	queued := false
	for i := range batch {
		c := &batch[i].comment
		if c.AuthorID == "" || c.Author != c.AuthorID {
			continue
		}
		ref := store.Amendment{CrawlerID: c.CrawlerID, CommentID: c.ID, PublishedAt: c.PublishedAt, ThreadID: c.ThreadID}
		if k, ok := a.known[c.AuthorID]; ok {
			ref.Author = k.name
			a.ready = append(a.ready, ref)
			queued = true
			continue
		}
		if _, ok := a.unnamed[c.AuthorID]; !ok {
			a.waitFIFO = append(a.waitFIFO, c.AuthorID)
		}
		a.unnamed[c.AuthorID] = append(a.unnamed[c.AuthorID], unnamedComment{ref: ref, at: now})
		a.nUnnamed++
	}
	a.pruneLocked(now)
	if queued {
		source.Signal(a.wake)
	}
}

// take removes up to amendBatch amendments.
func (a *authorNames) take() []store.Amendment {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := min(len(a.ready), amendBatch)
	out := append([]store.Amendment(nil), a.ready[:n]...)
	a.ready = a.ready[n:]
	if len(a.ready) == 0 {
		a.ready = nil
	}
	return out
}

// run hands the amendments to the store until ctx ends; a store that
// cannot amend gets none (its comments keep their author id).
func (a *authorNames) run(ctx context.Context, st store.Store) {
	amender, ok := st.(store.Amender)
	for {
		select {
		case <-ctx.Done():
			return
		case <-a.wake:
		}
		if !backoff.Sleep(ctx, amendLinger) {
			return
		}
		for {
			batch := a.take()
			if len(batch) == 0 {
				break
			}
			if !ok {
				continue
			}
			a.amend(ctx, amender, batch)
		}
	}
}

// amend makes one store call for batch, retrying a failure a few times.
func (a *authorNames) amend(ctx context.Context, amender store.Amender, batch []store.Amendment) {
	retry := backoff.Policy{Min: amendRetryMin, Max: amendRetryMax}
	for attempt := 1; ; attempt++ {
		cctx, cancel := context.WithTimeout(ctx, writeCallTimeout)
		err := amender.Amend(cctx, batch)
		cancel()
		if err == nil {
			a.mu.Lock()
			a.amended += int64(len(batch))
			a.mu.Unlock()
			return
		}
		if ctx.Err() != nil {
			return
		}
		if attempt >= amendAttempts {
			a.logger.Warn("author names not amended", "count", len(batch), "err", err)
			return
		}
		if !backoff.Sleep(ctx, retry.Next()) {
			return
		}
	}
}

// amendedCount is how many comments were amended.
func (a *authorNames) amendedCount() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.amended
}
