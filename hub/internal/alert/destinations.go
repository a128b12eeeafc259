package alert

import (
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/hub/internal/sqlstore"
)

// Per-destination limits: one receiver that is slow or down cannot hold
// the sender's slots, so every other receiver is served in its normal
// time.
const (
	// perDestination bounds the attempts in flight to one destination (a
	// URL's scheme, host and port; the SMTP server).
	perDestination = 2
	// breakAfter is how many attempts in a row that found no answer
	// (timed out, refused, reset) open a destination's circuit: its
	// deliveries wait without being attempted.
	breakAfter = 3
	// breakFor is how long a circuit first stays open; it doubles with
	// each failed probe up to breakForMax. When it ends one attempt
	// probes the destination: an answer closes the circuit.
	breakFor    = 30 * time.Second
	breakForMax = 10 * time.Minute
	// busyDefer is how long a delivery whose destination has its attempts
	// in flight waits before it is looked at again.
	busyDefer = 250 * time.Millisecond
)

// destination is what the sender knows of one receiver.
type destination struct {
	inFlight  int
	failures  int // attempts in a row that found no answer
	openUntil time.Time
}

// destinations are the receivers the sender is attempting or has found
// failing; a receiver that answers and has nothing in flight is forgotten,
// so the table holds only busy and failing receivers.
type destinations struct {
	mu sync.Mutex
	m  map[string]*destination
}

func newDestinations() *destinations { return &destinations{m: map[string]*destination{}} }

// acquire takes an attempt slot of key at now; when it cannot, it returns
// when the delivery should be looked at again.
func (ds *destinations) acquire(key string, now time.Time) (bool, time.Time) {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	d := ds.m[key]
	if d == nil {
		d = &destination{}
		ds.m[key] = d
	}
	switch {
	case now.Before(d.openUntil):
		return false, d.openUntil
	case d.failures >= breakAfter && d.inFlight > 0:
		// Half-open: one probe at a time.
		return false, now.Add(busyDefer)
	case d.inFlight >= perDestination:
		return false, now.Add(busyDefer)
	}
	d.inFlight++
	return true, time.Time{}
}

// outcome of an attempt, as the circuit counts it.
type outcome int

const (
	notAttempted outcome = iota // the slot was given back unused
	answered                    // the receiver answered, whatever it said
	noAnswer                    // timed out, refused, reset
)

// release gives back a slot of key and counts what the attempt found; it
// reports whether the circuit opened.
func (ds *destinations) release(key string, o outcome, now time.Time) (opened bool, until time.Time) {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	d := ds.m[key]
	if d == nil {
		return false, time.Time{}
	}
	d.inFlight--
	switch o {
	case answered:
		d.failures, d.openUntil = 0, time.Time{}
	case noAnswer:
		d.failures++
		if d.failures >= breakAfter {
			d.openUntil = now.Add(min(breakFor<<min(d.failures-breakAfter, 20), breakForMax))
			opened, until = true, d.openUntil
		}
	}
	if d.inFlight == 0 && d.failures == 0 {
		delete(ds.m, key)
	}
	return opened, until
}

// destinationOf names the receiver of a delivery: the scheme, host and
// port of a webhook URL, a Slack webhook's whole URL (Slack's one host
// serves every workspace's channels), the SMTP server of an e-mail.
func (s *Service) destinationOf(d sqlstore.DueDelivery) string {
	switch d.Channel {
	case api.ChannelEmail:
		return "smtp://" + s.cfg.SMTP.Addr
	case api.ChannelSlack:
		return d.Target
	}
	u, err := url.Parse(d.Target)
	if err != nil || u.Host == "" {
		return d.Target
	}
	return strings.ToLower(u.Scheme + "://" + u.Host)
}
