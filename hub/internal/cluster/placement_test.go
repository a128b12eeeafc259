package cluster

import (
	"fmt"
	"log/slog"
	"slices"
	"testing"

	"github.com/google/uuid"
)

// TestFleetHolder_OnlyFleetScopedKindsHaveOne checks placement by sharing
// scope: a kind no node declares fleet-wide has no holder (it is placed by
// query uuid); a fleet-scoped kind keeps its holder while it lives, and a
// node declaring nothing never becomes one.
func TestFleetHolder_OnlyFleetScopedKindsHaveOne(t *testing.T) {
	router, err := NewRouter("modulo")
	if err != nil {
		t.Fatal(err)
	}
	h := &Hub{nodes: map[string]*node{}, fleetHolders: map[string]string{}, logger: slog.New(slog.DiscardHandler), cfg: Config{Router: router}}
	h.nodes["a"] = &node{id: "a", sources: offeredSources(nil), fleet: fleetSources(nil)}
	h.nodes["b"] = &node{id: "b", sources: offeredSources([]string{"rss", "twitter"}), fleet: fleetSources([]string{"twitter"})}
	h.nodes["c"] = &node{id: "c", sources: offeredSources([]string{"rss", "twitter"}), fleet: fleetSources([]string{"twitter"})}
	if _, ok := h.fleetHolderLocked("rss", []string{"a", "b", "c"}); ok {
		t.Fatal("rss got a fleet holder")
	}
	first, ok := h.fleetHolderLocked("twitter", []string{"a", "b", "c"})
	if !ok || (first != "b" && first != "c") {
		t.Fatalf("twitter holder %q, %v; want b or c", first, ok)
	}
	// A node joining moves nothing: the holder stays.
	h.nodes["d"] = &node{id: "d", sources: offeredSources([]string{"twitter"}), fleet: fleetSources([]string{"twitter"})}
	if again, _ := h.fleetHolderLocked("twitter", []string{"a", "b", "c", "d"}); again != first {
		t.Fatalf("holder moved from %s to %s when a node joined", first, again)
	}
	// The holder goes: one survivor takes over.
	rest := slices.DeleteFunc([]string{"a", "b", "c", "d"}, func(id string) bool { return id == first })
	next, _ := h.fleetHolderLocked("twitter", rest)
	if next == first || next == "a" || next == "" {
		t.Fatalf("new holder %q after %s left", next, first)
	}
	tables := h.routeTablesLocked(rest)
	rssNodes := map[string]bool{}
	for i := range 50 {
		rssNodes[tables["rss"](uuid.NewSHA1(uuid.Nil, []byte(fmt.Sprint(i))))] = true
	}
	if len(rssNodes) < 2 {
		t.Fatalf("rss crawlers all routed to %v: a per-query kind must spread", rssNodes)
	}
	for i := range 50 {
		if got := tables["twitter"](uuid.NewSHA1(uuid.Nil, []byte(fmt.Sprint(i)))); got != next {
			t.Fatalf("a twitter crawler routed to %s, want the holder %s", got, next)
		}
	}
}
