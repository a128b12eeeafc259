package jetstream

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
)

// waitTimeout bounds every condition a test waits for.
const waitTimeout = 5 * time.Second

// received is the part of an event the tests look at.
type received struct {
	Kind   string `json:"kind"`
	TimeUS int64  `json:"time_us"`
	DID    string `json:"did"`
	Commit *struct {
		Collection string `json:"collection"`
		RKey       string `json:"rkey"`
		Record     struct {
			Text string `json:"text"`
		} `json:"record"`
	} `json:"commit"`
	Identity *struct {
		Handle string `json:"handle"`
	} `json:"identity"`
}

func dial(t *testing.T, url string) *websocket.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	c, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.CloseNow() })
	return c
}

func read(t *testing.T, c *websocket.Conn, n int) []received {
	t.Helper()
	var out []received
	for range n {
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		_, data, err := c.Read(ctx)
		cancel()
		if err != nil {
			t.Fatalf("after %d events: %v", len(out), err)
		}
		var ev received
		if err := json.Unmarshal(data, &ev); err != nil {
			t.Fatal(err)
		}
		out = append(out, ev)
	}
	return out
}

func TestServer_FiltersCollectionsAndReplaysFromCursor(t *testing.T) {
	s := Start(t, Options{})
	first := s.Publish(Post{DID: "did:plc:a", Text: "one"})
	s.Publish(Post{DID: "did:plc:a", Collection: "app.bsky.feed.like"})
	s.PublishIdentity("did:plc:a", "alice.test")
	s.Publish(Post{DID: "did:plc:b", Text: "two"})

	cases := []struct {
		name  string
		query string
		want  []string // kind/text of each event
	}{
		{"posts from the first", fmt.Sprintf("?wantedCollections=app.bsky.feed.post&cursor=%d", first.TimeUS), []string{"commit/one", "identity/alice.test", "commit/two"}},
		{"after the first", fmt.Sprintf("?wantedCollections=app.bsky.feed.post&cursor=%d", first.TimeUS+1), []string{"identity/alice.test", "commit/two"}},
		{"prefix", fmt.Sprintf("?wantedCollections=app.bsky.feed.*&cursor=%d", first.TimeUS), []string{"commit/one", "commit/", "identity/alice.test", "commit/two"}},
		{"one did", fmt.Sprintf("?wantedDids=did:plc:b&cursor=%d", first.TimeUS), []string{"commit/two"}},
		{"too old a cursor starts at the oldest", "?wantedCollections=app.bsky.feed.post&cursor=1000", []string{"commit/one", "identity/alice.test", "commit/two"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := dial(t, s.URL()+tc.query)
			var got []string
			var last int64
			for _, ev := range read(t, c, len(tc.want)) {
				if ev.TimeUS <= last {
					t.Errorf("time_us %d after %d", ev.TimeUS, last)
				}
				last = ev.TimeUS
				switch ev.Kind {
				case "commit":
					got = append(got, "commit/"+ev.Commit.Record.Text)
				case "identity":
					got = append(got, "identity/"+ev.Identity.Handle)
				}
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestServer_LiveEventsFollowTheReplay(t *testing.T) {
	s := Start(t, Options{})
	p := s.Publish(Post{DID: "did:plc:a", Text: "old"})
	c := dial(t, fmt.Sprintf("%s?wantedCollections=%s&cursor=%d", s.URL(), PostCollection, p.TimeUS))
	testkit.WaitFor(t, waitTimeout, "the connection", func() bool { return s.Conns() == 1 })
	s.Publish(Post{DID: "did:plc:a", Text: "new"})
	evs := read(t, c, 2)
	if evs[0].Commit.Record.Text != "old" || evs[1].Commit.Record.Text != "new" {
		t.Errorf("events %+v", evs)
	}
	if got := s.Accepted(); len(got) != 1 || got[0].Cursor != p.TimeUS || got[0].Collections[0] != PostCollection {
		t.Errorf("accepted %+v", got)
	}
}

func TestServer_ReplayWindowForgetsOldEvents(t *testing.T) {
	s := Start(t, Options{ReplayWindow: 50 * time.Millisecond})
	p := s.Publish(Post{DID: "did:plc:a", Text: "old"})
	testkit.WaitFor(t, waitTimeout, "the event to leave the window", func() bool { return s.Oldest() == 0 })
	s.Publish(Post{DID: "did:plc:a", Text: "new"})
	c := dial(t, fmt.Sprintf("%s?cursor=%d", s.URL(), p.TimeUS))
	if ev := read(t, c, 1)[0]; ev.Commit.Record.Text != "new" {
		t.Errorf("first replayed %+v, want the post inside the window", ev)
	}
}

func TestServer_CutRefusesForAWhile(t *testing.T) {
	s := Start(t, Options{})
	c := dial(t, s.URL())
	testkit.WaitFor(t, waitTimeout, "the connection", func() bool { return s.Conns() == 1 })
	s.Cut(200 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if _, _, err := c.Read(ctx); err == nil {
		t.Fatal("the connection survived the cut")
	}
	_, resp, err := websocket.Dial(ctx, s.URL(), nil)
	if err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("dial during the cut: %v %v", resp, err)
	}
	testkit.WaitFor(t, waitTimeout, "the cut to end", func() bool {
		c, _, err := websocket.Dial(ctx, s.URL(), nil)
		if err == nil {
			c.CloseNow()
		}
		return err == nil
	})
	if s.Refused() == 0 {
		t.Error("no refusal counted")
	}
}

func TestServer_StallSendsNothingAndRawFramesPass(t *testing.T) {
	s := Start(t, Options{})
	c := dial(t, s.URL())
	testkit.WaitFor(t, waitTimeout, "the connection", func() bool { return s.Conns() == 1 })
	s.Stall()
	s.Publish(Post{DID: "did:plc:a", Text: "held"})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	_, data, err := c.Read(ctx)
	cancel()
	if err == nil {
		t.Fatalf("a stalled server sent %s", data)
	}
	s.Unstall()
	c = dial(t, s.URL())
	testkit.WaitFor(t, waitTimeout, "the connection", func() bool { return s.Conns() >= 1 })
	s.SendRaw([]byte(`{"kind":`))
	ctx, cancel = context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if _, data, err := c.Read(ctx); err != nil || string(data) != `{"kind":` {
		t.Fatalf("raw frame: %q %v", data, err)
	}
}

func TestServer_RefusesCompression(t *testing.T) {
	s := Start(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	_, resp, err := websocket.Dial(ctx, s.URL()+"?compress=true", nil)
	if err == nil || resp == nil || resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("compressed dial: %v %v", resp, err)
	}
}

func TestTID_SortsLikeTime(t *testing.T) {
	a, b := tid(1725911162329308, 1), tid(1725911162329309, 0)
	if len(a) != 13 || a >= b {
		t.Errorf("tid %q !< %q", a, b)
	}
}
