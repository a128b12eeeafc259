package bluesky

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/internal/fakes/jetstream"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
)

// nameLog records what the source tells the node of handles.
type nameLog struct {
	mu    sync.Mutex
	names []source.AuthorName
}

func (l *nameLog) add(ns []source.AuthorName) {
	l.mu.Lock()
	l.names = append(l.names, ns...)
	l.mu.Unlock()
}

func (l *nameLog) has(did, handle string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Contains(l.names, source.AuthorName{AuthorID: did, Author: handle})
}

func TestResolver_PostGoesOutAtOnceAndItsHandleFollows(t *testing.T) {
	js := jetstream.Start(t, jetstream.Options{})
	opts, av := testOptionsWithAppView(t, js.URL())
	av.Set("did:plc:bob", "Bob.Test")
	src, rec := start(t, opts, spec(1, "hello"))
	log := &nameLog{}
	src.NameAuthors(log.add)
	testkit.WaitFor(t, waitTimeout, "the connection", func() bool { return js.Conns() == 1 })

	first := js.Publish(jetstream.Post{DID: "did:plc:bob", Text: "hello one"})
	testkit.WaitFor(t, waitTimeout, "the first post", func() bool { return rec.Has(first.URI) })
	if it, _ := rec.ByID(first.URI); it.Author != "did:plc:bob" || it.AuthorID != "did:plc:bob" {
		t.Errorf("first post by %q (%q), want the DID: the handle is not known yet", it.Author, it.AuthorID)
	}
	testkit.WaitFor(t, waitTimeout, "the handle told", func() bool { return log.has("did:plc:bob", "bob.test") })
	second := js.Publish(jetstream.Post{DID: "did:plc:bob", Text: "hello two"})
	testkit.WaitFor(t, waitTimeout, "the second post", func() bool { return rec.Has(second.URI) })
	if it, _ := rec.ByID(second.URI); it.Author != "bob.test" || it.AuthorID != "did:plc:bob" {
		t.Errorf("second post by %q (%q), want bob.test", it.Author, it.AuthorID)
	}
	if av.Calls() != 1 {
		t.Errorf("%d AppView calls, want 1", av.Calls())
	}
}

func TestResolver_AsksForAtMost25ActorsACall(t *testing.T) {
	js := jetstream.Start(t, jetstream.Options{})
	opts, av := testOptionsWithAppView(t, js.URL())
	opts.LookupLinger = time.Hour // only full calls go before the last
	const dids = 60
	for i := range dids {
		av.Set(fmt.Sprintf("did:plc:u%02d", i), fmt.Sprintf("u%02d.test", i))
	}
	src, rec := start(t, opts, spec(1, "hello"))
	testkit.WaitFor(t, waitTimeout, "the connection", func() bool { return js.Conns() == 1 })
	var last jetstream.Published
	for i := range dids {
		last = js.Publish(jetstream.Post{DID: fmt.Sprintf("did:plc:u%02d", i), Text: "hello"})
		js.Publish(jetstream.Post{DID: fmt.Sprintf("did:plc:u%02d", i), Text: "hello again"})
	}
	testkit.WaitFor(t, waitTimeout, "every post", func() bool { return rec.Has(last.URI) && len(rec.All()) == 2*dids })
	testkit.WaitFor(t, waitTimeout, "two full calls", func() bool { return av.Calls() == 2 })
	if av.Refused() != 0 || av.Actors() != 50 {
		t.Errorf("refused %d, actors %d: want two calls of 25", av.Refused(), av.Actors())
	}
	if st := src.Stats(); st.AppViewCalls != 2 || st.AppViewActors != 50 || st.AppViewFailures != 0 {
		t.Errorf("stats %+v", st)
	}
}

func TestResolver_UnknownAndInvalidAccountsKeepTheirDID(t *testing.T) {
	js := jetstream.Start(t, jetstream.Options{})
	opts, av := testOptionsWithAppView(t, js.URL())
	av.Set("did:plc:carol", "handle.invalid")
	src, rec := start(t, opts, spec(1, "hello"))
	log := &nameLog{}
	src.NameAuthors(log.add)
	testkit.WaitFor(t, waitTimeout, "the connection", func() bool { return js.Conns() == 1 })
	for _, did := range []string{"did:plc:carol", "did:plc:gone"} {
		js.Publish(jetstream.Post{DID: did, Text: "hello"})
	}
	testkit.WaitFor(t, waitTimeout, "one call", func() bool { return av.Calls() == 1 && src.Stats().Handles == 2 })
	var again []jetstream.Published
	for _, did := range []string{"did:plc:carol", "did:plc:gone"} {
		again = append(again, js.Publish(jetstream.Post{DID: did, Text: "hello again"}))
	}
	testkit.WaitFor(t, waitTimeout, "the posts", func() bool { return rec.Has(again[0].URI, again[1].URI) })
	for _, p := range again {
		if it, _ := rec.ByID(p.URI); it.Author != it.AuthorID {
			t.Errorf("post %s by %q, want its DID", p.URI, it.Author)
		}
	}
	if av.Calls() != 1 {
		t.Errorf("%d calls: an account without a handle was asked for again within MissingTTL", av.Calls())
	}
	log.mu.Lock()
	if len(log.names) != 0 {
		t.Errorf("names told %v", log.names)
	}
	log.mu.Unlock()
}

func TestResolver_IdentityEvents(t *testing.T) {
	js := jetstream.Start(t, jetstream.Options{})
	opts, av := testOptionsWithAppView(t, js.URL())
	av.Set("did:plc:dan", "dan.test")
	src, rec := start(t, opts, spec(1, "hello"))
	log := &nameLog{}
	src.NameAuthors(log.add)
	testkit.WaitFor(t, waitTimeout, "the connection", func() bool { return js.Conns() == 1 })

	// An identity event with a handle is believed at once, and told.
	js.PublishIdentity("did:plc:dan", "Dan.New.Test")
	p1 := js.Publish(jetstream.Post{DID: "did:plc:dan", Text: "hello"})
	testkit.WaitFor(t, waitTimeout, "the post", func() bool { return rec.Has(p1.URI) })
	if it, _ := rec.ByID(p1.URI); it.Author != "dan.new.test" || !log.has("did:plc:dan", "dan.new.test") {
		t.Errorf("post by %q, names %v", it.Author, log.names)
	}
	// One without (as most are) forgets it: the next post asks again.
	js.PublishIdentity("did:plc:dan", "")
	p2 := js.Publish(jetstream.Post{DID: "did:plc:dan", Text: "hello"})
	testkit.WaitFor(t, waitTimeout, "the second post", func() bool { return rec.Has(p2.URI) })
	if it, _ := rec.ByID(p2.URI); it.Author != "did:plc:dan" {
		t.Errorf("post after a handle-less identity event by %q, want the DID until the AppView answers", it.Author)
	}
	testkit.WaitFor(t, waitTimeout, "the AppView asked", func() bool { return av.Calls() == 1 && log.has("did:plc:dan", "dan.test") })
}

func TestResolver_FromHandleIsResolvedBeforeItsFirstPost(t *testing.T) {
	js := jetstream.Start(t, jetstream.Options{})
	opts, av := testOptionsWithAppView(t, js.URL())
	av.Set("did:plc:erin", "erin.test")
	src, rec := start(t, opts, spec(1, "from:Erin.test"))
	testkit.WaitFor(t, waitTimeout, "the handle asked for", func() bool { return av.Calls() == 1 && src.Stats().Handles == 1 })
	testkit.WaitFor(t, waitTimeout, "the connection", func() bool { return js.Conns() == 1 })
	p := js.Publish(jetstream.Post{DID: "did:plc:erin", Text: "my very first post"})
	testkit.WaitFor(t, waitTimeout, "the post", func() bool { return rec.Has(p.URI) })
	if it, _ := rec.ByID(p.URI); it.Author != "erin.test" {
		t.Errorf("first post by %q, want erin.test", it.Author)
	}
}

func TestResolver_FailingAppViewIsRetriedAndDegradesOnlyMeanwhile(t *testing.T) {
	js := jetstream.Start(t, jetstream.Options{})
	opts, av := testOptionsWithAppView(t, js.URL())
	av.Set("did:plc:fay", "fay.test")
	av.FailNext(1)
	src, rec := start(t, opts, spec(1, "hello"))
	log := &nameLog{}
	src.NameAuthors(log.add)
	testkit.WaitFor(t, waitTimeout, "the connection", func() bool { return js.Conns() == 1 })
	p := js.Publish(jetstream.Post{DID: "did:plc:fay", Text: "hello"})
	testkit.WaitFor(t, waitTimeout, "the post", func() bool { return rec.Has(p.URI) })
	testkit.WaitFor(t, waitTimeout, "the failure shown", func() bool { return errors.Is(src.Err(), ErrAppView) })
	if !errors.Is(src.Err(), source.ErrDegraded) {
		t.Errorf("Err %v, want degraded", src.Err())
	}
	testkit.WaitFor(t, 2*waitTimeout, "the retry", func() bool { return log.has("did:plc:fay", "fay.test") })
	testkit.WaitFor(t, waitTimeout, "the error cleared", func() bool { return src.Err() == nil })
	if st := src.Stats(); st.AppViewCalls != 2 || st.AppViewFailures != 1 {
		t.Errorf("stats %+v", st)
	}
}
