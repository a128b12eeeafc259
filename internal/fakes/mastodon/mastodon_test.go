package mastodon

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
)

const waitTimeout = 5 * time.Second

func dial(t *testing.T, s *Server, header http.Header) *websocket.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(s.URL(), "http")+"/api/v1/streaming", &websocket.DialOptions{HTTPHeader: header})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.CloseNow() })
	return c
}

func send(t *testing.T, c *websocket.Conn, msg string) {
	t.Helper()
	if err := c.Write(context.Background(), websocket.MessageText, []byte(msg)); err != nil {
		t.Fatal(err)
	}
}

type event struct {
	Stream  []string `json:"stream"`
	Event   string   `json:"event"`
	Payload string   `json:"payload"`
	Error   string   `json:"error"`
	Status  int      `json:"status"`
}

func next(t *testing.T, c *websocket.Conn) event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	_, b, err := c.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ev event
	if err := json.Unmarshal(b, &ev); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return ev
}

func TestServer_TokenIsCheckedAtTheHandshake(t *testing.T) {
	s := Start(t, Options{Token: "good"})
	ws := "ws" + strings.TrimPrefix(s.URL(), "http") + "/api/v1/streaming"
	cases := []struct {
		name   string
		url    string
		header http.Header
		ok     bool
	}{
		{"bearer", ws, http.Header{"Authorization": {"Bearer good"}}, true},
		{"query parameter", ws + "?access_token=good", nil, true},
		{"wrong bearer", ws, http.Header{"Authorization": {"Bearer bad"}}, false},
		{"none", ws, nil, false},
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
		})
	}
	if s.Rejected() != 2 {
		t.Errorf("rejected %d, want 2", s.Rejected())
	}
}

func TestServer_PostFansOutToSubscribedStreams(t *testing.T) {
	s := Start(t, Options{})
	pub, tag := dial(t, s, nil), dial(t, s, nil)
	send(t, pub, `{"type":"subscribe","stream":"public"}`)
	send(t, tag, `{"type":"subscribe","stream":"hashtag","tag":"GoLang"}`)
	testkit.WaitFor(t, waitTimeout, "subscriptions", func() bool {
		// The server numbers connections as it accepts them, which
		// need not be the order they were dialled in.
		subs := s.Subscriptions()
		slices.SortFunc(subs, slices.Compare)
		return slices.EqualFunc(subs, [][]string{{"hashtag:golang"}, {"public"}}, slices.Equal)
	})
	s.Post(Status{Content: "<p>no tag</p>"})
	st := s.Post(Status{Content: "<p>#golang</p>", Tags: []string{"Golang"}})

	if ev := next(t, tag); ev.Event != "update" || !slices.Equal(ev.Stream, []string{"hashtag", "golang"}) || !strings.Contains(ev.Payload, st.URI) {
		t.Fatalf("hashtag connection got %+v", ev)
	}
	for _, want := range []string{"no tag", "#golang"} {
		ev := next(t, pub)
		var payload struct {
			Content string `json:"content"`
		}
		if err := json.Unmarshal([]byte(ev.Payload), &payload); err != nil || !strings.Contains(payload.Content, want) {
			t.Fatalf("public connection got %+v (%v), want %q", ev, err, want)
		}
	}

	send(t, tag, `{"type":"unsubscribe","stream":"hashtag","tag":"golang"}`)
	send(t, tag, `{"type":"subscribe","stream":"public:bogus"}`)
	if ev := next(t, tag); ev.Error != "Unknown stream type" || ev.Status != http.StatusBadRequest {
		t.Fatalf("got %+v, want an error event", ev)
	}
	testkit.WaitFor(t, waitTimeout, "unsubscription", func() bool {
		subs := s.Subscriptions()
		slices.SortFunc(subs, slices.Compare)
		return slices.EqualFunc(subs, [][]string{{}, {"public"}}, slices.Equal)
	})
}

func TestServer_InstanceDocumentsAdvertiseStreaming(t *testing.T) {
	s := Start(t, Options{StreamingURL: "wss://streaming.example"})
	for path, field := range map[string]func(map[string]any) any{
		"/api/v1/instance": func(m map[string]any) any { return m["urls"].(map[string]any)["streaming_api"] },
		"/api/v2/instance": func(m map[string]any) any {
			return m["configuration"].(map[string]any)["urls"].(map[string]any)["streaming"]
		},
	} {
		resp, err := http.Get(s.URL() + path)
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		err = json.NewDecoder(resp.Body).Decode(&doc)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if got := field(doc); got != "wss://streaming.example" {
			t.Errorf("%s advertises %v", path, got)
		}
	}
}

func TestServer_CutRefusesHandshakesForAWhile(t *testing.T) {
	s := Start(t, Options{})
	dial(t, s, nil)
	testkit.WaitFor(t, waitTimeout, "connection", func() bool { return s.Open() == 1 })
	if n := s.Cut(time.Hour); n != 1 {
		t.Fatalf("cut %d connections, want 1", n)
	}
	testkit.WaitFor(t, waitTimeout, "no connection", func() bool { return s.Open() == 0 })
	_, resp, err := websocket.Dial(context.Background(), "ws"+strings.TrimPrefix(s.URL(), "http")+"/api/v1/streaming", nil)
	if err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("got err %v, resp %v; want 503", err, resp)
	}
}
