package node

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store"
)

// Write fencing: a node may write only while attached and within
// detach_after of the hub's last contact (every store call is bounded by
// that deadline), and once it detaches, what it counted before is dropped,
// never stored: so a node cut off from the hub cannot land a counted batch
// after the hub read its usage back. Why and how long the hub waits:
// docs/decisions/0007-write-fencing.md.

// ErrFenced marks a write refused because the node may no longer write
// what it was given.
var ErrFenced = errors.New("node: write fenced: the hub may have read this node's usage back")

// FencedStore is a Store whose writes obey its node's write deadline. It
// reports the comments it refuses as not newly stored, so the node counts
// them as nothing. Build it around the real store, give it to New, then
// Bind the node.
type FencedStore struct {
	inner   store.Store
	node    atomic.Pointer[Node]
	dropped atomic.Int64
}

// NewFencedStore wraps inner.
func NewFencedStore(inner store.Store) *FencedStore { return &FencedStore{inner: inner} }

// Bind names the node whose deadline the writes obey. Until then writes
// pass unchanged.
func (f *FencedStore) Bind(n *Node) { f.node.Store(n) }

// Dropped is how many counted comments the fence kept out of the store.
func (f *FencedStore) Dropped() int64 { return f.dropped.Load() }

// Inner is the wrapped store.
func (f *FencedStore) Inner() store.Store { return f.inner }

// writeWindow is when the node's right to write ends (ok false: it has
// ended), and when it last ended before.
func (n *Node) writeWindow(now time.Time) (deadline, fencedAt time.Time, ok bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	fencedAt = n.attach.fencedAt
	if n.attach.state != api.NodeAttached {
		return time.Time{}, fencedAt, false
	}
	deadline = n.attach.lastContact.Add(n.attach.detachAfter)
	return deadline, fencedAt, now.Before(deadline)
}

// WriteFresh writes the comments the node may still write, within its
// deadline, and marks the others as not stored.
func (f *FencedStore) WriteFresh(ctx context.Context, comments []api.Comment) ([]bool, error) {
	fresh, _, err := f.write(ctx, comments)
	return fresh, err
}

// write is WriteFresh that also tells how many comments it refused.
func (f *FencedStore) write(ctx context.Context, comments []api.Comment) ([]bool, int, error) {
	fresh := make([]bool, len(comments))
	n := f.node.Load()
	if n == nil {
		fresh, err := f.writeInner(ctx, comments, fresh, nil)
		return fresh, 0, err
	}
	deadline, fencedAt, ok := n.writeWindow(time.Now())
	var keep []int
	if ok {
		for i := range comments {
			if fencedAt.IsZero() || comments[i].FetchedAt.After(fencedAt) {
				keep = append(keep, i)
			}
		}
	}
	dropped := len(comments) - len(keep)
	if dropped > 0 {
		f.dropped.Add(int64(dropped))
		n.logger.Warn("counted comments dropped: the node lost its right to write them", "comments", dropped, "fenced_at", fencedAt)
	}
	if len(keep) == 0 {
		return fresh, dropped, nil
	}
	dctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	var err error
	if len(keep) == len(comments) {
		fresh, err = f.writeInner(dctx, comments, fresh, nil)
		return fresh, 0, err
	}
	sub := make([]api.Comment, len(keep))
	for j, i := range keep {
		sub[j] = comments[i]
	}
	fresh, err = f.writeInner(dctx, sub, fresh, keep)
	return fresh, dropped, err
}

// writeInner writes comments to the inner store and marks in fresh, at
// index[j] (j when index is nil), those it stored for the first time.
func (f *FencedStore) writeInner(ctx context.Context, comments []api.Comment, fresh []bool, index []int) ([]bool, error) {
	mark := func(j int) {
		if index == nil {
			fresh[j] = true
		} else {
			fresh[index[j]] = true
		}
	}
	if fw, ok := f.inner.(store.FreshWriter); ok {
		got, err := fw.WriteFresh(ctx, comments)
		for j, g := range got {
			if g {
				mark(j)
			}
		}
		return fresh, err
	}
	if err := f.inner.Write(ctx, comments); err != nil {
		return fresh, err
	}
	for j := range comments {
		mark(j)
	}
	return fresh, nil
}

// Write is WriteFresh for a caller that cannot be told some comments were
// refused: it fails with ErrFenced when any was.
func (f *FencedStore) Write(ctx context.Context, comments []api.Comment) error {
	_, dropped, err := f.write(ctx, comments)
	if err == nil && dropped > 0 {
		err = fmt.Errorf("%w: %d of %d comments", ErrFenced, dropped, len(comments))
	}
	return err
}

// Intend records intents when the inner store journals usage. An intent is
// only a promise: recovery counts the comments stored under it.
func (f *FencedStore) Intend(ctx context.Context, intents []store.Intent) error {
	if j, ok := f.inner.(store.UsageJournal); ok {
		return j.Intend(ctx, intents)
	}
	return nil
}

// Recover reads usage back when the inner store journals usage; otherwise
// it reports none, and the hub releases the lost node's leases.
func (f *FencedStore) Recover(ctx context.Context, nodeID string, afterSeq uint64) ([]api.Increment, error) {
	if j, ok := f.inner.(store.UsageJournal); ok {
		return j.Recover(ctx, nodeID, afterSeq)
	}
	return nil, ErrNoJournal
}

// Recent reads from the inner store.
func (f *FencedStore) Recent(ctx context.Context, crawlerID int64, limit int) ([]api.Comment, error) {
	return f.inner.Recent(ctx, crawlerID, limit)
}

// Export reads from the inner store when it exports.
func (f *FencedStore) Export(ctx context.Context, crawlerID int64, r store.Range, cursor string, limit int) (store.Page, error) {
	if ex, ok := f.inner.(store.Exporter); ok {
		return ex.Export(ctx, crawlerID, r, cursor, limit)
	}
	return store.Page{}, errors.New("node: this spawn's store cannot export comments")
}

// Thread reads from the inner store when it reads threads.
func (f *FencedStore) Thread(ctx context.Context, crawlerID int64, commentID string) (string, []api.Comment, error) {
	if tr, ok := f.inner.(store.ThreadReader); ok {
		return tr.Thread(ctx, crawlerID, commentID)
	}
	return "", nil, errors.New("node: this spawn's store cannot read threads")
}

// Close closes the inner store.
func (f *FencedStore) Close() error { return f.inner.Close() }

// Amend passes amendments to the inner store when it can make them. They
// count as no usage and make no comment, so the write fence does not hold
// them back.
func (f *FencedStore) Amend(ctx context.Context, amendments []store.Amendment) error {
	if a, ok := f.inner.(store.Amender); ok {
		return a.Amend(ctx, amendments)
	}
	return nil
}
