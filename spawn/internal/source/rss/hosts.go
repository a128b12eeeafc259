package rss

import (
	"context"
	"sync"
	"time"
)

// hostSweepMin is the number of remembered hosts at which the limiter
// first forgets idle ones; each sweep sets the next at twice what remains,
// so forgetting costs O(1) per request on average.
const hostSweepMin = 256

// hostLimiter spaces the requests a node sends to each host: one at a time,
// and at least delay between the end of one and the start of the next,
// whichever feed sends them.
type hostLimiter struct {
	delay time.Duration

	mu        sync.Mutex
	hosts     map[string]*hostSlot
	nextSweep int
}

// hostSlot is one host's turn. users is guarded by hostLimiter.mu; last by
// holding turn.
type hostSlot struct {
	turn  chan struct{} // holds a token while a request to the host runs
	users int           // requests holding or waiting for the turn
	last  time.Time     // when the last request ended
}

func newHostLimiter(delay time.Duration) *hostLimiter {
	return &hostLimiter{delay: delay, hosts: map[string]*hostSlot{}, nextSweep: hostSweepMin}
}

// acquire waits for host's turn and for the delay since its last request,
// or until ctx ends. The caller must call release when its request is
// over, body read.
func (l *hostLimiter) acquire(ctx context.Context, host string) (release func(), err error) {
	l.mu.Lock()
	s, ok := l.hosts[host]
	if !ok {
		if len(l.hosts) >= l.nextSweep {
			l.sweepLocked()
		}
		s = &hostSlot{turn: make(chan struct{}, 1)}
		l.hosts[host] = s
	}
	s.users++
	l.mu.Unlock()

	select {
	case s.turn <- struct{}{}:
	case <-ctx.Done():
		l.leave(s)
		return nil, ctx.Err()
	}
	if wait := time.Until(s.last.Add(l.delay)); wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			<-s.turn
			l.leave(s)
			return nil, ctx.Err()
		}
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			s.last = time.Now()
			<-s.turn
			l.leave(s)
		})
	}, nil
}

func (l *hostLimiter) leave(s *hostSlot) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s.users--
}

// sweepLocked forgets hosts nobody is using whose delay has passed: their
// next request may start at once anyway.
func (l *hostLimiter) sweepLocked() {
	now := time.Now()
	for h, s := range l.hosts {
		if s.users == 0 && now.Sub(s.last) >= l.delay {
			delete(l.hosts, h)
		}
	}
	l.nextSweep = max(hostSweepMin, 2*len(l.hosts))
}

// size is the number of hosts remembered, for tests.
func (l *hostLimiter) size() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.hosts)
}
