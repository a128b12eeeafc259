package queue

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/blackwidow-crawl/blackwidow/spawn/internal/store"
)

// Removals. A comment removed from the store (its post deleted, its
// author erased) is announced on its crawler's subject as
//
//	{"op": "delete", "id": "<comment id>", "crawler_id": 7}
//
// with Nats-Msg-Id "delete:<crawler id>:<comment id>". Stored comments
// carry no "op": a consumer tells the two apart by it. A delete is
// published by the spawn whose store removed the comment (a store several
// spawns share removes it once), and a failed publish is retried with the
// next removal, so each is announced at least once.

// OpDelete is the op of a removal's message.
const OpDelete = "delete"

// deleteMsg is a removal's message.
type deleteMsg struct {
	Op        string `json:"op"`
	ID        string `json:"id"`
	CrawlerID int64  `json:"crawler_id"`
}

// maxUnannounced bounds the removals waiting to be published again.
const maxUnannounced = 1 << 16

// Deleter is a Publisher that can announce removals.
type Deleter interface {
	PublishDeletes(ctx context.Context, removed []store.Removed) error
}

// PublishDeletes publishes a delete message for each removed comment.
func (c *Conn) PublishDeletes(ctx context.Context, removed []store.Removed) error {
	if len(removed) == 0 {
		return nil
	}
	if !c.nc.IsConnected() {
		return ErrNotConnected
	}
	ctx, cancel := context.WithTimeout(ctx, publishTimeout)
	defer cancel()
	msgs := make([]*nats.Msg, len(removed))
	for i, r := range removed {
		data, err := json.Marshal(deleteMsg{Op: OpDelete, ID: r.CommentID, CrawlerID: r.CrawlerID})
		if err != nil {
			return fmt.Errorf("queue: unable to encode the removal of %s: %w", r.CommentID, err)
		}
		msgs[i] = &nats.Msg{Subject: subject(c.prefix, r.CrawlerID), Data: data}
		if c.js != nil {
			msgs[i].Header = nats.Header{jetstream.MsgIDHeader: []string{fmt.Sprintf("delete:%d:%s", r.CrawlerID, r.CommentID)}}
		}
	}
	var err error
	switch c.mode {
	case modeJetStreamAsync:
		err = c.publishAsync(ctx, msgs)
	case modeJetStreamSync:
		err = c.publishSync(ctx, msgs)
	default:
		err = c.publishCore(ctx, msgs)
	}
	if err != nil {
		c.metrics.publishErrors.Inc()
	}
	return err
}

var (
	_ store.Retractor = (*decorated)(nil)
	_ store.Expirer   = (*decorated)(nil)
)

// Bury removes comments from the inner store and announces each one it
// removed; those whose announcement fails are announced with the next
// call (the inner store will not report them again).
func (d *decorated) Bury(ctx context.Context, tombstones []store.Tombstone) ([]store.Removed, error) {
	r, ok := d.inner.(store.Retractor)
	if !ok {
		return nil, nil
	}
	removed, err := r.Bury(ctx, tombstones)
	del, canDelete := d.pub.(Deleter)
	if !canDelete {
		return removed, err
	}
	d.mu.Lock()
	todo := append(d.unannounced, removed...)
	d.unannounced = nil
	d.mu.Unlock()
	if perr := del.PublishDeletes(ctx, todo); perr != nil {
		d.mu.Lock()
		if len(todo) > maxUnannounced {
			todo = todo[len(todo)-maxUnannounced:]
		}
		d.unannounced = append(todo, d.unannounced...)
		d.mu.Unlock()
		if err == nil {
			err = fmt.Errorf("queue: unable to announce %d removals: %w", len(todo), perr)
		}
	}
	return removed, err
}

// Sweep removes what the inner store's Bury left and announces it.
func (d *decorated) Sweep(ctx context.Context) ([]store.Removed, error) {
	r, ok := d.inner.(store.Retractor)
	if !ok {
		return nil, nil
	}
	removed, err := r.Sweep(ctx)
	del, canDelete := d.pub.(Deleter)
	if !canDelete || len(removed) == 0 {
		return removed, err
	}
	if perr := del.PublishDeletes(ctx, removed); perr != nil {
		d.mu.Lock()
		d.unannounced = append(d.unannounced, removed...)
		if over := len(d.unannounced) - maxUnannounced; over > 0 {
			d.unannounced = d.unannounced[over:]
		}
		d.mu.Unlock()
	}
	return removed, err
}

// Lift passes to the inner store.
func (d *decorated) Lift(ctx context.Context, source string, authors []string) error {
	if r, ok := d.inner.(store.Retractor); ok {
		return r.Lift(ctx, source, authors)
	}
	return nil
}

// Edit passes to the inner store: the queue carries comments as first
// written.
func (d *decorated) Edit(ctx context.Context, edits []store.Edit) (int, error) {
	if r, ok := d.inner.(store.Retractor); ok {
		return r.Edit(ctx, edits)
	}
	return 0, nil
}

// Applied passes to the inner store.
func (d *decorated) Applied(ctx context.Context) (uint64, error) {
	if r, ok := d.inner.(store.Retractor); ok {
		return r.Applied(ctx)
	}
	return 0, nil
}

// SetApplied passes to the inner store.
func (d *decorated) SetApplied(ctx context.Context, seq uint64) error {
	if r, ok := d.inner.(store.Retractor); ok {
		return r.SetApplied(ctx, seq)
	}
	return nil
}

// ID is the inner store's.
func (d *decorated) ID() string {
	if r, ok := d.inner.(store.Retractor); ok {
		return r.ID()
	}
	return ""
}

// Expire passes to the inner store.
func (d *decorated) Expire(ctx context.Context, now time.Time) (int, error) {
	if e, ok := d.inner.(store.Expirer); ok {
		return e.Expire(ctx, now)
	}
	return 0, nil
}
