package mastodon

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	fake "github.com/blackwidow-crawl/blackwidow/internal/fakes/mastodon"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/spawntest"
)

// seenFields is how many fields of a stored comment CompareSeen checks:
// id, author, author_id, text, url, lang, published_at, reply_to,
// thread_id, links, repost_of and edited_at.
const seenFields = 12

// sample is one recorded Status entity of testdata/conformance and what a
// user must see of it, read off the payload (testdata/SOURCES.md).
type sample struct {
	entity json.RawMessage
	acct   string
	// publicStream: Mastodon streams it on the public stream (public, not
	// a reblog, not a reply to another account).
	publicStream bool
	// homeTags: the followed tags under which it reaches the home
	// timeline and a hashtag crawler on an instance with closed feeds
	// (public, not a reblog).
	homeTags []string
	seen     spawntest.Seen
}

func readSamples(t *testing.T, group string) []sample {
	t.Helper()
	lines := func(name string) [][]byte {
		f, err := os.Open(filepath.Join("testdata", "conformance", name))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		var out [][]byte
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			out = append(out, slices.Clone(sc.Bytes()))
		}
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	payloads, expected := lines(group+".jsonl"), lines("expected-"+group+".jsonl")
	if len(payloads) != len(expected) || len(payloads) == 0 {
		t.Fatalf("%s: %d samples, %d expectations", group, len(payloads), len(expected))
	}
	out := make([]sample, len(payloads))
	for n := range payloads {
		var p struct {
			Entity json.RawMessage `json:"entity"`
		}
		var e struct {
			StatusID     string         `json:"status_id"`
			PublicStream bool           `json:"public_stream"`
			HomeTags     []string       `json:"home_tags"`
			Seen         spawntest.Seen `json:"seen"`
		}
		var head struct {
			ID      string `json:"id"`
			Account struct {
				Acct string `json:"acct"`
			} `json:"account"`
		}
		if err := json.Unmarshal(payloads[n], &p); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(expected[n], &e); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(p.Entity, &head); err != nil || head.ID != e.StatusID {
			t.Fatalf("%s line %d: status %q, expectation for %q (%v)", group, n+1, head.ID, e.StatusID, err)
		}
		out[n] = sample{entity: p.Entity, acct: head.Account.Acct, publicStream: e.PublicStream, homeTags: e.HomeTags, seen: e.Seen}
	}
	return out
}

// conformanceOptions looks up every reply's context at once: the corpus
// must not lose a link to the look-up budget.
func conformanceOptions(t *testing.T, url string) Options {
	opts := testOptions(t, url)
	opts.ResolveRate, opts.ResolveBurst = 1e6, 1<<20
	return opts
}

// TestConformance_RecordedStatusesThroughTheSpawn streams every recorded
// Status (Mastodon's documentation, and the responses of a real Mastodon
// recorded by Mastodon.py's test suite) from the local instance through
// the real source into a real spawn node and file store, and checks what a
// user sees of each stored comment: on an open instance through the
// public stream (one from: crawler per author), and on an instance whose
// feeds are closed through the followed tags of one hashtag crawler per
// tag, while the home timeline also carries everything else the samples'
// authors post, which must not be stored.
func TestConformance_RecordedStatusesThroughTheSpawn(t *testing.T) {
	groups := []struct {
		name, domain string
	}{{"documentation", "mastodon.social"}, {"mastodonpy", "localhost:3000"}, {"publictimeline", "mastodon.social"}}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			samples := readSamples(t, g.name)
			compared := 0
			t.Run("open instance, public stream", func(t *testing.T) {
				srv := startServer(t, fake.Options{Domain: g.domain})
				want := map[string][]spawntest.Seen{} // by from: query
				for _, s := range samples {
					if err := srv.RememberJSON(s.entity); err != nil {
						t.Fatal(err)
					}
					if s.publicStream {
						want["from:"+s.seen.Author] = append(want["from:"+s.seen.Author], s.seen)
					}
				}
				compared += run(t, srv, g.domain, samples, want, "public")
			})
			t.Run("closed instance, followed tags", func(t *testing.T) {
				srv := startServer(t, fake.Options{Domain: g.domain, TimelinesAccess: fake.ClosedLiveFeeds})
				want := map[string][]spawntest.Seen{} // by #tag query
				for _, s := range samples {
					if err := srv.RememberJSON(s.entity); err != nil {
						t.Fatal(err)
					}
					srv.FollowAccount(s.acct) // the home timeline carries all they post
					for _, tag := range s.homeTags {
						want["#"+tag] = append(want["#"+tag], s.seen)
					}
				}
				compared += run(t, srv, g.domain, samples, want, "user")
			})
			if !t.Failed() {
				t.Logf("%s: %d samples read, %d comments compared, %d fields checked, 0 wrong", g.name, len(samples), compared, compared*seenFields)
			}
		})
	}
}

// run starts a spawn node reading srv with one crawler per query of want,
// waits for the stream, delivers every sample in order and checks what
// each crawler stored. It returns how many comments it compared.
func run(t *testing.T, srv *fake.Server, domain string, samples []sample, want map[string][]spawntest.Seen, stream string) int {
	t.Helper()
	kind, err := New(conformanceOptions(t, srv.URL()))
	if err != nil {
		t.Fatal(err)
	}
	node := spawntest.StartFileNode(t, api.SourceMastodon, kind)
	queries := slices.Sorted(func(yield func(string) bool) {
		for q := range want {
			if !yield(q) {
				return
			}
		}
	})
	specs := make([]api.SubscriberSpec, len(queries))
	for n, q := range queries {
		specs[n] = spec(int64(n+1), q)
	}
	spawntest.Subscribe(t, node.Node, specs...)
	testkit.WaitFor(t, waitDeadline, "the "+stream+" stream", func() bool {
		subs := srv.Subscriptions()
		return len(subs) == 1 && slices.Contains(subs[0], stream)
	})
	if stream == streamUser {
		testkit.WaitFor(t, waitDeadline, "the followed tags", func() bool { return len(srv.FollowedTags()) == len(queries) })
	}
	for _, s := range samples {
		var head struct {
			ID string `json:"id"`
		}
		_ = json.Unmarshal(s.entity, &head)
		if err := srv.Deliver(head.ID); err != nil {
			t.Fatal(err)
		}
	}
	compared := 0
	for n, q := range queries {
		got := node.WaitSeen(t, int64(n+1), want[q])
		compared += len(got)
	}
	return compared
}

// TestConformance_WhatRecordedStatusesCarryIsKept reads every recorded
// Status the way the stream hands it over and counts what a reader of the
// stored comment must still find: the edit time of a status that arrives
// already edited, the paragraphs and line breaks of its content, every
// media attachment's description and the preview card's title (kept in the
// text after the status's own words, as the bluesky source keeps alt text
// and link card titles).
func TestConformance_WhatRecordedStatusesCarryIsKept(t *testing.T) {
	type tally struct{ seen, lost int }
	var edited, breaks, descriptions, titles tally
	count := func(c *tally, kept bool) {
		c.seen++
		if !kept {
			c.lost++
		}
	}
	statuses := 0
	for _, group := range []string{"documentation", "mastodonpy", "publictimeline"} {
		for _, s := range readSamples(t, group) {
			var st status
			if err := json.Unmarshal(s.entity, &st); err != nil {
				t.Fatal(err)
			}
			if st.Reblog != nil {
				continue // the stream hands over the reblogged status, a sample of its own
			}
			statuses++
			it, err := statusItem(&st, "mastodon.example", nil, time.Now())
			if err != nil {
				t.Fatalf("%s %s: %v", group, st.ID, err)
			}
			if st.EditedAt != nil {
				at, _ := time.Parse(time.RFC3339Nano, *st.EditedAt)
				count(&edited, !at.IsZero() && it.EditedAt.Equal(at))
			}
			if strings.Count(st.Content, "</p>") > 1 || strings.Contains(st.Content, "<br") {
				count(&breaks, strings.Contains(it.Text, "\n") && it.Text == s.seen.Text)
			}
			for _, m := range st.Media {
				if m.Description != nil && strings.TrimSpace(*m.Description) != "" {
					count(&descriptions, strings.Contains(it.Text, strings.TrimSpace(*m.Description)))
				}
			}
			if st.Card != nil && strings.TrimSpace(st.Card.Title) != "" {
				count(&titles, strings.Contains(it.Text, strings.TrimSpace(st.Card.Title)))
			}
		}
	}
	for _, c := range []struct {
		what string
		tally
	}{
		{"statuses arriving edited lost edited_at", edited},
		{"statuses with paragraphs or line breaks lost them", breaks},
		{"media descriptions lost", descriptions},
		{"preview card titles lost", titles},
	} {
		if c.seen == 0 {
			t.Errorf("%s: the recordings hold no case", c.what)
		}
		if c.lost > 0 {
			t.Errorf("%s: %d of %d", c.what, c.lost, c.seen)
		}
		t.Logf("%s: %d of %d", c.what, c.lost, c.seen)
	}
	t.Logf("%d recorded statuses read", statuses)
}
