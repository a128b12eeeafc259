package node

import (
	"sync"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/terms"
)

// analyze gathers the analytics of a written batch's fresh comments per
// increment they count under. It runs before recordWritten takes the node
// lock: every comment of an increment is in the one batch it was assigned
// in (assignIncrements), so each increment's analytics is complete here.
func (n *Node) analyze(batch []pending, fresh []bool) map[uint64]*api.IncrementAnalytics {
	if n.cfg.NoAnalytics {
		return nil
	}
	now := time.Now()
	builders := map[uint64]*terms.Builder{}
	defer func() {
		for _, b := range builders {
			b.Reset()
			builderPool.Put(b)
		}
	}()
	for j := range batch {
		if !fresh[j] {
			continue
		}
		c := &batch[j].comment
		b := builders[c.IncSeq]
		if b == nil {
			b = builderPool.Get().(*terms.Builder)
			builders[c.IncSeq] = b
		}
		if t := batch[j].terms; t != nil {
			b.AddSet(c, t, now)
		} else {
			b.Add(c, now)
		}
	}
	out := make(map[uint64]*api.IncrementAnalytics, len(builders))
	for seq, b := range builders {
		out[seq] = b.Build()
	}
	return out
}

// withTerms extracts the terms of counted comments for their analytics,
// once per item: the comments of one item, made for each subscriber it
// matched, are adjacent and share the extraction. It runs on the emitting
// data source's goroutine, without the node lock, so that the store
// writer, which every comment of the spawn goes through, only adds up
// terms already found.
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
		p.terms = terms.Extract(p.comment.Text, p.comment.Lang)
	}
}

// sameItem reports whether two comments were made of one item (for two
// subscribers), so their terms are the same.
func sameItem(a, b *api.Comment) bool {
	return a.ID == b.ID && a.Text == b.Text && a.Lang == b.Lang
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
