package twitterserver

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dghubble/oauth1"

	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
)

// waitTimeout bounds every condition a test waits for.
const waitTimeout = 5 * time.Second

var creds = Credentials{ConsumerKey: "ck", ConsumerSecret: "cs", AccessToken: "at", AccessSecret: "as"}

func signed(c Credentials) *http.Client {
	return oauth1.NewConfig(c.ConsumerKey, c.ConsumerSecret).Client(context.Background(), oauth1.NewToken(c.AccessToken, c.AccessSecret))
}

// openStream POSTs a filter request and returns a reader of its lines.
func openStream(t *testing.T, client *http.Client, base string, form url.Values) (*http.Response, *bufio.Reader) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/1.1/statuses/filter.json", strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp, bufio.NewReader(resp.Body)
}

// nextMessage skips keep-alives and returns the next message.
func nextMessage(t *testing.T, r *bufio.Reader) string {
	t.Helper()
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("reading stream: %v", err)
		}
		if line = strings.TrimRight(line, "\r\n"); line != "" {
			return line
		}
	}
}

func TestServer_StreamsMatchingTweetsToSignedClients(t *testing.T) {
	s, base := Start(t, Options{Credentials: creds, KeepAlive: 10 * time.Millisecond})
	resp, r := openStream(t, signed(creds), base, url.Values{"track": {"golang,new release"}})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	testkit.WaitFor(t, waitTimeout, "open stream", func() bool { return s.Open() == 1 })
	if got := s.OpenTracks(); len(got) != 1 || !slices.Equal(got[0], []string{"golang", "new release"}) {
		t.Errorf("tracks %v", got)
	}
	s.Publish(Tweet{Text: "nothing to see"})
	s.Publish(Tweet{Text: "goldang golangs"})
	want := s.Publish(Tweet{ScreenName: "gopher", Text: "The RELEASE is new! #golang"})
	var doc tweetDoc
	if err := json.Unmarshal([]byte(nextMessage(t, r)), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.ID != want.ID || doc.IDStr != fmt.Sprint(want.ID) || doc.Text != want.Text || doc.User.ScreenName != "gopher" {
		t.Errorf("got %+v", doc)
	}
	if _, err := time.Parse(time.RubyDate, doc.CreatedAt); err != nil {
		t.Errorf("created_at %q: %v", doc.CreatedAt, err)
	}
	if id := IDAt(want.CreatedAt); want.ID < id || want.ID > id+(1<<22) {
		t.Errorf("id %d is not a snowflake of %v", want.ID, want.CreatedAt)
	}
}

func TestServer_RefusesBadOAuthAndBadTrack(t *testing.T) {
	s, base := Start(t, Options{Credentials: creds})
	wrong := creds
	wrong.ConsumerSecret = "nope"
	cases := []struct {
		name   string
		client *http.Client
		form   url.Values
		status int
	}{
		{"no OAuth header", http.DefaultClient, url.Values{"track": {"x"}}, http.StatusUnauthorized},
		{"wrong secret", signed(wrong), url.Values{"track": {"x"}}, http.StatusUnauthorized},
		{"no track", signed(creds), url.Values{}, http.StatusNotAcceptable},
		{"term too long", signed(creds), url.Values{"track": {strings.Repeat("x", MaxTrackBytes+1)}}, http.StatusNotAcceptable},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, _ := openStream(t, tc.client, base, tc.form)
			if resp.StatusCode != tc.status {
				t.Errorf("status %d, want %d", resp.StatusCode, tc.status)
			}
		})
	}
	many := make([]string, MaxTrackTerms+1)
	for i := range many {
		many[i] = fmt.Sprintf("t%d", i)
	}
	if resp, _ := openStream(t, signed(creds), base, url.Values{"track": {strings.Join(many, ",")}}); resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("401 terms: status %d, want 413", resp.StatusCode)
	}
	if n := s.Unauthorized(); n != 2 {
		t.Errorf("%d unauthorized, want 2", n)
	}
}

func TestServer_FailuresAndDelimitedStreams(t *testing.T) {
	s, base := Start(t, Options{KeepAlive: time.Hour})
	s.FailStreams(420, 2)
	c := signed(Credentials{ConsumerKey: "k"})
	for range 2 {
		if resp, _ := openStream(t, c, base, url.Values{"track": {"x"}}); resp.StatusCode != 420 {
			t.Fatalf("status %d, want 420", resp.StatusCode)
		}
	}
	resp, r := openStream(t, c, base, url.Values{"track": {"x"}, "delimited": {"length"}})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	testkit.WaitFor(t, waitTimeout, "open stream", func() bool { return s.Open() == 1 })
	s.Publish(Tweet{Text: "x marks"})
	n, err := strconv.Atoi(nextMessage(t, r))
	if err != nil {
		t.Fatalf("length prefix: %v", err)
	}
	msg := make([]byte, n)
	if _, err := io.ReadFull(r, msg); err != nil || !strings.HasSuffix(string(msg), "}\r\n") {
		t.Fatalf("delimited message %q: %v", msg, err)
	}
	if got := s.Connections(); len(got) != 3 || got[0].Status != 420 || got[2].Status != 200 || !slices.Equal(got[2].Track, []string{"x"}) {
		t.Errorf("connections %+v", got)
	}
	if n := s.Cut(); n != 1 {
		t.Errorf("cut %d streams, want 1", n)
	}
	if _, err := r.ReadString('\n'); err == nil {
		t.Error("stream still readable after Cut")
	}
}

func TestServer_Search(t *testing.T) {
	s, base := Start(t, Options{Credentials: creds})
	var ids []int64
	for i := range 5 {
		ids = append(ids, s.Publish(Tweet{Text: fmt.Sprintf("alpha %d", i)}).ID)
	}
	s.Publish(Tweet{Text: "beta gamma"})
	s.Publish(Tweet{Text: strings.Repeat("long ", 40) + "beta"})
	get := func(q url.Values) searchDoc {
		t.Helper()
		resp, err := signed(creds).Get(base + "/1.1/search/tweets.json?" + q.Encode())
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d", resp.StatusCode)
		}
		var d searchDoc
		if err := json.NewDecoder(resp.Body).Decode(&d); err != nil {
			t.Fatal(err)
		}
		return d
	}
	d := get(url.Values{"q": {`"alpha"`}, "since_id": {fmt.Sprint(ids[1])}, "count": {"2"}})
	if len(d.Statuses) != 2 || d.Statuses[0].ID != ids[4] || d.Statuses[1].ID != ids[3] {
		t.Errorf("since_id/count page: %+v", d.Statuses)
	}
	d = get(url.Values{"q": {`"alpha"`}, "since_id": {fmt.Sprint(ids[1])}, "max_id": {fmt.Sprint(ids[3] - 1)}})
	if len(d.Statuses) != 1 || d.Statuses[0].ID != ids[2] {
		t.Errorf("max_id page: %+v", d.Statuses)
	}
	d = get(url.Values{"q": {`("gamma" "beta") OR "nothing"`}})
	if len(d.Statuses) != 1 || d.Statuses[0].Text != "beta gamma" {
		t.Errorf("grouped query: %+v", d.Statuses)
	}
	d = get(url.Values{"q": {`"beta"`}, "tweet_mode": {"extended"}})
	if len(d.Statuses) != 2 || !strings.HasSuffix(d.Statuses[0].FullText, "beta") || d.Statuses[0].Text != "" {
		t.Errorf("extended mode: %+v", d.Statuses[0])
	}
	s.FailSearches(429, 1)
	resp, err := signed(creds).Get(base + "/1.1/search/tweets.json?q=alpha")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("status %d, want 429", resp.StatusCode)
	}
	if n := len(s.Searches()); n != 5 {
		t.Errorf("%d searches recorded, want 5", n)
	}
}
