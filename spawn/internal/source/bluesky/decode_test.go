package bluesky

import (
	"errors"
	"strings"
	"testing"
	"time"
)

const (
	testDID = "did:plc:eygmaihciaxprqvxpfvl6flk"
	// postFrame is a reply post as the service sends it.
	postFrame = `{"did":"did:plc:eygmaihciaxprqvxpfvl6flk","time_us":1725911162329308,"cursor":7,"kind":"commit",` +
		`"commit":{"rev":"3l3qo2vutsw2b","operation":"create","collection":"app.bsky.feed.post","rkey":"3l3qo2vuowo2b",` +
		`"record":{"$type":"app.bsky.feed.post","createdAt":"2024-09-09T19:46:02.102Z","langs":["EN","de"],` +
		`"reply":{"parent":{"cid":"bafyreia","uri":"at://did:plc:wa7b35aakoll7hugkrjtf3xf/app.bsky.feed.post/3l3pte3p2e325"},` +
		`"root":{"cid":"bafyreib","uri":"at://did:plc:wa7b35aakoll7hugkrjtf3xf/app.bsky.feed.post/3l3pte3p2e300"}},` +
		`"text":"Hello #golang"},"cid":"bafyreidwaivazkwu67xztlmuobx35hs2lnfh3kolmgfmucldvhd3sgzcqi"}}`
)

func TestDecodeEvent(t *testing.T) {
	commit := func(op, collection, rkey, record string) string {
		return `{"did":"` + testDID + `","time_us":1725911162329308,"kind":"commit","commit":{"rev":"r","operation":"` + op +
			`","collection":"` + collection + `","rkey":"` + rkey + `"` + record + `}}`
	}
	cases := []struct {
		name   string
		frame  string
		kind   eventKind
		handle string
		err    error
	}{
		{"post", postFrame, kindPost, "", nil},
		{"post without optional fields", commit("create", PostCollection, "3l3qo2vuowo2b", `,"record":{"text":"hi"}`), kindPost, "", nil},
		{"post update", commit("update", PostCollection, "3l3qo2vuowo2b", `,"record":{"text":"hi"}`), kindUpdate, "", nil},
		{"post delete", commit("delete", PostCollection, "3l3qo2vuowo2b", ""), kindDelete, "", nil},
		{"like delete", commit("delete", "app.bsky.feed.like", "3l3qo2vuowo2b", ""), kindOther, "", nil},
		{"like", commit("create", "app.bsky.feed.like", "3l3qo2vuowo2b", `,"record":{}`), kindOther, "", nil},
		{"identity", `{"did":"` + testDID + `","time_us":5,"kind":"identity","identity":{"did":"` + testDID + `","handle":"Alice.BSKY.social","seq":1}}`, kindIdentity, "alice.bsky.social", nil},
		{"identity without handle", `{"did":"` + testDID + `","time_us":5,"kind":"identity","identity":{"did":"` + testDID + `","seq":1}}`, kindIdentity, "", nil},
		{"identity with invalid handle", `{"did":"` + testDID + `","time_us":5,"kind":"identity","identity":{"handle":"handle.invalid"}}`, kindIdentity, "", nil},
		{"identity with a script for a handle", `{"did":"` + testDID + `","time_us":5,"kind":"identity","identity":{"handle":"<script>.x"}}`, kindIdentity, "", nil},
		{"account", `{"did":"` + testDID + `","time_us":5,"kind":"account","account":{"active":false,"status":"deleted"}}`, kindAccount, "", nil},
		{"account active", `{"did":"` + testDID + `","time_us":5,"kind":"account","account":{"active":true}}`, kindAccount, "", nil},
		{"unknown kind", `{"did":"` + testDID + `","time_us":5,"kind":"sync"}`, kindOther, "", nil},

		{"not JSON", `hello`, 0, "", ErrMalformed},
		{"empty", ``, 0, "", ErrMalformed},
		{"null", `null`, 0, "", ErrMalformed},
		{"array", `[1]`, 0, "", ErrMalformed},
		{"two values", `{"time_us":1} {"time_us":2}`, 0, "", ErrMalformed},
		{"truncated", postFrame[:len(postFrame)/2], 0, "", ErrTruncated},
		{"truncated at a key", `{"did":`, 0, "", ErrTruncated},
		{"no time_us", strings.Replace(postFrame, `"time_us":1725911162329308`, `"time_us":0`, 1), 0, "", ErrMalformed},
		{"time_us a string", strings.Replace(postFrame, `1725911162329308`, `"1"`, 1), 0, "", ErrMalformed},
		{"no DID", strings.Replace(postFrame, `"did":"did:plc:eygmaihciaxprqvxpfvl6flk"`, `"did":""`, 1), 0, "", ErrMalformed},
		{"DID with a slash", strings.Replace(postFrame, testDID, "did:plc:a/b", 1), 0, "", ErrMalformed},
		{"commit missing", `{"did":"` + testDID + `","time_us":5,"kind":"commit"}`, 0, "", ErrMalformed},
		{"record key with a slash", commit("create", PostCollection, "a/b", `,"record":{"text":"hi"}`), 0, "", ErrMalformed},
		{"record key dot", commit("create", PostCollection, ".", `,"record":{"text":"hi"}`), 0, "", ErrMalformed},
		{"record missing", commit("create", PostCollection, "3l3qo2vuowo2b", ""), 0, "", ErrMalformed},
		{"record null", commit("create", PostCollection, "3l3qo2vuowo2b", `,"record":null`), 0, "", ErrMalformed},
		{"text a number", commit("create", PostCollection, "3l3qo2vuowo2b", `,"record":{"text":5}`), 0, "", ErrMalformed},
		{"URI too long", commit("create", PostCollection, strings.Repeat("a", 300), `,"record":{"text":"hi"}`), 0, "", ErrMalformed},
		{"identity missing", `{"did":"` + testDID + `","time_us":5,"kind":"identity"}`, 0, "", ErrMalformed},
		{"account missing", `{"did":"` + testDID + `","time_us":5,"kind":"account"}`, 0, "", ErrMalformed},
		{"account without active", `{"did":"` + testDID + `","time_us":5,"kind":"account","account":{"status":"deleted"}}`, 0, "", ErrMalformed},
		{"delete with a bad record key", commit("delete", PostCollection, "a/b", ""), 0, "", ErrMalformed},
		{"update without a record", commit("update", PostCollection, "3l3qo2vuowo2b", ""), 0, "", ErrMalformed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ev, err := decodeEvent([]byte(tc.frame))
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("error %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if ev.kind != tc.kind || ev.handle != tc.handle {
				t.Errorf("kind %v handle %q, want %v %q", ev.kind, ev.handle, tc.kind, tc.handle)
			}
		})
	}
}

func TestPostItem(t *testing.T) {
	now := time.Date(2024, 9, 10, 0, 0, 0, 0, time.UTC)
	ev, err := decodeEvent([]byte(postFrame))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, author, wantAuthor, wantURL string
	}{
		{"handle known", "alice.bsky.social", "alice.bsky.social", "https://bsky.app/profile/" + testDID + "/post/3l3qo2vuowo2b"},
		{"handle unknown", "", testDID, "https://bsky.app/profile/" + testDID + "/post/3l3qo2vuowo2b"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			it := postItem(ev, tc.author, now)
			if it.ID != "at://"+testDID+"/app.bsky.feed.post/3l3qo2vuowo2b" {
				t.Errorf("id %q", it.ID)
			}
			if it.Author != tc.wantAuthor || it.AuthorID != testDID || it.URL != tc.wantURL {
				t.Errorf("author %q author id %q url %q", it.Author, it.AuthorID, it.URL)
			}
			if it.Text != "Hello #golang" || it.Lang != "en" || it.Position != 1725911162329308 {
				t.Errorf("text %q lang %q position %d", it.Text, it.Lang, it.Position)
			}
			if !it.PublishedAt.Equal(time.Date(2024, 9, 9, 19, 46, 2, 102e6, time.UTC)) || !it.FetchedAt.Equal(now) {
				t.Errorf("published %v fetched %v", it.PublishedAt, it.FetchedAt)
			}
			if it.ReplyTo != "at://did:plc:wa7b35aakoll7hugkrjtf3xf/app.bsky.feed.post/3l3pte3p2e325" ||
				it.ThreadID != "at://did:plc:wa7b35aakoll7hugkrjtf3xf/app.bsky.feed.post/3l3pte3p2e300" {
				t.Errorf("reply to %q thread %q", it.ReplyTo, it.ThreadID)
			}
		})
	}
}

func TestPostItem_BoundsWhatThePostClaims(t *testing.T) {
	now := time.Date(2024, 9, 10, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		name    string
		record  postRecord
		check   func(t *testing.T, text, lang, reply string, published time.Time)
		rkey    string
		wantURL bool
	}{
		{"created in the future", postRecord{CreatedAt: "2999-01-01T00:00:00Z"}, func(t *testing.T, _, _, _ string, p time.Time) {
			if !p.Equal(now) {
				t.Errorf("published %v, want now", p)
			}
		}, "k", true},
		{"created at no date", postRecord{CreatedAt: "yesterday"}, func(t *testing.T, _, _, _ string, p time.Time) {
			if !p.Equal(now) {
				t.Errorf("published %v, want now", p)
			}
		}, "k", true},
		{"huge text", postRecord{Text: strings.Repeat("é", maxTextBytes)}, func(t *testing.T, text, _, _ string, _ time.Time) {
			if len(text) > maxTextBytes || !strings.HasPrefix(text, "éé") || strings.ContainsRune(text, '\uFFFD') {
				t.Errorf("text of %d bytes", len(text))
			}
		}, "k", true},
		{"odd language", postRecord{Langs: []string{"<b>"}}, func(t *testing.T, _, lang, _ string, _ time.Time) {
			if lang != "" {
				t.Errorf("lang %q", lang)
			}
		}, "k", true},
		{"reply to a web page", postRecord{Reply: &struct {
			Parent struct {
				URI string `json:"uri"`
			} `json:"parent"`
			Root struct {
				URI string `json:"uri"`
			} `json:"root"`
		}{}}, func(t *testing.T, _, _, reply string, _ time.Time) {
			if reply != "" {
				t.Errorf("reply to %q", reply)
			}
		}, "k", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ev := event{kind: kindPost, did: testDID, rkey: tc.rkey, timeUS: 1, post: tc.record}
			it := postItem(ev, "", now)
			tc.check(t, it.Text, it.Lang, it.ReplyTo, it.PublishedAt)
			if (it.URL != "") != tc.wantURL {
				t.Errorf("url %q", it.URL)
			}
		})
	}
}

func TestNormalHandle(t *testing.T) {
	for in, want := range map[string]string{
		"alice.bsky.social":              "alice.bsky.social",
		"Bob.Example.COM":                "bob.example.com",
		"nodot":                          "",
		"-bad.example":                   "",
		"a..b":                           "",
		"handle.invalid":                 "",
		"a b.c":                          "",
		strings.Repeat("a", 64) + ".com": "",
	} {
		if got := normalHandle(in); got != want {
			t.Errorf("normalHandle(%q) = %q, want %q", in, got, want)
		}
	}
}

// BenchmarkDecodeEvent measures the decoding of a post event into an item,
// the work the source does per post.
func BenchmarkDecodeEvent(b *testing.B) {
	data := []byte(postFrame)
	now := time.Now()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		ev, err := decodeEvent(data)
		if err != nil {
			b.Fatal(err)
		}
		_ = postItem(ev, "alice.bsky.social", now)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "posts/s")
}
