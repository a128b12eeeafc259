package mastodon

import (
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// timeline reads one page of a timeline and returns its statuses' ids and
// its Link header's next and prev paths (below the server's URL).
func timeline(t *testing.T, s *Server, path string) (ids []string, next, prev string) {
	t.Helper()
	var page []struct {
		ID string `json:"id"`
	}
	code, h := rest(t, s, http.MethodGet, path, &page)
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d", path, code)
	}
	for _, st := range page {
		ids = append(ids, st.ID)
	}
	for _, m := range regexp.MustCompile(`<([^>]+)>; rel="(next|prev)"`).FindAllStringSubmatch(h.Get("Link"), -1) {
		p := strings.TrimPrefix(m[1], s.URL())
		if m[2] == "next" {
			next = p
		} else {
			prev = p
		}
	}
	return ids, next, prev
}

// TestServer_TimelinesPageAsMastodonDoes: pages are newest first;
// max_id pages back, since_id cuts off, min_id gives the statuses right
// after it (still newest first within the page); the Link header names
// the next page (max_id of the last) and the previous one (min_id of the
// first), keeping limit; an empty page has no Link header.
func TestServer_TimelinesPageAsMastodonDoes(t *testing.T) {
	s := Start(t, Options{Token: testToken})
	var ids []string
	for range 7 {
		ids = append(ids, s.Post(Status{Acct: "alice", Content: "<p>#go news</p>", Tags: []string{"go"}}).ID)
	}
	rev := slices.Clone(ids)
	slices.Reverse(rev)
	cases := []struct {
		name, path string
		want       []string
	}{
		{"newest first", "/api/v1/timelines/public?limit=3", rev[:3]},
		{"max_id", "/api/v1/timelines/public?limit=3&max_id=" + ids[4], []string{ids[3], ids[2], ids[1]}},
		{"since_id cuts off the newest", "/api/v1/timelines/public?limit=3&since_id=" + ids[1], []string{ids[6], ids[5], ids[4]}},
		{"min_id gives what follows it", "/api/v1/timelines/public?limit=3&min_id=" + ids[1], []string{ids[4], ids[3], ids[2]}},
		{"tag", "/api/v1/timelines/tag/Go?limit=2", rev[:2]},
		{"limit capped at 40, default 20", "/api/v1/timelines/public?limit=-500", rev},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got, _, _ := timeline(t, s, tc.path); !slices.Equal(got, tc.want) {
				t.Fatalf("ids %v, want %v", got, tc.want)
			}
		})
	}
	// Walking forward from min_id with rel="prev" reads every later
	// status once, then an empty page without a Link header.
	var walked []string
	path := "/api/v1/timelines/public?limit=2&min_id=" + ids[0]
	for range 10 {
		got, next, prev := timeline(t, s, path)
		if len(got) == 0 {
			if next != "" || prev != "" {
				t.Fatalf("an empty page has Link next %q prev %q", next, prev)
			}
			break
		}
		if !strings.Contains(prev, "limit=2") || !strings.Contains(next, "max_id="+got[len(got)-1]) {
			t.Fatalf("Link next %q prev %q", next, prev)
		}
		walked = append(walked, got...)
		path = prev
	}
	slices.Sort(walked)
	if !slices.Equal(walked, ids[1:]) {
		t.Fatalf("walked %v, want %v", walked, ids[1:])
	}
}

// TestServer_TimelinesHoldWhatTheStreamsCarry: the public timeline has no
// reblogs, replies to others or non-public statuses; a tag's has its
// public statuses; the home timeline the token account's, and needs a
// token with read:statuses; a disabled feed shows nothing of what it
// disables.
func TestServer_TimelinesHoldWhatTheStreamsCarry(t *testing.T) {
	s := Start(t, Options{Token: testToken})
	s.FollowAccount("bob")
	pub := s.Post(Status{Acct: "alice", Content: "<p>#go hi</p>", Tags: []string{"go"}})
	private := s.Post(Status{Acct: "alice", Content: "<p>#go secret</p>", Tags: []string{"go"}, Visibility: VisibilityPrivate})
	reply := s.Post(Status{Acct: "carol", Content: "<p>#go to you</p>", Tags: []string{"go"}, InReplyToID: pub.ID})
	boost := s.Post(Status{Acct: "bob", Reblog: &pub})
	public, _, _ := timeline(t, s, "/api/v1/timelines/public")
	if !slices.Equal(public, []string{pub.ID}) {
		t.Errorf("public %v, want %s alone (not %s private, %s a reply, %s a reblog)", public, pub.ID, private.ID, reply.ID, boost.ID)
	}
	if tag, _, _ := timeline(t, s, "/api/v1/timelines/tag/go"); !slices.Equal(tag, []string{reply.ID, pub.ID}) {
		t.Errorf("tag %v, want %v", tag, []string{reply.ID, pub.ID})
	}
	if home, _, _ := timeline(t, s, "/api/v1/timelines/home"); !slices.Equal(home, []string{boost.ID}) {
		t.Errorf("home %v, want the followed account's reblog %s", home, boost.ID)
	}
	req, _ := http.NewRequest(http.MethodGet, s.URL()+"/api/v1/timelines/home", nil)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("home without a token: %v %v", resp, err)
	}

	closed := Start(t, Options{Token: testToken, TimelinesAccess: ClosedLiveFeeds})
	closed.Post(Status{Acct: "alice", Content: "<p>#go hi</p>", Tags: []string{"go"}})
	if got, _, _ := timeline(t, closed, "/api/v1/timelines/public"); len(got) != 0 {
		t.Errorf("closed live feeds: public %v, want nothing", got)
	}
}
