package node

import (
	"context"
	"time"

	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store"
)

// sweepLoop asks the store to sweep until ctx ends.
func (n *Node) sweepLoop(ctx context.Context) {
	rs, ok := n.cfg.Store.(store.Retractor)
	if !ok {
		return
	}
	t := time.NewTicker(sweepEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		removed, err := rs.Sweep(ctx)
		n.retracts.noteRemoved(len(removed))
		if err != nil && ctx.Err() == nil {
			n.logger.Warn("sweep of taken-back comments failed", "err", err)
		}
	}
}

// expireLoop sweeps the store for comments past their retention until ctx
// ends.
func (n *Node) expireLoop(ctx context.Context) {
	ex, ok := n.cfg.Store.(store.Expirer)
	if !ok {
		return
	}
	every := n.cfg.RetentionSweep
	if every <= 0 {
		every = DefaultRetentionSweep
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		dropped, err := ex.Expire(ctx, time.Now())
		n.metrics.expiredComments.Add(float64(dropped))
		if err != nil && ctx.Err() == nil {
			n.logger.Warn("retention sweep failed", "err", err)
		}
		if dropped > 0 {
			n.logger.Info("comments past their retention dropped", "count", dropped)
		}
	}
}
