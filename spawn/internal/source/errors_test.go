package source

import (
	"errors"
	"testing"

	"github.com/blackwidow-crawl/blackwidow/api"
)

func TestErrorSet_PartsJoinClearAndRemember(t *testing.T) {
	var s ErrorSet
	a, b := errors.New("conn down"), errors.New("query bad")
	if s.Err() != nil {
		t.Fatal("an empty set has an error")
	}
	s.Set("conn", a)
	s.Set("query 1", b)
	if err := s.Err(); !errors.Is(err, a) || !errors.Is(err, b) {
		t.Fatalf("Err = %v, want both", err)
	}
	if err := s.ErrOf(func(part string) bool { return part == "conn" }); !errors.Is(err, a) || errors.Is(err, b) {
		t.Fatalf("ErrOf(conn) = %v, want only the connection's", err)
	}
	if err := s.ErrOf(func(string) bool { return false }); err != nil {
		t.Fatalf("ErrOf(nothing) = %v, want nil", err)
	}
	s.Set("conn", nil)
	if err := s.Err(); errors.Is(err, a) || !errors.Is(err, b) {
		t.Fatalf("after clearing conn: %v", err)
	}
	s.Clear(func(part string) bool { return part == "query 1" })
	if s.Err() != nil {
		t.Fatalf("after Clear: %v", s.Err())
	}
	if !s.Saw(a) || !s.Saw(b) {
		t.Fatal("cleared errors are forgotten by Saw")
	}
}

func TestDegraded_KeepsMessageAndCause(t *testing.T) {
	cause := errors.New("rss: timeout")
	err := Degraded(cause)
	if err.Error() != cause.Error() || !errors.Is(err, ErrDegraded) || !errors.Is(err, cause) {
		t.Fatalf("Degraded = %v", err)
	}
	if Degraded(nil) != nil || Degraded(err) != err {
		t.Fatal("Degraded of nil or of a degraded error changed it")
	}
}

func TestRegistry_OffersOnlyConfiguredKinds(t *testing.T) {
	missing := errors.New("no credentials")
	r := Registry{
		"twitter": Unconfigured(missing),
		"rss":     struct{ Kind }{}, // any Kind that is not a stand-in
	}
	if got := r.Offered(); len(got) != 1 || got[0] != "rss" {
		t.Fatalf("Offered() = %v, want [rss]", got)
	}
	if _, err := r["twitter"].Keys(Sub{Spec: api.SubscriberSpec{CrawlerID: 7}}); !errors.Is(err, missing) {
		t.Fatalf("a stand-in's Keys = %v, want the missing configuration", err)
	}
}
