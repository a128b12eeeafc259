package cluster

import (
	"fmt"
	"testing"

	"github.com/google/uuid"
)

func testNodes(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("node-%02d", i)
	}
	return out
}

func testQueries(n int) []uuid.UUID {
	out := make([]uuid.UUID, n)
	for i := range out {
		out[i] = uuid.NewSHA1(uuid.NameSpaceURL, []byte(fmt.Sprintf("q%d", i)))
	}
	return out
}

// movedFraction routes every query over before and after and returns the
// share whose node changed.
func movedFraction(r Router, qs []uuid.UUID, before, after []string) float64 {
	moved := 0
	rb, ra := r.Table(before), r.Table(after)
	for _, q := range qs {
		if rb(q) != ra(q) {
			moved++
		}
	}
	return float64(moved) / float64(len(qs))
}

func TestRouting_SameQuerySameNode(t *testing.T) {
	for _, name := range []string{RoutingModulo, RoutingRendezvous} {
		t.Run(name, func(t *testing.T) {
			r, err := NewRouter(name)
			if err != nil {
				t.Fatal(err)
			}
			nodes := testNodes(7)
			for _, q := range testQueries(500) {
				a, b := r.Table(nodes)(q), r.Table(nodes)(q)
				if a != b || a == "" {
					t.Fatalf("query %s routed to %q then %q", q, a, b)
				}
			}
			if got := r.Table(nil)(testQueries(1)[0]); got != "" {
				t.Fatalf("no nodes must route nowhere, got %q", got)
			}
		})
	}
}

func TestRouting_SpreadsEvenly(t *testing.T) {
	for _, name := range []string{RoutingModulo, RoutingRendezvous} {
		t.Run(name, func(t *testing.T) {
			r, _ := NewRouter(name)
			nodes := testNodes(10)
			counts := map[string]int{}
			route := r.Table(nodes)
			qs := testQueries(20000)
			for _, q := range qs {
				counts[route(q)]++
			}
			for _, n := range nodes {
				// 2000 expected per node; allow ±15 %.
				if c := counts[n]; c < 1700 || c > 2300 {
					t.Fatalf("node %s got %d of %d subscribers", n, c, len(qs))
				}
			}
		})
	}
}

// TestRouting_MovesOnNodeChange measures what a node joining or leaving a
// cluster of 10 moves: uuid-hash-modulo moves most subscribers, rendezvous
// about 1/N.
func TestRouting_MovesOnNodeChange(t *testing.T) {
	qs := testQueries(20000)
	ten, eleven, nine := testNodes(10), testNodes(11), testNodes(10)[1:]
	cases := []struct {
		name          string
		router        string
		before, after []string
		lo, hi        float64
	}{
		{"modulo join", RoutingModulo, ten, eleven, 0.80, 1},
		{"modulo leave", RoutingModulo, ten, nine, 0.80, 1},
		{"rendezvous join", RoutingRendezvous, ten, eleven, 0.06, 0.12},
		{"rendezvous leave", RoutingRendezvous, ten, nine, 0.07, 0.13},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := NewRouter(tc.router)
			f := movedFraction(r, qs, tc.before, tc.after)
			t.Logf("%s: %.1f%% of %d subscribers moved", tc.name, 100*f, len(qs))
			if f < tc.lo || f > tc.hi {
				t.Fatalf("moved fraction %.3f outside [%.2f, %.2f]", f, tc.lo, tc.hi)
			}
		})
	}
}

func TestNewRouter_RejectsUnknown(t *testing.T) {
	if _, err := NewRouter("round-robin"); err == nil {
		t.Fatal("want an error for an unknown routing strategy")
	}
}

func BenchmarkRoute(b *testing.B) {
	nodes := testNodes(1000)
	qs := testQueries(1024)
	for _, name := range []string{RoutingModulo, RoutingRendezvous} {
		b.Run(name, func(b *testing.B) {
			r, _ := NewRouter(name)
			route := r.Table(nodes)
			for i := 0; b.Loop(); i++ {
				route(qs[i%len(qs)])
			}
		})
	}
}
