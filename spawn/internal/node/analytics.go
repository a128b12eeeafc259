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
		b.Add(c, now)
	}
	out := make(map[uint64]*api.IncrementAnalytics, len(builders))
	for seq, b := range builders {
		out[seq] = b.Build()
	}
	return out
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
