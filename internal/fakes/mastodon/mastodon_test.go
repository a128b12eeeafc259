package mastodon

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
)

const (
	waitTimeout = 5 * time.Second
	// quietWait is how long a test waits to see that nothing arrives.
	quietWait = 150 * time.Millisecond
	testToken = "good"
)

var bearer = http.Header{"Authorization": {"Bearer " + testToken}}

func wsURL(s *Server) string { return "ws" + strings.TrimPrefix(s.URL(), "http") + "/api/v1/streaming" }

type event struct {
	Stream  []string `json:"stream"`
	Event   string   `json:"event"`
	Payload string   `json:"payload"`
	Error   string   `json:"error"`
	Status  int      `json:"status"`
}

// client is a test's WebSocket connection with a reader that queues what
// arrives (coder/websocket closes a connection whose read is cancelled, so
// reads with a deadline cannot tell "nothing came").
type client struct {
	*websocket.Conn
	events chan event
}

func dial(t *testing.T, s *Server, header http.Header) *client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	c, _, err := websocket.Dial(ctx, wsURL(s), &websocket.DialOptions{HTTPHeader: header})
	if err != nil {
		t.Fatal(err)
	}
	cl := &client{Conn: c, events: make(chan event, 64)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			_, b, err := c.Read(context.Background())
			if err != nil {
				return
			}
			var ev event
			if err := json.Unmarshal(b, &ev); err != nil {
				t.Errorf("%s: %v", b, err)
				return
			}
			cl.events <- ev
		}
	}()
	t.Cleanup(func() { c.CloseNow(); <-done })
	return cl
}

func send(t *testing.T, c *client, msg string) {
	t.Helper()
	if err := c.Write(context.Background(), websocket.MessageText, []byte(msg)); err != nil {
		t.Fatal(err)
	}
}

func next(t *testing.T, c *client) event {
	t.Helper()
	ev, ok := within(c, waitTimeout)
	if !ok {
		t.Fatal("no event")
	}
	return ev
}

// within returns the next event, or reports none within d.
func within(c *client, d time.Duration) (event, bool) {
	select {
	case ev := <-c.events:
		return ev, true
	case <-time.After(d):
		return event{}, false
	}
}

// subscribed waits until the server has every connection's subscriptions
// in place: want lists each connection's, sorted, in any order.
func subscribed(t *testing.T, s *Server, want ...[]string) {
	t.Helper()
	slices.SortFunc(want, slices.Compare)
	testkit.WaitFor(t, waitTimeout, "subscriptions", func() bool {
		subs := s.Subscriptions()
		slices.SortFunc(subs, slices.Compare)
		return slices.EqualFunc(subs, want, slices.Equal)
	})
}

func TestServer_RefusedHandshakeIsAnEmptyTextPlain401WithTheReasonInAHeader(t *testing.T) {
	s := Start(t, Options{Token: testToken})
	cases := []struct {
		name    string
		url     string
		header  http.Header
		ok      bool
		message string
	}{
		{"bearer", wsURL(s), bearer, true, ""},
		{"query parameter", wsURL(s) + "?access_token=" + testToken, nil, true, ""},
		{"wrong bearer", wsURL(s), http.Header{"Authorization": {"Bearer bad"}}, false, "Invalid access token"},
		{"none", wsURL(s), nil, false, "Missing access token"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
			defer cancel()
			c, resp, err := websocket.Dial(ctx, tc.url, &websocket.DialOptions{HTTPHeader: tc.header})
			if tc.ok {
				if err != nil {
					t.Fatal(err)
				}
				c.CloseNow()
				return
			}
			if err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("got err %v, resp %v; want 401", err, resp)
			}
			body, _ := io.ReadAll(resp.Body)
			if got := resp.Header.Get("X-Error-Message"); got != tc.message || resp.Header.Get("Content-Type") != "text/plain" || len(body) != 0 {
				t.Fatalf("X-Error-Message %q, Content-Type %q, body %q; want %q, text/plain, empty",
					got, resp.Header.Get("Content-Type"), body, tc.message)
			}
		})
	}
	if s.Rejected() != 2 {
		t.Errorf("rejected %d, want 2", s.Rejected())
	}
}

func TestServer_FansOutAsMastodonDoes(t *testing.T) {
	s := Start(t, Options{Token: testToken})
	pub, tag, user := dial(t, s, bearer), dial(t, s, bearer), dial(t, s, bearer)
	send(t, pub, `{"type":"subscribe","stream":"public"}`)
	send(t, tag, `{"type":"subscribe","stream":"hashtag","tag":"GoLang"}`)
	send(t, user, `{"type":"subscribe","stream":"user"}`)
	subscribed(t, s, []string{"hashtag:golang"}, []string{"public"}, []string{"user"})
	s.FollowAccount("booster")
	s.FollowTag("golang")

	root := s.Post(Status{Acct: "alice", Content: "<p>#golang</p>", Tags: []string{"Golang"}})
	cases := []struct {
		name             string
		st               Status
		pub, tag, onUser bool
	}{
		{"public status without tags", Status{Content: "<p>hi</p>"}, true, false, false},
		{"reply to another account stays off public", Status{Acct: "bob", Content: "<p>#golang</p>", Tags: []string{"golang"}, InReplyToID: root.ID}, false, true, true},
		{"reply to oneself reaches public", Status{Acct: "alice", Content: "<p>#golang more</p>", Tags: []string{"golang"}, InReplyToID: root.ID}, true, true, true},
		{"reblog never reaches public or hashtag streams", Status{Acct: "booster", Reblog: &root}, false, false, true},
		{"unlisted stays off public, hashtag and tag followers", Status{Content: "<p>#golang</p>", Tags: []string{"golang"}, Visibility: VisibilityUnlisted}, false, false, false},
		{"followed account's private status reaches home", Status{Acct: "booster", Content: "<p>private</p>", Visibility: VisibilityPrivate}, false, false, true},
	}
	// Drain what root brought: public, hashtag, and home through the
	// followed tag.
	for _, c := range []*client{pub, tag, user} {
		ev := next(t, c)
		if ev.Event != "update" || !strings.Contains(ev.Payload, root.URI) {
			t.Fatalf("root: got %+v", ev)
		}
		if c == tag && !slices.Equal(ev.Stream, []string{"hashtag", "GoLang"}) {
			t.Fatalf("stream %v: a hashtag frame names the tag as the client subscribed it", ev.Stream)
		}
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := s.Post(tc.st)
			uri := st.URI
			for _, w := range []struct {
				c    *client
				want bool
				name string
			}{{pub, tc.pub, "public"}, {tag, tc.tag, "hashtag"}, {user, tc.onUser, "user"}} {
				ev, got := within(w.c, quietWait)
				if got != w.want || (got && !strings.Contains(ev.Payload, uri)) {
					t.Errorf("%s stream: got %v %+v, want an update: %v", w.name, got, ev, w.want)
				}
			}
		})
	}
}

func TestServer_StatusWithTwoFollowedTagsReachesHomeTwice(t *testing.T) {
	s := Start(t, Options{Token: testToken})
	user := dial(t, s, bearer)
	send(t, user, `{"type":"subscribe","stream":"user"}`)
	subscribed(t, s, []string{"user"})
	s.FollowTag("go")
	s.FollowTag("golang")
	st := s.Post(Status{Content: "<p>#go #golang</p>", Tags: []string{"go", "golang"}})
	for range 2 {
		if ev := next(t, user); ev.Event != "update" || !slices.Equal(ev.Stream, []string{"user"}) || !strings.Contains(ev.Payload, st.URI) {
			t.Fatalf("got %+v", ev)
		}
	}
	if ev, ok := within(user, quietWait); ok {
		t.Fatalf("a third event %+v", ev)
	}
}

func TestServer_DisabledFeedsCarryOnlyDeletes(t *testing.T) {
	s := Start(t, Options{Token: testToken, TimelinesAccess: ClosedLiveFeeds})
	pub, tag := dial(t, s, bearer), dial(t, s, bearer)
	send(t, pub, `{"type":"subscribe","stream":"public"}`)
	send(t, tag, `{"type":"subscribe","stream":"hashtag","tag":"golang"}`)
	subscribed(t, s, []string{"hashtag:golang"}, []string{"public"})
	local := s.Post(Status{Acct: "alice", Content: "<p>#golang</p>", Tags: []string{"golang"}})
	remote := s.Post(Status{Acct: "bob@elsewhere.example", Content: "<p>#golang</p>", Tags: []string{"golang"}})
	// Local hashtag feeds cannot be disabled: the local status reaches
	// the hashtag stream, the remote one does not.
	if ev := next(t, tag); ev.Event != "update" || !strings.Contains(ev.Payload, local.URI) {
		t.Fatalf("hashtag stream got %+v", ev)
	}
	s.Delete(local)
	s.Delete(remote)
	for _, id := range []string{local.ID, remote.ID} {
		if ev := next(t, pub); ev.Event != "delete" || ev.Payload != id {
			t.Fatalf("public stream got %+v, want the delete of %s", ev, id)
		}
	}
	for _, id := range []string{local.ID, remote.ID} {
		if ev := next(t, tag); ev.Event != "delete" || ev.Payload != id {
			t.Fatalf("hashtag stream got %+v, want the delete of %s", ev, id)
		}
	}

	// A role that may view feeds reads them all the same.
	v := Start(t, Options{Token: testToken, TimelinesAccess: ClosedLiveFeeds, ViewFeeds: true})
	c := dial(t, v, bearer)
	send(t, c, `{"type":"subscribe","stream":"public"}`)
	subscribed(t, v, []string{"public"})
	st := v.Post(Status{Content: "<p>hi</p>"})
	if ev := next(t, c); ev.Event != "update" || !strings.Contains(ev.Payload, st.URI) {
		t.Fatalf("got %+v", ev)
	}
}

func TestServer_SubscriptionErrorsAreMastodons(t *testing.T) {
	cases := []struct {
		name   string
		scopes []string
		msg    string
		want   string
		status int
	}{
		{"unknown stream", nil, `{"type":"subscribe","stream":"public:bogus"}`, "Unknown stream type", http.StatusBadRequest},
		{"hashtag without a tag", nil, `{"type":"subscribe","stream":"hashtag"}`, "Missing tag name parameter", http.StatusBadRequest},
		{"token without read:statuses", []string{"write"}, `{"type":"subscribe","stream":"public"}`, "Access token does not have the required scopes", http.StatusUnauthorized},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := Start(t, Options{Token: testToken, Scopes: tc.scopes})
			c := dial(t, s, bearer)
			send(t, c, `not json`)
			send(t, c, `{"type":"bogus","stream":"public"}`)
			send(t, c, tc.msg)
			if ev := next(t, c); ev.Error != tc.want || ev.Status != tc.status {
				t.Fatalf("got %+v, want error %q status %d", ev, tc.want, tc.status)
			}
			if ev, ok := within(c, quietWait); ok {
				t.Fatalf("another event %+v: invalid JSON and unknown types are ignored", ev)
			}
		})
	}
}

// rest calls the server's REST API with the token.
func rest(t *testing.T, s *Server, method, path string, out any) (int, http.Header) {
	t.Helper()
	req, _ := http.NewRequest(method, s.URL()+path, nil)
	req.Header = bearer.Clone()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
	}
	return resp.StatusCode, resp.Header
}

func TestServer_TagFollowsAndFollowedTagsPages(t *testing.T) {
	s := Start(t, Options{Token: testToken})
	var tag struct {
		Name      string `json:"name"`
		Following *bool  `json:"following"`
	}
	for _, name := range []string{"a", "b", "c"} {
		if code, _ := rest(t, s, http.MethodPost, "/api/v1/tags/"+name+"/follow", &tag); code != http.StatusOK || tag.Following == nil || !*tag.Following {
			t.Fatalf("follow %s: %d %+v", name, code, tag)
		}
	}
	rest(t, s, http.MethodPost, "/api/v1/tags/a/follow", &tag) // idempotent
	if code, _ := rest(t, s, http.MethodGet, "/api/v1/tags/B", &tag); code != http.StatusOK || !*tag.Following {
		t.Fatalf("show B: %d %+v", code, tag)
	}
	var page []struct {
		Name string `json:"name"`
	}
	_, h := rest(t, s, http.MethodGet, "/api/v1/followed_tags?limit=2", &page)
	if len(page) != 2 || page[0].Name != "c" || page[1].Name != "b" || !strings.Contains(h.Get("Link"), `rel="next"`) {
		t.Fatalf("first page %+v, Link %q", page, h.Get("Link"))
	}
	next := strings.TrimPrefix(strings.SplitN(h.Get("Link"), ">", 2)[0], "<"+s.URL())
	_, h = rest(t, s, http.MethodGet, next, &page)
	if len(page) != 1 || page[0].Name != "a" || h.Get("Link") != "" {
		t.Fatalf("second page %+v, Link %q", page, h.Get("Link"))
	}
	rest(t, s, http.MethodPost, "/api/v1/tags/b/unfollow", &tag)
	if got := s.FollowedTags(); !slices.Equal(got, []string{"a", "c"}) {
		t.Fatalf("followed %v", got)
	}
	if code, _ := rest(t, s, http.MethodPost, "/api/v1/tags/12345/follow", nil); code != http.StatusNotFound {
		t.Fatalf("a tag of digits only: %d, want 404", code)
	}

	ro := Start(t, Options{Token: testToken, Scopes: []string{"read"}})
	var e struct {
		Error string `json:"error"`
	}
	if code, _ := rest(t, ro, http.MethodPost, "/api/v1/tags/a/follow", &e); code != http.StatusForbidden || e.Error != errScopes {
		t.Fatalf("read-only token: %d %+v", code, e)
	}
}

func TestServer_ContextListsAncestorsFromTheThreadsFirstStatus(t *testing.T) {
	s := Start(t, Options{Token: testToken})
	root := s.Remember(Status{Acct: "alice", Content: "<p>root</p>"})
	mid := s.Remember(Status{Acct: "bob", Content: "<p>mid</p>", InReplyToID: root.ID})
	leaf := s.Post(Status{Acct: "carol", Content: "<p>leaf</p>", InReplyToID: mid.ID})
	var ctx struct {
		Ancestors   []struct{ URI string } `json:"ancestors"`
		Descendants []struct{ URI string } `json:"descendants"`
	}
	if code, _ := rest(t, s, http.MethodGet, "/api/v1/statuses/"+leaf.ID+"/context", &ctx); code != http.StatusOK {
		t.Fatalf("context: %d", code)
	}
	if len(ctx.Ancestors) != 2 || ctx.Ancestors[0].URI != root.URI || ctx.Ancestors[1].URI != mid.URI || len(ctx.Descendants) != 0 {
		t.Fatalf("context %+v", ctx)
	}
	rest(t, s, http.MethodGet, "/api/v1/statuses/"+root.ID+"/context", &ctx)
	if len(ctx.Ancestors) != 0 || len(ctx.Descendants) != 2 {
		t.Fatalf("root's context %+v", ctx)
	}
	if code, _ := rest(t, s, http.MethodGet, "/api/v1/statuses/404/context", nil); code != http.StatusNotFound {
		t.Fatalf("unknown status: %d", code)
	}
}

func TestServer_InstanceDocumentsAdvertiseStreamingAndTimelinesAccess(t *testing.T) {
	cases := []struct {
		version string
		access  bool
	}{{"4.5.0", true}, {"4.6.0-nightly.2026-02-14", true}, {"4.4.3", false}}
	for _, tc := range cases {
		t.Run(tc.version, func(t *testing.T) {
			s := Start(t, Options{StreamingURL: "wss://streaming.example", Version: tc.version, TimelinesAccess: ClosedLiveFeeds})
			var v1 struct {
				URLs struct {
					StreamingAPI string `json:"streaming_api"`
				} `json:"urls"`
			}
			var v2 struct {
				Configuration struct {
					URLs struct {
						Streaming string `json:"streaming"`
					} `json:"urls"`
					TimelinesAccess *struct {
						LiveFeeds struct{ Local, Remote string } `json:"live_feeds"`
					} `json:"timelines_access"`
				} `json:"configuration"`
			}
			rest(t, s, http.MethodGet, "/api/v1/instance", &v1)
			rest(t, s, http.MethodGet, "/api/v2/instance", &v2)
			if v1.URLs.StreamingAPI != "wss://streaming.example" || v2.Configuration.URLs.Streaming != "wss://streaming.example" {
				t.Errorf("advertised %q and %q", v1.URLs.StreamingAPI, v2.Configuration.URLs.Streaming)
			}
			ta := v2.Configuration.TimelinesAccess
			if (ta != nil) != tc.access || (ta != nil && (ta.LiveFeeds.Local != AccessDisabled || ta.LiveFeeds.Remote != AccessDisabled)) {
				t.Errorf("timelines_access %+v, want present: %v", ta, tc.access)
			}
		})
	}
}

func TestServer_PostJSONDeliversARecordedEntityVerbatim(t *testing.T) {
	s := Start(t, Options{Token: testToken})
	c := dial(t, s, bearer)
	send(t, c, `{"type":"subscribe","stream":"hashtag","tag":"caturday"}`)
	subscribed(t, s, []string{"hashtag:caturday"})
	entity := `{"id":"9","uri":"https://x.example/s/9","visibility":"public","in_reply_to_id":null,"account":{"id":"5","username":"x","acct":"x@x.example"},"tags":[{"name":"Caturday"}],"content":"<p>#Caturday</p>"}`
	if err := s.PostJSON([]byte(entity)); err != nil {
		t.Fatal(err)
	}
	if ev := next(t, c); ev.Payload != entity {
		t.Fatalf("payload %q, want the entity as recorded", ev.Payload)
	}
	if err := s.PostJSON([]byte(`{"id":"9"}`)); err == nil {
		t.Fatal("an entity without uri or account was taken")
	}
}

func TestServer_CutRefusesHandshakesForAWhile(t *testing.T) {
	s := Start(t, Options{})
	dial(t, s, bearer)
	testkit.WaitFor(t, waitTimeout, "connection", func() bool { return s.Open() == 1 })
	if n := s.Cut(time.Hour); n != 1 {
		t.Fatalf("cut %d connections, want 1", n)
	}
	testkit.WaitFor(t, waitTimeout, "no connection", func() bool { return s.Open() == 0 })
	_, resp, err := websocket.Dial(context.Background(), wsURL(s), &websocket.DialOptions{HTTPHeader: bearer})
	if err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("got err %v, resp %v; want 503", err, resp)
	}
}
