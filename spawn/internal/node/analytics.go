package node

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/terms"
)

// Analytics: the terms, authors and activity of what the node stores
// travel with its usage increments (api.IncrementAnalytics). The terms of a
// counted comment are extracted ahead of the store writer (extractTerms),
// and a batch's analytics worked out while the store writes it
// (startAnalysis), so neither the data sources nor the writer tokenize.

// analyticsState is the node's work on analytics.
type analyticsState struct {
	// queue holds the term sets of counted items for extractTerms.
	queue *termsQueue
	// current is the analysis of the batch being written
	// (startAnalysis); the store writer's goroutine alone uses it.
	current *analysis
}

// analyze gathers the analytics of a written batch's fresh comments (all
// of them for fresh nil) per increment they count under: every comment of
// an increment is in the one batch it was assigned in (assignIncrements),
// so each increment's analytics is complete here. A batch holds the
// comments of an increment together (a lane at a time); an increment of
// one comment, most of them on a spawn with many subscribers, is built
// without a builder.
func (n *Node) analyze(batch []pending, fresh []bool) map[uint64]*api.IncrementAnalytics {
	if n.cfg.NoAnalytics {
		return nil
	}
	now := time.Now()
	out := make(map[uint64]*api.IncrementAnalytics)
	var builders map[uint64]*terms.Builder // increments of several comments
	defer func() {
		for _, b := range builders {
			b.Reset()
			builderPool.Put(b)
		}
	}()
	isFresh := func(j int) bool { return fresh == nil || fresh[j] }
	for i := 0; i < len(batch); {
		seq := batch[i].comment.IncSeq
		j := i + 1
		for j < len(batch) && batch[j].comment.IncSeq == seq {
			j++
		}
		if _, apart := builders[seq]; !apart && j-i == 1 && out[seq] == nil {
			if isFresh(i) {
				out[seq] = terms.One(&batch[i].comment, batch[i].terms, now)
			}
			i = j
			continue
		}
		b := builders[seq]
		if b == nil {
			b = builderPool.Get().(*terms.Builder)
			if builders == nil {
				builders = map[uint64]*terms.Builder{}
			}
			builders[seq] = b
			if one := out[seq]; one != nil { // a run of it before: count it again
				delete(out, seq)
				for k := range i {
					if batch[k].comment.IncSeq == seq && isFresh(k) {
						addTo(b, &batch[k], now)
					}
				}
			}
		}
		for k := i; k < j; k++ {
			if isFresh(k) {
				addTo(b, &batch[k], now)
			}
		}
		i = j
	}
	for seq, b := range builders {
		if a := b.Build(); a != nil {
			out[seq] = a
		}
	}
	withVoices(batch, isFresh, out, now)
	return out
}

// addTo counts a comment into a builder.
func addTo(b *terms.Builder, p *pending, now time.Time) {
	if p.terms != nil {
		b.AddSet(&p.comment, p.terms, now)
	} else {
		b.Add(&p.comment, now)
	}
}

// withTerms gives counted comments the set of terms their analytics
// count, one set per item: the comments of one item, made for each
// subscriber it matched, are adjacent and share it. The terms are
// extracted ahead of the store writer by extractTerms; the writer's
// analysis extracts any set it gets to first.
func (n *Node) withTerms(ps []pending) {
	if n.cfg.NoAnalytics {
		return
	}
	for i := range ps {
		p := &ps[i]
		if p.terms != nil {
			continue
		}
		if i > 0 && sameItem(&ps[i-1].comment, &p.comment) {
			p.terms = ps[i-1].terms
			continue
		}
		p.terms = terms.NewSet(p.comment.Text, p.comment.Lang)
		n.analytics.queue.add(p.terms)
	}
}

// Term extraction ahead of the store writer.
const (
	// extractBunch is how many sets extractTerms is woken for: waking
	// it for each item would cost the data source more than the
	// extraction saves. Fewer sets wait for the writer's analysis.
	extractBunch = 256
	// extractQueue is how many sets may wait for extractTerms; beyond it
	// the writer's analysis extracts them.
	extractQueue = 4096
)

// termsQueue hands term sets to extractTerms in bunches.
type termsQueue struct {
	mu    sync.Mutex
	sets  []*terms.Set
	ready chan struct{} // a bunch waits (capacity 1)
}

func newTermsQueue() *termsQueue { return &termsQueue{ready: make(chan struct{}, 1)} }

// add queues a set, unless extractTerms is too far behind.
func (q *termsQueue) add(s *terms.Set) {
	q.mu.Lock()
	if len(q.sets) >= extractQueue {
		q.mu.Unlock()
		return
	}
	q.sets = append(q.sets, s)
	bunch := len(q.sets) == extractBunch
	q.mu.Unlock()
	if bunch {
		select {
		case q.ready <- struct{}{}:
		default:
		}
	}
}

// take moves the queued sets into buf.
func (q *termsQueue) take(buf []*terms.Set) []*terms.Set {
	q.mu.Lock()
	defer q.mu.Unlock()
	buf = append(buf[:0], q.sets...)
	clear(q.sets)
	q.sets = q.sets[:0]
	return buf
}

// extractTerms extracts the terms of counted items, a bunch at a time,
// until ctx ends, so that neither the data sources nor the store writer,
// each a serial path every comment takes, spends its time tokenizing.
func (n *Node) extractTerms(ctx context.Context) {
	var sets []*terms.Set
	for {
		select {
		case <-n.analytics.queue.ready:
			sets = n.analytics.queue.take(sets)
			for _, s := range sets {
				s.Extract()
			}
			clear(sets)
		case <-ctx.Done():
			return
		}
	}
}

// sameItem reports whether two comments were made of one item (for two
// subscribers), so their terms are the same.
func sameItem(a, b *api.Comment) bool {
	return a.ID == b.ID && a.Text == b.Text && a.Lang == b.Lang
}

// analysis is the analytics of a batch computed while the store writes
// it: a batch's comments are nearly always all fresh, so the store writer
// need not wait, after the store call, for what it can work out during.
type analysis struct {
	batch []pending
	done  chan struct{} // closed when out is set
	out   map[uint64]*api.IncrementAnalytics
}

// startAnalysis starts analysing a batch about to be written, as if every
// comment of it were fresh, beside the store call; analyticsOf takes the
// result. The store writer's goroutine alone calls both, a batch at a
// time: startAnalysis first waits for the analysis of a batch whose write
// did not complete.
func (n *Node) startAnalysis(batch []pending) {
	if n.cfg.NoAnalytics || len(batch) == 0 {
		return
	}
	if a := n.analytics.current; a != nil {
		<-a.done
	}
	a := &analysis{batch: batch, done: make(chan struct{})}
	n.analytics.current = a
	go func() {
		defer close(a.done)
		a.out = n.analyze(batch, nil)
	}()
}

// analyticsOf returns the analytics of a written batch's fresh comments:
// those startAnalysis worked out when the batch is the one it was given
// and every comment of it is fresh, else analysed now.
func (n *Node) analyticsOf(batch []pending, fresh []bool) map[uint64]*api.IncrementAnalytics {
	if a := n.analytics.current; a != nil {
		n.analytics.current = nil
		<-a.done
		if len(batch) == len(a.batch) && len(batch) > 0 && &batch[0] == &a.batch[0] && !slices.Contains(fresh, false) {
			return a.out
		}
	}
	return n.analyze(batch, fresh)
}

// builderPool keeps builders, emptied, between batches: their maps keep
// their room, so counting a batch does not grow them again.
var builderPool = sync.Pool{New: func() any { return terms.NewBuilder() }}

// attachAnalytics gives a batch's new increments their analytics.
func attachAnalytics(incs []api.Increment, analytics map[uint64]*api.IncrementAnalytics) {
	for i := range incs {
		if a, ok := analytics[incs[i].Seq]; ok {
			incs[i].Analytics = a
		}
	}
}
