package bluesky

import (
	"slices"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/internal/fakes/appview"
	"github.com/blackwidow-crawl/blackwidow/internal/fakes/jetstream"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/spawntest"
)

// TestRetraction_RecordedEvents turns each recorded delete, update and
// account event into what it takes back; the expected values are read off
// the payloads (testdata/SOURCES.md).
func TestRetraction_RecordedEvents(t *testing.T) {
	var deleteLine []byte
	for _, l := range readLines(t, "jetstream_expected_v1.jsonl") {
		ev, err := decodeEvent(l)
		if err == nil && ev.kind == kindDelete {
			deleteLine = l
		}
	}
	accounts := readLines(t, "account_events.jsonl")
	update := readLines(t, "post_update.jsonl")[0]
	cases := []struct {
		name string
		line []byte
		want *api.Retraction
	}{
		{"post delete", deleteLine, &api.Retraction{Op: api.RetractDelete, Source: api.SourceBluesky,
			ID: "at://did:plc:4smmjsqf6l5jkzczvw6vsrqc/app.bsky.feed.post/3mpt73z3ejc2p", At: time.UnixMicro(1783175888377628).UTC()}},
		{"account deleted", accounts[0], &api.Retraction{Op: api.RetractAccount, Source: api.SourceBluesky,
			Author: "did:plc:zsgqovouzm2gyksjkqrdodsw", Status: "deleted", At: time.UnixMicro(1736451739215876).UTC()}},
		{"account deactivated", accounts[1], nil},
		{"account active, never seen inactive", accounts[2], nil},
		{"account taken down", accounts[3], &api.Retraction{Op: api.RetractAccount, Source: api.SourceBluesky,
			Author: "did:plc:yn72uqr4ihkjfbz7us7buqsq", Status: "takendown", At: time.UnixMicro(1757517640675638).UTC()}},
		{"post update", update, &api.Retraction{Op: api.RetractUpdate, Source: api.SourceBluesky,
			ID:       "at://did:plc:u5cwb2mwiv2bfq53cjufe6yn/app.bsky.feed.post/3k4duaz5vfs2b",
			Text:     "✨ example mentioning @atproto.com to share the URL 👨\u200d❤️\u200d👨 https://en.wikipedia.org/wiki/CBOR.",
			Links:    []string{"https://en.wikipedia.org/wiki/CBOR"},
			EditedAt: time.UnixMicro(1691500000000000).UTC(), At: time.UnixMicro(1691500000000000).UTC()}},
	}
	s := &Source{opts: Options{}.withDefaults(), down: newDownAccounts()}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.line == nil {
				t.Fatal("no recorded line")
			}
			ev, err := decodeEvent(tc.line)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := s.retraction(ev, time.Now())
			if tc.want == nil {
				if ok {
					t.Errorf("took back %+v, want nothing", got)
				}
				return
			}
			if !ok {
				t.Fatal("took nothing back")
			}
			got.Reason = ""
			if got.Op != tc.want.Op || got.Source != tc.want.Source || got.ID != tc.want.ID || got.Author != tc.want.Author ||
				got.Active != tc.want.Active || got.Status != tc.want.Status || got.Text != tc.want.Text ||
				!slices.Equal(got.Links, tc.want.Links) || !got.EditedAt.Equal(tc.want.EditedAt) || !got.At.Equal(tc.want.At) {
				t.Errorf("got  %+v\nwant %+v", got, *tc.want)
			}
		})
	}
	// The deleted account coming back (the recorded active event's shape,
	// for that DID) lifts what its deletion put in place, once.
	back, err := decodeEvent([]byte(`{"did":"did:plc:zsgqovouzm2gyksjkqrdodsw","time_us":1736451800000000,"kind":"account","account":{"active":true,"did":"did:plc:zsgqovouzm2gyksjkqrdodsw","seq":3040999999,"time":"2025-01-09T19:43:20.000Z"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := s.retraction(back, time.Now()); !ok || !got.Active || got.Author != "did:plc:zsgqovouzm2gyksjkqrdodsw" {
		t.Errorf("the account's return: %+v, %v", got, ok)
	}
	if _, ok := s.retraction(back, time.Now()); ok {
		t.Error("a second return lifted again")
	}
}

// TestSource_DeletesEditsAndTakedownsReachTheStore runs the recorded
// guide's posts through the local Jetstream into a real spawn on a file
// store, then the service takes them back: an update commit replaces one
// post's text (rebuilt as a create's: its link facet), a delete commit
// removes another, and the account's takedown removes the rest and keeps
// its new posts out until the account is active again.
func TestSource_DeletesEditsAndTakedownsReachTheStore(t *testing.T) {
	js := jetstream.Start(t, jetstream.Options{ReplayWindow: 100 * 365 * 24 * time.Hour})
	av := appview.Start(t)
	const did = "did:plc:u5cwb2mwiv2bfq53cjufe6yn"
	av.Set(did, "guide.example.test")
	k, err := New(Options{JetstreamURL: js.URL(), AppViewURL: av.URL(), LookupLinger: 20 * time.Millisecond, Logger: testkit.Logger(t, "bluesky")})
	if err != nil {
		t.Fatal(err)
	}
	fn := spawntest.StartFileNode(t, api.SourceBluesky, k)
	spawntest.Subscribe(t, fn.Node, spawntest.Spec(api.SourceBluesky, 1, nil, "from:"+did+" OR zzmarker"))
	testkit.WaitFor(t, spawntest.WaitTimeout, "the connection", func() bool { return js.Conns() == 1 })
	if err := js.Replay(readLines(t, "docs_posts.jsonl")); err != nil {
		t.Fatal(err)
	}
	byID := func() map[string]api.Comment {
		out := map[string]api.Comment{}
		for _, c := range fn.Lines(t, 1) {
			out[c.ID] = c
		}
		return out
	}
	testkit.WaitFor(t, spawntest.WaitTimeout, "the guide's 7 posts", func() bool { return len(byID()) == 7 })
	uri := func(rkey string) string { return "at://" + did + "/app.bsky.feed.post/" + rkey }

	if err := js.Replay(readLines(t, "post_update.jsonl")); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, spawntest.WaitTimeout, "the edit, and the author's handle", func() bool {
		c := byID()[uri("3k4duaz5vfs2b")]
		return !c.EditedAt.IsZero() && c.Author == "guide.example.test"
	})
	edited := byID()[uri("3k4duaz5vfs2b")]
	if want := "✨ example mentioning @atproto.com to share the URL 👨\u200d❤️\u200d👨 https://en.wikipedia.org/wiki/CBOR."; edited.Text != want ||
		!slices.Equal(edited.Links, []string{"https://en.wikipedia.org/wiki/CBOR"}) || !edited.EditedAt.Equal(time.UnixMicro(1691500000000000)) {
		t.Errorf("edited post: text %q links %q edited_at %s", edited.Text, edited.Links, edited.EditedAt)
	}
	if edited.Author != "guide.example.test" || !edited.PublishedAt.Equal(time.Date(2023, 8, 7, 5, 31, 12, 156888000, time.UTC)) {
		t.Errorf("the edit changed what it must not: author %q published %s", edited.Author, edited.PublishedAt)
	}

	js.Publish(jetstream.Post{DID: did, RKey: "3k4duaz5vfs2c", Operation: "delete"})
	testkit.WaitFor(t, spawntest.WaitTimeout, "the delete", func() bool { _, ok := byID()[uri("3k4duaz5vfs2c")]; return !ok })
	if got := len(byID()); got != 6 {
		t.Errorf("%d posts after one delete, want 6", got)
	}

	js.PublishAccount(did, false, "takendown")
	// Sent right after the takedown, before it reaches the store: a post
	// of the account, and one of another account the crawler also wants,
	// stored after it (one crawler's comments are written in order).
	during := js.Publish(jetstream.Post{DID: did, Text: "posted while taken down"})
	marker := js.Publish(jetstream.Post{DID: "did:plc:someoneelse", Text: "zzmarker"})
	testkit.WaitFor(t, spawntest.WaitTimeout, "the takedown and the marker", func() bool {
		got := byID()
		_, ok := got[marker.URI]
		return ok && len(got) == 1
	})
	if _, ok := byID()[during.URI]; ok {
		t.Error("a post of the taken-down account was stored")
	}
	// A replay of one of its old posts is not stored either.
	if err := js.Replay(readLines(t, "docs_posts.jsonl")[:1]); err != nil {
		t.Fatal(err)
	}
	marker2 := js.Publish(jetstream.Post{DID: "did:plc:someoneelse", Text: "zzmarker again"})
	testkit.WaitFor(t, spawntest.WaitTimeout, "the second marker", func() bool { _, ok := byID()[marker2.URI]; return ok })
	if got := len(byID()); got != 2 {
		t.Errorf("%d posts stored while the account is taken down, want the 2 markers", got)
	}
	js.PublishAccount(did, true, "")
	after := js.Publish(jetstream.Post{DID: did, Text: "posted after the return"})
	defer func() {
		if t.Failed() {
			for id, c := range byID() {
				t.Logf("stored %s %q", id, c.Text)
			}
			t.Logf("after %s", after.URI)
		}
	}()
	testkit.WaitFor(t, spawntest.WaitTimeout, "the post after the return", func() bool { _, ok := byID()[after.URI]; return ok })
}
