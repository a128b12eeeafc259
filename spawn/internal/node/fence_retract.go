package node

import (
	"context"
	"time"

	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store"
)

// Bury passes to the inner store: removals count as no usage and make no
// comment, so the write fence does not hold them back.
func (f *FencedStore) Bury(ctx context.Context, tombstones []store.Tombstone) ([]store.Removed, error) {
	if r, ok := f.inner.(store.Retractor); ok {
		return r.Bury(ctx, tombstones)
	}
	return nil, ErrNoRetractor
}

// Sweep passes to the inner store.
func (f *FencedStore) Sweep(ctx context.Context) ([]store.Removed, error) {
	if r, ok := f.inner.(store.Retractor); ok {
		return r.Sweep(ctx)
	}
	return nil, nil
}

// Lift passes to the inner store.
func (f *FencedStore) Lift(ctx context.Context, source string, authors []string) error {
	if r, ok := f.inner.(store.Retractor); ok {
		return r.Lift(ctx, source, authors)
	}
	return ErrNoRetractor
}

// Edit passes to the inner store.
func (f *FencedStore) Edit(ctx context.Context, edits []store.Edit) (int, error) {
	if r, ok := f.inner.(store.Retractor); ok {
		return r.Edit(ctx, edits)
	}
	return 0, ErrNoRetractor
}

// Applied passes to the inner store.
func (f *FencedStore) Applied(ctx context.Context) (uint64, error) {
	if r, ok := f.inner.(store.Retractor); ok {
		return r.Applied(ctx)
	}
	return 0, nil
}

// SetApplied passes to the inner store.
func (f *FencedStore) SetApplied(ctx context.Context, seq uint64) error {
	if r, ok := f.inner.(store.Retractor); ok {
		return r.SetApplied(ctx, seq)
	}
	return nil
}

// ID is the inner store's.
func (f *FencedStore) ID() string {
	if r, ok := f.inner.(store.Retractor); ok {
		return r.ID()
	}
	return ""
}

// Expire passes to the inner store.
func (f *FencedStore) Expire(ctx context.Context, now time.Time) (int, error) {
	if e, ok := f.inner.(store.Expirer); ok {
		return e.Expire(ctx, now)
	}
	return 0, nil
}
