package bluesky

import (
	"sync"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
)

// What the network takes back. The connection asks for post commits only
// (wantedCollections=app.bsky.feed.post), and Jetstream's /subscribe sends
// the collection's delete and update commits with its creates, and every
// account's #account events whatever the collections asked for (they are
// what a consumer filtering by collection purges a dead account by): no
// second connection is needed. Each becomes an api.Retraction the node
// applies to its store and passes on to the other spawns:
//
//   - a post's delete commit: delete (the comment's id is the post's URI);
//   - a post's update commit: update, its text and links rebuilt from the
//     new record as a create's are, edited at the event's time;
//   - an #account event with active false and status deleted or takendown:
//     account (every comment of the DID removed, none stored while it
//     lasts); with active true, for an account this source saw go: account
//     active, which lifts that. Other statuses (suspended, deactivated)
//     hide an account for a while without taking its posts back, and are
//     passed over.

// Bounds of the accounts remembered inactive: as many as downKept, each
// for as long as a tombstone lasts, so an account coming back within that
// time lifts it.
const (
	downKept    = 1 << 16
	downKeptFor = 72 * time.Hour
)

// downAccounts remembers the accounts the source saw go inactive.
type downAccounts struct {
	mu   sync.Mutex
	at   map[string]time.Time
	fifo []string
}

func newDownAccounts() *downAccounts { return &downAccounts{at: map[string]time.Time{}} }

// add remembers did as inactive since now.
func (d *downAccounts) add(did string, now time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.at[did]; !ok {
		d.fifo = append(d.fifo, did)
	}
	d.at[did] = now
	for len(d.fifo) > 0 {
		old := d.fifo[0]
		t, ok := d.at[old]
		if ok && len(d.at) <= downKept && now.Sub(t) <= downKeptFor {
			break
		}
		d.fifo = d.fifo[1:]
		if ok && (len(d.at) > downKept || now.Sub(t) > downKeptFor) {
			delete(d.at, old)
		}
	}
}

// back forgets did and reports whether it was remembered inactive.
func (d *downAccounts) back(did string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	_, ok := d.at[did]
	delete(d.at, did)
	return ok
}

// Retractions takes the function the source tells what it takes back.
func (s *Source) Retractions(fn func([]api.Retraction)) {
	s.mu.Lock()
	s.retract = fn
	s.mu.Unlock()
}

// retraction is what an update, delete or account event takes back; ok
// is false for one that takes nothing back.
func (s *Source) retraction(ev event, now time.Time) (api.Retraction, bool) {
	at := time.UnixMicro(ev.timeUS).UTC()
	x := api.Retraction{Source: api.SourceBluesky, At: at}
	switch ev.kind {
	case kindDelete:
		x.Op, x.ID, x.Reason = api.RetractDelete, postURI(ev.did, ev.rkey), "bluesky delete commit"
	case kindUpdate:
		var it = plainItem(ev, ev.did, now)
		if !s.opts.TextOnly {
			it = postItem(ev, ev.did, now)
		}
		x.Op, x.ID, x.Text, x.Links, x.EditedAt, x.Reason = api.RetractUpdate, it.ID, it.Text, it.Links, at, "bluesky update commit"
	case kindAccount:
		x.Op, x.Author, x.Active, x.Status = api.RetractAccount, ev.did, ev.active, ev.status
		switch {
		case ev.active:
			if !s.down.back(ev.did) {
				return x, false // never seen inactive here: nothing to lift
			}
			x.Reason = "bluesky account active again"
		case x.Removes():
			s.down.add(ev.did, now)
			x.Reason = "bluesky account " + ev.status
		default:
			return x, false // suspended, deactivated: nothing taken back
		}
	default:
		return x, false
	}
	return x, true
}

// takeBack tells the node what an update, delete or account event takes
// back.
func (s *Source) takeBack(ev event) {
	x, ok := s.retraction(ev, time.Now())
	if !ok {
		return
	}
	s.mu.Lock()
	fn := s.retract
	s.mu.Unlock()
	if fn == nil {
		return
	}
	s.stats.retractions.Add(1)
	fn([]api.Retraction{x})
}
