package sqlstore

import (
	"context"
	"slices"
	"testing"
	"time"
)

// TestLeader_TermsGrowAndSwapsNeedTheObservedRow: the first hub takes term
// 1; a renewal only counts for the holder of the current term; a takeover
// needs the row exactly as observed, so of two hubs racing one wins; a
// resignation keeps the term, and the next leader's is higher.
func TestLeader_TermsGrowAndSwapsNeedTheObservedRow(t *testing.T) {
	eachDB(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		s := openTest(t, dsn)
		if _, seen, err := s.Leader(ctx); err != nil || seen {
			t.Fatalf("fresh database: seen %v, err %v", seen, err)
		}
		a, ok, err := s.TakeLeadership(ctx, LeaderRow{}, false, "hub-a", "http://a")
		if err != nil || !ok || a.Term != 1 {
			t.Fatalf("first take: %+v ok %v err %v", a, ok, err)
		}
		if _, ok, _ := s.TakeLeadership(ctx, LeaderRow{}, false, "hub-b", "http://b"); ok {
			t.Fatal("a second insert won")
		}
		observed, _, _ := s.Leader(ctx)
		if ok, err := s.RenewLeadership(ctx, 1, "hub-a"); err != nil || !ok {
			t.Fatalf("renew by the holder: %v %v", ok, err)
		}
		if ok, _ := s.RenewLeadership(ctx, 1, "hub-b"); ok {
			t.Fatal("a renewal by another hub counted")
		}
		if _, ok, _ := s.TakeLeadership(ctx, observed, true, "hub-b", "http://b"); ok {
			t.Fatal("a takeover on a row renewed since it was read won")
		}
		now, _, _ := s.Leader(ctx)
		b, ok, err := s.TakeLeadership(ctx, now, true, "hub-b", "http://b")
		if err != nil || !ok || b.Term != 2 {
			t.Fatalf("takeover: %+v ok %v err %v", b, ok, err)
		}
		if ok, _ := s.RenewLeadership(ctx, 1, "hub-a"); ok {
			t.Fatal("the deposed leader renewed")
		}
		if err := s.ResignLeadership(ctx, 2, "hub-b"); err != nil {
			t.Fatal(err)
		}
		row, _, _ := s.Leader(ctx)
		if row.Holder != "" || row.Term != 2 {
			t.Fatalf("after resigning: %+v", row)
		}
		c, err := s.ForceLeadership(ctx, "hub-c", "http://c")
		if err != nil || c.Term != 3 {
			t.Fatalf("force: %+v %v", c, err)
		}
	})
}

// TestLeader_ComplaintsCountPerNodeTermAndLeader: a node's newer complaint
// replaces its older one, and only complaints about the asked term and
// leader, recent enough, count.
func TestLeader_ComplaintsCountPerNodeTermAndLeader(t *testing.T) {
	eachDB(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		s := openTest(t, dsn)
		for _, c := range []struct {
			node string
			term uint64
			url  string
		}{
			{"n1", 1, "http://a"}, {"n2", 1, "http://a"}, {"n3", 1, "http://b"},
			{"n4", 2, "http://a"}, {"n4", 1, "http://a"}, {"n2", 2, "http://a"},
		} {
			if err := s.Complain(ctx, c.node, c.term, c.url); err != nil {
				t.Fatal(err)
			}
		}
		got, err := s.Complainants(ctx, 1, "http://a", time.Now().Add(-time.Minute))
		if err != nil || !slices.Equal(got, []string{"n1", "n4"}) {
			t.Fatalf("complainants of term 1 at a: %v %v, want [n1 n4]", got, err)
		}
		if got, _ := s.Complainants(ctx, 1, "http://a", time.Now().Add(time.Minute)); len(got) != 0 {
			t.Fatalf("complaints older than asked counted: %v", got)
		}
	})
}
