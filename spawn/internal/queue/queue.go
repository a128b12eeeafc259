// Package queue publishes every comment a spawn stores to NATS
// (--queue nats://host:port), so other systems process comments as they
// arrive. It decorates the store: a batch counts only once it is stored and
// published, so the queue gets the store's promise (nothing counted is lost,
// an outage pushes back on the sources), with at-least-once delivery keyed
// by "<crawler id>:<comment id>". Delivery semantics, JetStream and core
// NATS: docs/operations.md, "The comment queue (NATS)".
package queue

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store"
)

// SubjectPrefix starts every subject comments are published to:
// comments.<crawler id>.
const SubjectPrefix = "comments"

// Subject is the subject a crawler's comments are published to.
func Subject(crawlerID int64) string { return subject(SubjectPrefix, crawlerID) }

func subject(prefix string, crawlerID int64) string {
	return fmt.Sprintf("%s.%d", prefix, crawlerID)
}

// Publisher sends a batch of stored comments on. Publish returns nil only
// when every comment of the batch has been handed over (acknowledged by
// JetStream, or flushed to the server on core NATS).
type Publisher interface {
	Publish(ctx context.Context, comments []api.Comment) error
	Close() error
}

// maxUnpublished bounds the comments remembered from failed calls; the
// writer retries one batch at a time, so it holds a batch or two.
const maxUnpublished = 1 << 16

// decorated is a store that publishes what it writes.
type decorated struct {
	inner store.Store
	pub   Publisher

	mu sync.Mutex
	// unpublished are comments the inner store held for the first time
	// in a call that failed (to store all, or to publish): that call
	// counts none of them, so the retry, which the inner store then
	// reports as held, must still count them as new.
	unpublished map[commentKey]struct{}
	// unannounced are removals whose announcement failed (retract.go).
	unannounced []store.Removed
}

type commentKey struct {
	crawler int64
	id      string
}

// Wrap returns a store that writes to inner and then publishes every
// comment written with pub. Closing it closes inner, then pub.
func Wrap(inner store.Store, pub Publisher) store.Store {
	return &decorated{inner: inner, pub: pub, unpublished: make(map[commentKey]struct{})}
}

// Write stores the batch and publishes it. An error from either means the
// caller retries the whole batch: the store write is idempotent, and a
// comment published twice is a duplicate at-least-once delivery allows.
func (d *decorated) Write(ctx context.Context, comments []api.Comment) error {
	if err := d.inner.Write(ctx, comments); err != nil {
		return err
	}
	return d.pub.Publish(ctx, comments)
}

// WriteFresh is Write reporting which comments the inner store held for
// the first time, when it can tell (store.FreshWriter); otherwise every
// comment counts as new. Only the comments that count as new are
// published (those of an earlier failed call among them): one the store
// already held was published when it was new, and one it refused (taken
// back, past its retention) was never stored.
func (d *decorated) WriteFresh(ctx context.Context, comments []api.Comment) ([]bool, error) {
	fw, ok := d.inner.(store.FreshWriter)
	if !ok {
		if err := d.Write(ctx, comments); err != nil {
			return make([]bool, len(comments)), err
		}
		fresh := make([]bool, len(comments))
		for i := range fresh {
			fresh[i] = true
		}
		return fresh, nil
	}
	fresh, err := fw.WriteFresh(ctx, comments)
	if len(fresh) != len(comments) {
		fresh = append(fresh, make([]bool, len(comments)-min(len(fresh), len(comments)))...)[:len(comments)]
	}
	d.mu.Lock()
	if len(d.unpublished)+len(comments) > maxUnpublished {
		clear(d.unpublished)
	}
	for i, c := range comments {
		k := commentKey{c.CrawlerID, c.ID}
		if fresh[i] {
			d.unpublished[k] = struct{}{}
		} else if _, ok := d.unpublished[k]; ok {
			fresh[i] = true
		}
	}
	d.mu.Unlock()
	if err == nil {
		var new []api.Comment
		for i, c := range comments {
			if fresh[i] {
				new = append(new, c)
			}
		}
		err = d.pub.Publish(ctx, new)
	}
	if err != nil {
		// Nothing of a batch that was not published counts.
		return make([]bool, len(comments)), err
	}
	d.mu.Lock()
	for _, c := range comments {
		delete(d.unpublished, commentKey{c.CrawlerID, c.ID})
	}
	d.mu.Unlock()
	return fresh, nil
}

// Intend records intents in the inner store when it journals usage.
func (d *decorated) Intend(ctx context.Context, intents []store.Intent) error {
	if j, ok := d.inner.(store.UsageJournal); ok {
		return j.Intend(ctx, intents)
	}
	return nil
}

// Recover reads usage back from the inner store when it journals usage.
func (d *decorated) Recover(ctx context.Context, nodeID string, afterSeq uint64) ([]api.Increment, error) {
	if j, ok := d.inner.(store.UsageJournal); ok {
		return j.Recover(ctx, nodeID, afterSeq)
	}
	return nil, nil
}

// Recent reads from the inner store.
func (d *decorated) Recent(ctx context.Context, crawlerID int64, n int) ([]api.Comment, error) {
	return d.inner.Recent(ctx, crawlerID, n)
}

// Close closes the store first (the writer has drained into it by then) and
// the publisher after it.
func (d *decorated) Close() error {
	return errors.Join(d.inner.Close(), d.pub.Close())
}

// Amend passes amendments to the inner store when it can make them; the
// queue carries comments as they were first written.
func (d *decorated) Amend(ctx context.Context, amendments []store.Amendment) error {
	if a, ok := d.inner.(store.Amender); ok {
		return a.Amend(ctx, amendments)
	}
	return nil
}
