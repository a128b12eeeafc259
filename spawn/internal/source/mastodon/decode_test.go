package mastodon

import (
	"encoding/json"
	"errors"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/pkg/query"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
)

// event wraps a status as the streaming API sends it: the payload is the
// status JSON-encoded as a string.
func event(name string, st map[string]any) []byte {
	payload, _ := json.Marshal(st)
	b, _ := json.Marshal(map[string]any{"stream": []string{"public"}, "event": name, "payload": string(payload)})
	return b
}

func TestDecodeFrame(t *testing.T) {
	status := map[string]any{"id": "1", "uri": "https://a.example/users/x/statuses/1", "content": "<p>hi</p>"}
	cases := []struct {
		name    string
		data    []byte
		kind    frameKind
		err     error
		uri     string
		reblog  bool
		errCode int
	}{
		{"update", event("update", status), frameStatus, nil, "https://a.example/users/x/statuses/1", false, 0},
		{"edit", event("status.update", status), frameStatus, nil, "https://a.example/users/x/statuses/1", false, 0},
		{"reblog is unwrapped", event("update", map[string]any{"id": "2", "uri": "https://b.example/boost", "reblog": status}), frameStatus, nil, "https://a.example/users/x/statuses/1", true, 0},
		{"payload as an object", []byte(`{"event":"update","payload":{"id":"1","uri":"u"}}`), frameStatus, nil, "u", false, 0},
		{"delete is ignored", []byte(`{"stream":["public"],"event":"delete","payload":"106692867363994015"}`), frameOther, nil, "", false, 0},
		{"notification is ignored", []byte(`{"stream":["user"],"event":"notification","payload":"{\"id\":\"9\"}"}`), frameOther, nil, "", false, 0},
		{"filters_changed without payload", []byte(`{"stream":["user"],"event":"filters_changed"}`), frameOther, nil, "", false, 0},
		{"error event", []byte(`{"error":"Unknown stream type","status":400}`), frameError, nil, "", false, 400},
		{"refused token", []byte(`{"error":"Access token does not have the required scopes","status":401}`), frameError, nil, "", false, 401},
		{"truncated frame", []byte(`{"stream":["public"],"event":"update","payload":"{\"id`), 0, ErrTruncated, "", false, 0},
		{"truncated payload", []byte(`{"event":"update","payload":"{\"id\":\"1\",\"uri\":\"x"}`), 0, ErrTruncated, "", false, 0},
		{"payload not JSON", []byte(`{"event":"update","payload":"<html>"}`), 0, ErrMalformed, "", false, 0},
		{"update without payload", []byte(`{"event":"update"}`), 0, ErrMalformed, "", false, 0},
		{"two values", []byte(`{"event":"delete"} {"event":"delete"}`), 0, ErrMalformed, "", false, 0},
		{"empty", nil, 0, ErrMalformed, "", false, 0},
		{"not an object", []byte(`[1,2]`), 0, ErrMalformed, "", false, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, err := decodeFrame(tc.data)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("err %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if f.kind != tc.kind || f.reblog != tc.reblog || f.code != tc.errCode {
				t.Fatalf("got %+v", f)
			}
			if tc.uri != "" && f.status.URI != tc.uri {
				t.Fatalf("uri %q, want %q", f.status.URI, tc.uri)
			}
		})
	}
}

func TestStatusItem(t *testing.T) {
	now := time.Date(2024, 6, 1, 12, 0, 0, 0, time.UTC)
	str := func(s string) *string { return &s }
	root := &link{uri: "https://a.example/users/x/statuses/10"}                                                      // a thread's first status
	inThread := &link{uri: "https://b.example/users/y/statuses/77", thread: "https://a.example/users/x/statuses/10"} // a reply in it
	orphan := &link{uri: "https://b.example/users/y/statuses/78", orphan: true}                                      // a reply whose parent is unknown
	cases := []struct {
		name   string
		st     status
		parent *link
		want   source.Item
	}{
		{
			name: "local account is qualified with the instance host; its uri is the author id",
			st: status{ID: "1", URI: "https://a.example/users/alice/statuses/1", URL: str("https://a.example/@alice/1"),
				CreatedAt: "2024-06-01T10:00:00.000Z", Content: `<p>Hello <a href="https://a.example/tags/golang" class="mention hashtag">#<span>golang</span></a></p>`,
				Language: str("EN"), Account: &account{Acct: "alice", Username: "alice", URI: "https://a.example/users/alice", URL: "https://a.example/@alice"},
				Tags: []tagJSON{{Name: "golang", URL: "https://a.example/tags/golang"}}},
			want: source.Item{ID: "https://a.example/users/alice/statuses/1", URL: "https://a.example/@alice/1", Author: "alice@a.example",
				AuthorID: "https://a.example/users/alice", Text: "Hello #golang", PublishedAt: time.Date(2024, 6, 1, 10, 0, 0, 0, time.UTC), Lang: "en"},
		},
		{
			name: "remote account keeps its domain; spoiler comes first; no uri before Mastodon 4.2",
			st: status{ID: "2", URI: "https://b.example/users/bob/statuses/9", CreatedAt: "2024-06-01T11:00:00Z",
				SpoilerText: "cw: food", Content: "<p>pizza</p>", Account: &account{Acct: "Bob@b.example", URL: "https://b.example/@Bob"}},
			want: source.Item{ID: "https://b.example/users/bob/statuses/9", URL: "https://b.example/users/bob/statuses/9", Author: "bob@b.example",
				Text: "cw: food\n\npizza", PublishedAt: time.Date(2024, 6, 1, 11, 0, 0, 0, time.UTC)},
		},
		{
			name: "links: content links in full, not mentions or hashtags, then the card; no repeats",
			st: status{ID: "3", URI: "https://a.example/s/3", CreatedAt: "2024-06-01T10:00:00Z",
				Content: `<p><span class="h-card"><a href="https://b.example/@bob" class="u-url mention">@<span>bob</span></a></span> see ` +
					`<a href="https://go.dev/blog/go1.24" rel="nofollow noopener" target="_blank"><span class="invisible">https://</span><span class="">go.dev/blog/go1.24</span><span class="invisible"></span></a> ` +
					`<a href="https://c.example/tag/go" rel="tag">#go</a> <a href="javascript:alert(1)">x</a> <a href="https://go.dev/blog/go1.24">again</a></p>`,
				Mentions: []mentionJSON{{URL: "https://b.example/@bob"}}, Card: &cardJSON{URL: "https://go.dev/doc/go1.24"}},
			want: source.Item{ID: "https://a.example/s/3", URL: "https://a.example/s/3", PublishedAt: time.Date(2024, 6, 1, 10, 0, 0, 0, time.UTC),
				Text:  "@bob see https://go.dev/blog/go1.24 #go x again\n\nhttps://go.dev/doc/go1.24",
				Links: []string{"https://go.dev/blog/go1.24", "https://go.dev/doc/go1.24"}},
		},
		{
			name: "paragraphs and line breaks are kept; the card's title and the media descriptions follow the words",
			st: status{ID: "9", URI: "https://a.example/s/9", CreatedAt: "2024-06-01T10:00:00Z",
				Content: `<p>Release day!</p><p>Read it:<br /><a href="https://go.dev/blog/go1.24"><span class="invisible">https://</span><span class="">go.dev/blog/go1.24</span><span class="invisible"></span></a></p>`,
				Card:    &cardJSON{URL: "https://go.dev/blog/go1.24", Title: " Go 1.24 is released "},
				Media:   []mediaJSON{{Description: str("A gopher\nwith a cake")}, {}, {Description: str("  ")}, {Description: str("The release notes")}}},
			want: source.Item{ID: "https://a.example/s/9", URL: "https://a.example/s/9", PublishedAt: time.Date(2024, 6, 1, 10, 0, 0, 0, time.UTC),
				Text:  "Release day!\n\nRead it:\nhttps://go.dev/blog/go1.24\n\nGo 1.24 is released\nA gopher\nwith a cake\nThe release notes",
				Links: []string{"https://go.dev/blog/go1.24"}},
		},
		{
			name: "a status that arrives edited keeps its edit time; media alone make its text",
			st: status{ID: "10", URI: "https://a.example/s/10", CreatedAt: "2024-06-01T10:00:00Z", EditedAt: str("2024-06-01T10:05:00.123Z"),
				SpoilerText: "cw", Media: []mediaJSON{{Description: str("a cat")}}},
			want: source.Item{ID: "https://a.example/s/10", URL: "https://a.example/s/10", PublishedAt: time.Date(2024, 6, 1, 10, 0, 0, 0, time.UTC),
				EditedAt: time.Date(2024, 6, 1, 10, 5, 0, 123e6, time.UTC), Text: "cw\n\na cat"},
		},
		{
			name: "future date and unsafe url are bounded",
			st: status{ID: "4", URI: "tag:a.example,2024:objectId=3", URL: str("javascript:alert(1)"), CreatedAt: "2999-01-01T00:00:00Z",
				Content: "x", Language: str("not a code!"), Account: &account{Acct: "a", URI: "javascript:alert(1)"}},
			want: source.Item{ID: "tag:a.example,2024:objectId=3", Author: "a@a.example", Text: "x", PublishedAt: now},
		},
		{
			name:   "reply to a thread's first status",
			st:     status{ID: "5", URI: "https://a.example/s/5", InReplyToID: str("10"), CreatedAt: "2024-06-01T10:00:00Z"},
			parent: root,
			want: source.Item{ID: "https://a.example/s/5", URL: "https://a.example/s/5", PublishedAt: time.Date(2024, 6, 1, 10, 0, 0, 0, time.UTC),
				ReplyTo: "https://a.example/users/x/statuses/10", ThreadID: "https://a.example/users/x/statuses/10"},
		},
		{
			name:   "reply to a reply keeps the thread's first status",
			st:     status{ID: "6", URI: "https://a.example/s/6", InReplyToID: str("11"), CreatedAt: "2024-06-01T10:00:00Z"},
			parent: inThread,
			want: source.Item{ID: "https://a.example/s/6", URL: "https://a.example/s/6", PublishedAt: time.Date(2024, 6, 1, 10, 0, 0, 0, time.UTC),
				ReplyTo: "https://b.example/users/y/statuses/77", ThreadID: "https://a.example/users/x/statuses/10"},
		},
		{
			name:   "reply to a reply whose thread is unknown names its parent only",
			st:     status{ID: "7", URI: "https://a.example/s/7", InReplyToID: str("78"), CreatedAt: "2024-06-01T10:00:00Z"},
			parent: orphan,
			want: source.Item{ID: "https://a.example/s/7", URL: "https://a.example/s/7", PublishedAt: time.Date(2024, 6, 1, 10, 0, 0, 0, time.UTC),
				ReplyTo: "https://b.example/users/y/statuses/78"},
		},
		{
			name: "reply to an unknown status has no reply_to, never an instance-local address",
			st:   status{ID: "8", URI: "https://a.example/s/8", InReplyToID: str("99"), CreatedAt: "2024-06-01T10:00:00Z"},
			want: source.Item{ID: "https://a.example/s/8", URL: "https://a.example/s/8", PublishedAt: time.Date(2024, 6, 1, 10, 0, 0, 0, time.UTC)},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := statusItem(&tc.st, "a.example", tc.parent, now)
			if err != nil {
				t.Fatal(err)
			}
			tc.want.FetchedAt = now
			if got.ID != tc.want.ID || got.URL != tc.want.URL || got.Author != tc.want.Author || got.AuthorID != tc.want.AuthorID ||
				got.Text != tc.want.Text || !got.PublishedAt.Equal(tc.want.PublishedAt) || got.Lang != tc.want.Lang ||
				got.ReplyTo != tc.want.ReplyTo || got.ThreadID != tc.want.ThreadID || !slices.Equal(got.Links, tc.want.Links) ||
				!got.FetchedAt.Equal(now) || !got.EditedAt.Equal(tc.want.EditedAt) {
				t.Fatalf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// TestStatusItem_Engagement reads a status's reblogs and favourites off
// the wire: a reblog carries the counts of the status it shares (the boost
// itself has none), and a status without counts has unknown engagement,
// not zero.
func TestStatusItem_Engagement(t *testing.T) {
	now := time.Date(2024, 6, 1, 12, 0, 0, 0, time.UTC)
	orig := map[string]any{"id": "1", "uri": "https://a.example/users/x/statuses/1", "content": "<p>#golang</p>",
		"reblogs_count": 12, "favourites_count": 40, "replies_count": 3}
	cases := []struct {
		name string
		st   map[string]any
		want *api.Engagement
	}{
		{"counts", orig, &api.Engagement{Reposts: 12, Likes: 40}},
		{"a new status has zero, not unknown", map[string]any{"id": "2", "uri": "https://a.example/s/2", "content": "x",
			"reblogs_count": 0, "favourites_count": 0}, &api.Engagement{}},
		{"a reblog carries the shared status's counts", map[string]any{"id": "3", "uri": "https://b.example/boost/3",
			"reblogs_count": 0, "favourites_count": 0, "reblog": orig}, &api.Engagement{Reposts: 12, Likes: 40}},
		{"no counts", map[string]any{"id": "4", "uri": "https://a.example/s/4", "content": "x"}, nil},
		{"one count", map[string]any{"id": "5", "uri": "https://a.example/s/5", "content": "x", "reblogs_count": 2}, nil},
		{"a count that is not a number", map[string]any{"id": "6", "uri": "https://a.example/s/6", "content": "x",
			"reblogs_count": "many", "favourites_count": -1}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, err := decodeFrame(event("update", tc.st))
			if err != nil {
				t.Fatal(err)
			}
			it, err := statusItem(f.status, "a.example", nil, now)
			if err != nil {
				t.Fatal(err)
			}
			if (it.Engagement == nil) != (tc.want == nil) || it.Engagement != nil && *it.Engagement != *tc.want {
				t.Fatalf("engagement %+v, want %+v", it.Engagement, tc.want)
			}
		})
	}
}

func TestStatusItem_RefusesStatusesWithoutIdentity(t *testing.T) {
	for _, st := range []status{
		{ID: "", URI: "https://a.example/s/1"},
		{ID: "1", URI: "  "},
		{ID: strings.Repeat("9", maxLocalIDBytes+1), URI: "https://a.example/s/1"},
	} {
		if _, err := statusItem(&st, "a.example", nil, time.Now()); !errors.Is(err, ErrMalformed) {
			t.Errorf("status %+v: err %v, want ErrMalformed", st, err)
		}
	}
	long := status{ID: "1", URI: "https://a.example/" + strings.Repeat("x", 400), Content: strings.Repeat("é", maxTextBytes)}
	it, err := statusItem(&long, "a.example", nil, time.Now())
	if err != nil || !strings.HasPrefix(it.ID, "sha256:") || len(it.Text) > maxTextBytes {
		t.Fatalf("long status: %v, id %q, %d bytes of text", err, it.ID, len(it.Text))
	}
}

func TestNeeds_HashtagStreamsOnlyWhenEveryBranchNeedsATag(t *testing.T) {
	cases := []struct {
		query  []string
		tags   []string
		public bool
	}{
		{[]string{"#golang"}, []string{"golang"}, false},
		{[]string{"#GoLang OR #rust"}, []string{"golang", "rust"}, false},
		{[]string{"#golang", "#rust"}, []string{"golang", "rust"}, false},
		{[]string{"#golang release"}, []string{"golang"}, false},
		{[]string{"#golang -#java lang:en"}, []string{"golang"}, false},
		{[]string{"(#go OR #golang) (#rust OR #zig OR #c)"}, []string{"go", "golang"}, false},
		{[]string{"NOT (-#golang OR spam)"}, []string{"golang"}, false},
		{[]string{"golang"}, nil, true},
		{[]string{"#golang OR golang"}, nil, true},
		{[]string{"#golang", "rust"}, nil, true},
		{[]string{"@gopher"}, nil, true},
		{[]string{"from:gopher"}, nil, true},
		{[]string{`"new release"`}, nil, true},
		{[]string{"#2024"}, nil, true},
		// A NEAR needs both operands, as an AND: a tag on either side
		// is enough; a negated NEAR or a prefix carries no tag.
		{[]string{"#golang NEAR/3 release"}, []string{"golang"}, false},
		{[]string{"(#go OR #golang) NEAR/1f (#rust OR x)"}, []string{"go", "golang"}, false},
		{[]string{"#golang -(#golang NEAR/1 spam)"}, []string{"golang"}, false},
		{[]string{"kube* NEAR/2 deploy"}, nil, true},
		{[]string{"#k8s OR kube*"}, nil, true},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.query, ","), func(t *testing.T) {
			q, err := query.ParseList(tc.query)
			if err != nil {
				t.Fatal(err)
			}
			tags, public, err := needs(q)
			if err != nil {
				t.Fatal(err)
			}
			if public != tc.public || !slices.Equal(tags, tc.tags) {
				t.Fatalf("got tags %v public %v, want %v %v", tags, public, tc.tags, tc.public)
			}
		})
	}
	if _, _, err := needs(nil); err == nil {
		t.Fatal("an empty query was accepted")
	}
}

func TestStreamingBase_OnlyTheInstanceHostGetsTheToken(t *testing.T) {
	base, _ := url.Parse("https://mastodon.example")
	cases := []struct {
		advertised string
		want       string
		ok         bool
	}{
		{"", "wss://mastodon.example", true},
		{"wss://streaming.mastodon.example", "wss://streaming.mastodon.example", true},
		{"https://mastodon.example/", "wss://mastodon.example", true},
		{"wss://Mastodon.Example:4000", "wss://mastodon.example:4000", true},
		{"ws://streaming.mastodon.example", "wss://mastodon.example", false},
		{"wss://evil.example", "wss://mastodon.example", false},
		{"wss://notmastodon.example", "wss://mastodon.example", false},
		{"wss://user:pw@mastodon.example", "wss://mastodon.example", false},
		{"ftp://mastodon.example", "wss://mastodon.example", false},
		{"::not a url", "wss://mastodon.example", false},
	}
	for _, tc := range cases {
		got, ok := streamingBase(tc.advertised, base)
		if got.String() != tc.want || ok != tc.ok {
			t.Errorf("%q: got %s %v, want %s %v", tc.advertised, got, ok, tc.want, tc.ok)
		}
	}
}

func TestStatusCache_ForgetsTheOldestBeyondItsSize(t *testing.T) {
	c := newStatusCache(3)
	for _, id := range []string{"1", "2", "3", "2", "4", "5"} {
		c.put(id, link{uri: "u" + id})
	}
	for id, want := range map[string]bool{"1": false, "2": false, "3": true, "4": true, "5": true} {
		if _, ok := c.get(id); ok != want {
			t.Errorf("id %s kept %v, want %v", id, ok, want)
		}
	}
	if len(c.links) != 3 {
		t.Fatalf("%d links kept, want 3", len(c.links))
	}
}
