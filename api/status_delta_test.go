package api

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// deltaHub is the hub's side of the status protocol as the tests model it:
// what it last heard of each subscriber and the answer it names as base.
type deltaHub struct {
	base  uint64
	heard map[int64]SubscriberStatus
}

// take applies an answer the way the hub does: a partial one overlays the
// statuses it carries, a whole one replaces them.
func (h *deltaHub) take(answer uint64, partial bool, statuses []SubscriberStatus) {
	if !partial {
		h.heard = map[int64]SubscriberStatus{}
	}
	for _, st := range statuses {
		if st.State == StateMissing {
			delete(h.heard, st.CrawlerID)
			continue
		}
		h.heard[st.CrawlerID] = st
	}
	h.base = answer
}

// answer builds a spawn's answer to a fresh poll listing ids, whose
// subscribers run as truth says (absent: missing).
func answer(d *StatusDelta, base uint64, ids []int64, truth map[int64]SubscriberStatus) (uint64, bool, []SubscriberStatus) {
	num, partial := d.Begin(base)
	var out []SubscriberStatus
	for _, id := range ids {
		st, ok := truth[id]
		if !ok {
			st = SubscriberStatus{CrawlerID: id, State: StateMissing}
		}
		if d.Include(st) {
			out = append(out, st)
		}
	}
	d.End()
	return num, partial, out
}

func TestStatusDelta_Answers(t *testing.T) {
	running := func(id int64, reserved int64, rate float64) SubscriberStatus {
		return SubscriberStatus{CrawlerID: id, Version: 1, State: StateRunning, Instance: 1, Reserved: reserved, RatePerSec: rate}
	}
	ids := []int64{1, 2, 3}
	cases := []struct {
		name string
		// rounds of (base named by the hub, truth) → statuses expected
		run func(t *testing.T, d *StatusDelta)
	}{
		{"a first poll gets every status", func(t *testing.T, d *StatusDelta) {
			truth := map[int64]SubscriberStatus{1: running(1, 0, 0), 2: running(2, 0, 0)}
			_, partial, out := answer(d, 0, ids, truth)
			if partial || len(out) != 3 || out[2].State != StateMissing {
				t.Fatalf("partial %v, statuses %+v: want all three, the third missing", partial, out)
			}
		}},
		{"an unchanged status is left out once its answer was taken in", func(t *testing.T, d *StatusDelta) {
			truth := map[int64]SubscriberStatus{1: running(1, 0, 0), 2: running(2, 0, 0), 3: running(3, 0, 0)}
			a1, _, _ := answer(d, 0, ids, truth)
			truth[2] = running(2, 5, 1) // counted five comments
			_, partial, out := answer(d, a1, ids, truth)
			if !partial || len(out) != 1 || out[0].CrawlerID != 2 {
				t.Fatalf("partial %v, statuses %+v: want only crawler 2", partial, out)
			}
		}},
		{"a status of a lost answer travels again", func(t *testing.T, d *StatusDelta) {
			truth := map[int64]SubscriberStatus{1: running(1, 0, 0), 2: running(2, 0, 0), 3: running(3, 0, 0)}
			a1, _, _ := answer(d, 0, ids, truth)
			truth[2] = running(2, 5, 1)
			answer(d, a1, ids, truth) // lost: the hub still names a1
			_, _, out := answer(d, a1, ids, truth)
			if len(out) != 1 || out[0].CrawlerID != 2 {
				t.Fatalf("statuses %+v: want crawler 2 again", out)
			}
		}},
		{"a rate moves the status only past the step", func(t *testing.T, d *StatusDelta) {
			truth := map[int64]SubscriberStatus{1: running(1, 0, 10)}
			a, _, _ := answer(d, 0, ids[:1], truth)
			truth[1] = running(1, 0, 10.9)
			a, _, out := answer(d, a, ids[:1], truth)
			if len(out) != 0 {
				t.Fatalf("a 9%% move travelled: %+v", out)
			}
			truth[1] = running(1, 0, 11.5)
			a, _, out = answer(d, a, ids[:1], truth)
			if len(out) != 1 {
				t.Fatal("a 15% move did not travel")
			}
			truth[1] = running(1, 0, 0.001)
			if _, _, out = answer(d, a, ids[:1], truth); len(out) != 1 {
				t.Fatal("a rate falling to idle did not travel")
			}
		}},
		{"informational fields alone do not travel", func(t *testing.T, d *StatusDelta) {
			truth := map[int64]SubscriberStatus{1: running(1, 0, 0)}
			a, _, _ := answer(d, 0, ids[:1], truth)
			st := truth[1]
			st.Stored, st.LeaseSeq, st.LeaseTotal = 9, 4, 100
			truth[1] = st
			if _, _, out := answer(d, a, ids[:1], truth); len(out) != 0 {
				t.Fatalf("statuses %+v: want none", out)
			}
		}},
		{"a subscriber listed again after a poll without it travels", func(t *testing.T, d *StatusDelta) {
			truth := map[int64]SubscriberStatus{1: running(1, 0, 0), 2: running(2, 0, 0)}
			a, _, _ := answer(d, 0, []int64{1, 2}, truth)
			a, _, _ = answer(d, a, []int64{1}, truth)
			if _, _, out := answer(d, a, []int64{1, 2}, truth); len(out) != 1 || out[0].CrawlerID != 2 {
				t.Fatalf("statuses %+v: want crawler 2", out)
			}
		}},
		{"a base from before a reset gets every status", func(t *testing.T, d *StatusDelta) {
			truth := map[int64]SubscriberStatus{1: running(1, 0, 0)}
			a, _, _ := answer(d, 0, ids[:1], truth)
			d.Reset()
			if _, partial, out := answer(d, a, ids[:1], truth); partial || len(out) != 1 {
				t.Fatalf("partial %v, statuses %+v: want the whole answer", partial, out)
			}
		}},
		{"a base the spawn never gave gets every status", func(t *testing.T, d *StatusDelta) {
			truth := map[int64]SubscriberStatus{1: running(1, 0, 0)}
			if _, partial, out := answer(d, 7, ids[:1], truth); partial || len(out) != 1 {
				t.Fatalf("partial %v, statuses %+v: want the whole answer", partial, out)
			}
		}},
		{"data sources travel when changed or unconfirmed", func(t *testing.T, d *StatusDelta) {
			list := []DataSourceStatus{{Key: "rss:a", Source: "rss", Subscribers: 1}}
			a, _ := d.Begin(0)
			if !d.DataSources(slices.Clone(list)) {
				t.Fatal("first list left out")
			}
			d.End()
			a2, _ := d.Begin(a)
			if d.DataSources(slices.Clone(list)) {
				t.Fatal("unchanged list travelled")
			}
			d.End()
			list[0].Subscribers = 2
			d.Begin(a2)
			if !d.DataSources(slices.Clone(list)) {
				t.Fatal("changed list left out")
			}
			d.End()
			d.Begin(a2) // the previous answer was lost
			if !d.DataSources(slices.Clone(list)) {
				t.Fatal("list of a lost answer left out")
			}
			d.End()
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, &StatusDelta{}) })
	}
}

// TestStatusDelta_HubAlwaysHoldsWhatRuns drives random status changes, lost
// answers, stale polls the hub never reads, resets and changing subscriber
// sets: after every answer the hub takes in, what it holds of each listed
// subscriber is materially what runs.
func TestStatusDelta_HubAlwaysHoldsWhatRuns(t *testing.T) {
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 42))
		var d StatusDelta
		hub := &deltaHub{heard: map[int64]SubscriberStatus{}}
		truth := map[int64]SubscriberStatus{}
		listed := []int64{}
		for round := range 300 {
			// The spawn's subscribers change.
			for id := int64(1); id <= 12; id++ {
				switch r := rng.IntN(20); {
				case r == 0:
					delete(truth, id)
				case r <= 3:
					st := truth[id]
					st.CrawlerID, st.Version, st.State = id, st.Version+int64(rng.IntN(2)), []string{StateRunning, StateQuotaWait, StateFailed}[rng.IntN(3)]
					st.Instance = max(st.Instance, 1) + uint64(rng.IntN(2))
					st.Reserved += int64(rng.IntN(3))
					st.RatePerSec = rng.Float64() * 5
					st.Stored += int64(rng.IntN(10))
					truth[id] = st
				}
			}
			// The hub's wanted set changes now and then; it forgets what
			// it heard of a subscriber it no longer lists (moved to
			// another node, say).
			if round%17 == 0 {
				listed = listed[:0]
				for id := int64(1); id <= 14; id++ {
					if rng.IntN(3) > 0 {
						listed = append(listed, id)
					} else {
						delete(hub.heard, id)
					}
				}
			}
			switch r := rng.IntN(10); {
			case r == 0: // a stale poll: answered whole, never read by the hub
			case r == 1: // the spawn detached and registered again
				d.Reset()
				hub = &deltaHub{heard: map[int64]SubscriberStatus{}}
			default:
				num, partial, out := answer(&d, hub.base, listed, truth)
				if rng.IntN(5) == 0 {
					continue // the answer is lost
				}
				hub.take(num, partial, out)
				for _, id := range listed {
					st, runs := truth[id]
					got, heard := hub.heard[id]
					if runs != heard || (runs && materiallyChanged(got, st)) {
						t.Fatalf("seed %d round %d: crawler %d: hub holds %+v (%v), runs %+v (%v)", seed, round, id, got, heard, st, runs)
					}
				}
			}
		}
	}
}
