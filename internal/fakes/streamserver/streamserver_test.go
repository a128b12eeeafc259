package streamserver

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
)

// waitTimeout bounds every condition a test waits for.
const waitTimeout = 5 * time.Second

func compile(t *testing.T, base, auth, csdl string) (int, map[string]string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/compile", strings.NewReader(url.Values{"csdl": {csdl}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Authorization", auth)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc map[string]string
	_ = json.NewDecoder(resp.Body).Decode(&doc)
	return resp.StatusCode, doc
}

func TestServer_Compile(t *testing.T) {
	s, base := Start(t, Options{Username: "u", APIKey: "k"})
	const def = `interaction.content contains "golang" OR interaction.content contains "new \"release\""`
	status, doc := compile(t, base, "u:k", def)
	if status != http.StatusOK || doc["hash"] != HashOf(def) || len(doc["hash"]) != 32 {
		t.Fatalf("compile: %d %v", status, doc)
	}
	if got, _ := s.CSDL(doc["hash"]); got != def {
		t.Errorf("CSDL(%s) = %q", doc["hash"], got)
	}
	phrases, _ := ParseCSDL(def)
	if len(phrases) != 2 || !slices.Equal(phrases[1], []string{"new", `"release"`}) {
		t.Errorf("phrases %q", phrases)
	}
	for _, tc := range []struct {
		auth, csdl string
		status     int
	}{
		{"u:wrong", def, http.StatusUnauthorized},
		{"", def, http.StatusUnauthorized},
		{"u:k", `interaction.title contains "x"`, http.StatusBadRequest},
		{"u:k", `interaction.content contains "x`, http.StatusBadRequest},
		{"u:k", `interaction.content contains "x" and interaction.content contains "y"`, http.StatusBadRequest},
		{"u:k", ``, http.StatusBadRequest},
	} {
		if status, doc := compile(t, base, tc.auth, tc.csdl); status != tc.status || doc["error"] == "" {
			t.Errorf("compile(%q, %q) = %d %v, want %d with an error", tc.auth, tc.csdl, status, doc, tc.status)
		}
	}
}

func TestServer_MultiStream(t *testing.T) {
	s, base := Start(t, Options{Username: "u", APIKey: "k", TickInterval: 10 * time.Millisecond})
	_, g := compile(t, base, "u:k", `interaction.content contains "golang"`)
	_, r := compile(t, base, "u:k", `interaction.content contains "rust lang"`)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, resp, err := websocket.Dial(ctx, base+"/multi", &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"u:bad"}}}); err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("bad key: %v", err)
	}
	c, _, err := websocket.Dial(ctx, base+"/multi?username=u&api_key=k&hashes="+g["hash"], nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	read := func(want func(map[string]any) bool) map[string]any {
		t.Helper()
		for {
			_, data, err := c.Read(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]any
			if err := json.Unmarshal(data, &m); err != nil {
				t.Fatal(err)
			}
			if want(m) {
				return m
			}
		}
	}
	read(func(m map[string]any) bool { return m["tick"] != nil })
	send := func(action, hash string) {
		b, _ := json.Marshal(map[string]string{"action": action, "hash": hash})
		if err := c.Write(ctx, websocket.MessageText, b); err != nil {
			t.Fatal(err)
		}
	}
	send("subscribe", r["hash"])
	send("subscribe", "nope")
	st := read(func(m map[string]any) bool { return m["status"] == "failure" })
	if st["hash"] != "nope" {
		t.Errorf("failure %v", st)
	}
	testkit.WaitFor(t, waitTimeout, "two subscriptions", func() bool { subs := s.Subscriptions(); return len(subs) == 1 && len(subs[0]) == 2 })

	it := s.Publish(Interaction{Content: "I like Rust lang and Golang", Author: "a"})
	got := map[string]bool{}
	for len(got) < 2 {
		m := read(func(m map[string]any) bool { return m["data"] != nil })
		in := m["data"].(map[string]any)["interaction"].(map[string]any)
		if in["id"] != it.ID || in["content"] != it.Content {
			t.Errorf("interaction %v", in)
		}
		got[m["hash"].(string)] = true
	}
	if !got[g["hash"]] || !got[r["hash"]] {
		t.Errorf("delivered for %v", got)
	}
	send("unsubscribe", r["hash"])
	testkit.WaitFor(t, waitTimeout, "one subscription", func() bool { subs := s.Subscriptions(); return len(subs) == 1 && len(subs[0]) == 1 })
	s.Publish(Interaction{Content: "rust lang only"})
	if b := s.Billing(); b[g["hash"]] != 1 || b[r["hash"]] != 1 {
		t.Errorf("billing %v", b)
	}
	if n := s.Connections(); n != 1 {
		t.Errorf("%d connections", n)
	}
	var actions []string
	for _, e := range s.Events() {
		actions = append(actions, e.Action)
	}
	if !slices.Equal(actions, []string{"subscribe", "subscribe", "unsubscribe"}) {
		t.Errorf("events %v", actions)
	}

	s.FailConnections(503, 1)
	if _, resp, err := websocket.Dial(ctx, base+"/multi?username=u&api_key=k", nil); err == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("injected failure: %v", err)
	}
	if n := s.Cut(); n != 1 {
		t.Errorf("cut %d", n)
	}
	for {
		// Messages sent before the cut may still be buffered.
		if _, _, err := c.Read(ctx); err != nil {
			if ctx.Err() != nil {
				t.Error("connection still open after Cut")
			}
			break
		}
	}
}
