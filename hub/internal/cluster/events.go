package cluster

import (
	"slices"
	"sync"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
)

// eventsKept is how many recent events the hub remembers for operators.
const eventsKept = 200

// eventLog is the hub's recent decisions as operators see them
// (GET /v1/events): nodes joining, draining and lost, reloads, limits
// reached, usage recovered. It has a mutex of its own, so reading it never
// waits for the hub's.
type eventLog struct {
	mu   sync.Mutex
	list []api.Event
}

// add records an event now, forgetting the oldest beyond eventsKept.
func (l *eventLog) add(kind, msg string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.list = append(l.list, api.Event{Time: time.Now().UTC(), Kind: kind, Message: msg})
	if len(l.list) > eventsKept {
		l.list = slices.Delete(l.list, 0, len(l.list)-eventsKept)
	}
}

// recent returns the events kept, oldest first.
func (l *eventLog) recent() []api.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.list)
}

// Events returns the recent events, oldest first.
func (h *Hub) Events() []api.Event { return h.events.recent() }

// short is a node id as events name it.
func short(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}
