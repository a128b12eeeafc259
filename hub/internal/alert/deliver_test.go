package alert

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/hub/internal/sqlstore"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
	"github.com/blackwidow-crawl/blackwidow/pkg/spike"
)

// hung is a webhook receiver that reads the request and never answers
// until the test ends.
type hung struct {
	srv      *httptest.Server
	requests atomic.Int64
}

func newHung(t *testing.T, release <-chan struct{}) *hung {
	h := &hung{}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.requests.Add(1)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	return h
}

// spikeRule stores a webhook spike rule of the fixture's crawler.
func (f *fixture) spikeRule(t *testing.T, url string) sqlstore.AlertRule {
	t.Helper()
	ctx := context.Background()
	r, err := f.svc.NewRule(ctx, api.AlertRuleCreate{CrawlerID: f.crawler.ID, Kind: api.AlertSpike, Webhook: url})
	if err != nil {
		t.Fatal(err)
	}
	if r, err = f.store.CreateAlertRule(ctx, r); err != nil {
		t.Fatal(err)
	}
	return r
}

func TestService_HungReceiversDoNotDelayAHealthyOne(t *testing.T) {
	const hungReceivers = 24
	release := make(chan struct{})
	var hungs []*hung
	for range hungReceivers {
		h := newHung(t, release)
		hungs = append(hungs, h)
		defer h.srv.Close()
	}
	defer close(release) // before the servers close: their handlers return
	got := make(chan time.Time, 4)
	healthy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- time.Now()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer healthy.Close()

	f := newFixture(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	owners, err := f.svc.readOwners(ctx)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now().UTC().Truncate(time.Minute)
	fire := func(r sqlstore.AlertRule) {
		a := spike.Alert{At: at, Observed: 90, Expected: 8}
		if err := f.svc.fireSpike(ctx, f.term, r, []int64{f.crawler.ID}, owners, a, at.Add(time.Minute), nil); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); f.svc.sendLoop(ctx, f.term) }()
	defer wg.Wait()
	defer cancel()

	for _, h := range hungs {
		fire(f.spikeRule(t, h.srv.URL+"/hook"))
	}
	inFlight := func() int {
		n := 0
		for _, h := range hungs {
			n += int(h.requests.Load())
		}
		return n
	}
	// The hung receivers hold at least as many attempts as the hub had
	// slots for all deliveries.
	testkit.WaitFor(t, 10*time.Second, "the hung receivers' requests", func() bool { return inFlight() >= 16 })

	r := f.spikeRule(t, healthy.URL+"/hook")
	start := time.Now()
	fire(r)
	timer := time.NewTimer(3 * time.Second)
	defer timer.Stop()
	select {
	case at := <-got:
		t.Logf("the healthy receiver's alert arrived %s after it fired, beside %d hung requests", at.Sub(start).Round(time.Millisecond), inFlight())
	case <-timer.C:
		t.Fatalf("the healthy receiver's alert did not arrive within 3 s of firing (%d hung requests in flight)", inFlight())
	}
}

func TestService_AReceiverThatNeverAnswersIsLeftAloneForAWhile(t *testing.T) {
	release := make(chan struct{})
	h := newHung(t, release)
	defer h.srv.Close()
	defer close(release)
	f := newFixture(t, func(c *Config) {
		c.AttemptTimeout, c.RetryMin, c.RetryMax = 200*time.Millisecond, 10*time.Millisecond, 20*time.Millisecond
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	owners, err := f.svc.readOwners(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r := f.spikeRule(t, h.srv.URL+"/hook")
	at := time.Now().UTC().Truncate(time.Minute)
	if err := f.svc.fireSpike(ctx, f.term, r, []int64{f.crawler.ID}, owners, spike.Alert{At: at, Observed: 90, Expected: 8}, at.Add(time.Minute), nil); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); f.svc.sendLoop(ctx, f.term) }()
	defer wg.Wait()
	defer cancel()

	// Retries come every 20 ms at most: only the open circuit puts the
	// next attempt seconds away.
	var d api.AlertDelivery
	testkit.WaitFor(t, 10*time.Second, "the delivery put off by the open circuit", func() bool {
		ev, _ := f.svc.Events(ctx, r.ID, 0)
		if len(ev) != 1 || len(ev[0].Deliveries) != 1 {
			return false
		}
		d = ev[0].Deliveries[0]
		return d.State == api.DeliveryPending && d.NextAttemptAt != nil && d.NextAttemptAt.After(time.Now().Add(10*time.Second))
	})
	if d.Attempts != breakAfter || h.requests.Load() != breakAfter {
		t.Fatalf("%d attempts recorded, %d requests received; want %d before the circuit opened", d.Attempts, h.requests.Load(), breakAfter)
	}
}
