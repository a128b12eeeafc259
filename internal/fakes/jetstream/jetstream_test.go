package jetstream

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/klauspost/compress/zstd"

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
	s := Start(t, Options{StepBack: -1}) // strictly increasing times: cursors between events

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

func TestServer_CompressesWithTheDictionaryWhenAsked(t *testing.T) {
	s := Start(t, Options{})
	dec, err := zstd.NewReader(nil, zstd.WithDecoderDicts(Dictionary()))
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	for _, how := range []struct {
		name, query string
		header      http.Header
	}{
		{"query", "?compress=true", nil},
		{"header", "", http.Header{"Socket-Encoding": {"zstd"}}},
	} {
		t.Run(how.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
			defer cancel()
			c, _, err := websocket.Dial(ctx, s.URL()+how.query, &websocket.DialOptions{HTTPHeader: how.header})
			if err != nil {
				t.Fatal(err)
			}
			defer c.CloseNow()
			testkit.WaitFor(t, waitTimeout, "the connection", func() bool { return s.Conns() == 1 })
			s.Publish(Post{DID: "did:plc:a", Text: "squeezed"})
			typ, data, err := c.Read(ctx)
			if err != nil || typ != websocket.MessageBinary {
				t.Fatalf("message type %v, %v: want a binary frame", typ, err)
			}
			plain, err := dec.DecodeAll(data, nil)
			if err != nil {
				t.Fatalf("not zstd with the dictionary: %v", err)
			}
			var ev received
			if err := json.Unmarshal(plain, &ev); err != nil || ev.Commit.Record.Text != "squeezed" {
				t.Fatalf("decoded %q: %v", plain, err)
			}
			if a := s.Accepted(); !a[len(a)-1].Compress {
				t.Errorf("accepted %+v", a[len(a)-1])
			}
			c.Close(websocket.StatusNormalClosure, "")
			testkit.WaitFor(t, waitTimeout, "the close", func() bool { return s.Conns() == 0 })
		})
	}
}

func TestServer_TimesStepBackAsProductionsDo(t *testing.T) {
	s := Start(t, Options{})
	start := time.Now().UnixMicro()
	var times []int64
	for i := range 200 {
		times = append(times, s.Publish(Post{DID: "did:plc:a", Text: fmt.Sprint(i)}).TimeUS)
	}
	backs, most := 0, int64(0)
	for i := 1; i < len(times); i++ {
		if d := times[i-1] - times[i]; d > 0 {
			backs++
			most = max(most, d)
		}
	}
	if backs == 0 || most > DefaultStepBack.Microseconds()+int64(time.Since(time.UnixMicro(start))/time.Microsecond) {
		t.Errorf("%d step-backs, the largest %d µs: want some, none beyond the step-back and the time taken", backs, most)
	}
	// A replay comes in time_us order, from the cursor on.
	c := dial(t, fmt.Sprintf("%s?cursor=%d", s.URL(), times[0]))
	from := 0
	for _, tu := range times {
		if tu >= times[0] {
			from++
		}
	}
	var last int64
	for _, ev := range read(t, c, from) {
		if ev.TimeUS < last || ev.TimeUS < times[0] {
			t.Errorf("replayed time_us %d after %d", ev.TimeUS, last)
		}
		last = ev.TimeUS
	}
}

func TestServer_EventsHaveProductionsShapes(t *testing.T) {
	s := Start(t, Options{})
	c := dial(t, s.URL())
	testkit.WaitFor(t, waitTimeout, "the connection", func() bool { return s.Conns() == 1 })
	s.Publish(Post{DID: "did:plc:a", Text: "hi"})
	s.Publish(Post{DID: "did:plc:a", RKey: "3kabc", Text: "edited", Operation: "update"})
	s.Publish(Post{DID: "did:plc:a", RKey: "3kabc", Operation: "delete"})
	s.PublishIdentity("did:plc:a", "")
	s.PublishAccount("did:plc:a", false, "deleted")
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	// The keys production sends (expected_v1.jsonl), and only those.
	want := []string{
		"commit:{cid,collection,operation,record,rev,rkey}",
		"commit:{cid,collection,operation,record,rev,rkey}",
		"commit:{collection,operation,rev,rkey}",
		"identity:{did,seq,time}",
		"account:{active,did,seq,status,time}",
	}
	for i, w := range want {
		_, data, err := c.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var top map[string]json.RawMessage
		if err := json.Unmarshal(data, &top); err != nil {
			t.Fatal(err)
		}
		wantTop := []string{"did", "kind", "time_us", strings.Split(w, ":")[0]}
		slices.Sort(wantTop)
		if got := strings.Join(slices.Sorted(maps.Keys(top)), ","); got != strings.Join(wantTop, ",") {
			t.Errorf("event %d: keys %s (a v1 event has no cursor)", i, got)
		}
		var kind string
		_ = json.Unmarshal(top["kind"], &kind)
		var inner map[string]json.RawMessage
		_ = json.Unmarshal(top[kind], &inner)
		if got := kind + ":{" + strings.Join(slices.Sorted(maps.Keys(inner)), ",") + "}"; got != w {
			t.Errorf("event %d: %s, want %s", i, got, w)
		}
	}
}

func TestServer_ReplaysRecordedEventsVerbatim(t *testing.T) {
	// Two events production sent (jetstream's internal/corpus/testdata/expected_v1.jsonl).
	recorded := [][]byte{
		[]byte(`{"did":"did:plc:hqvhxrowqbemo5e4wjnj6zao","time_us":1783175888384849,"kind":"identity","identity":{"did":"did:plc:hqvhxrowqbemo5e4wjnj6zao","seq":31527015470,"time":"2026-07-04T14:38:07.877Z"}}`),
		[]byte(`{"did":"did:plc:ux2eeflheratfrvp3xfbp4zi","time_us":1783175888112407,"kind":"commit","commit":{"rev":"3mptbyp63ih2m","operation":"delete","collection":"app.bsky.graph.follow","rkey":"3m3q3ut7jsm2m"}}`),
	}
	s := Start(t, Options{ReplayWindow: 100 * 365 * 24 * time.Hour})
	c := dial(t, s.URL())
	testkit.WaitFor(t, waitTimeout, "the connection", func() bool { return s.Conns() == 1 })
	if err := s.Replay(recorded); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	for i, want := range recorded {
		if _, got, err := c.Read(ctx); err != nil || string(got) != string(want) {
			t.Errorf("event %d: %s %v, want it verbatim", i, got, err)
		}
	}
	if err := s.Replay([][]byte{[]byte(`{"kind":"commit"}`)}); err == nil {
		t.Error("an event without did and time_us was replayed")
	}
}

func TestTID_SortsLikeTime(t *testing.T) {
	a, b := tid(1725911162329308, 1), tid(1725911162329309, 0)
	if len(a) != 13 || a >= b {
		t.Errorf("tid %q !< %q", a, b)
	}
}
