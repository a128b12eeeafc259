package xv2

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"
)

// search sends one recent search with the parameters q and decodes the
// answer into a generic document.
func search(t *testing.T, base string, q url.Values) (*http.Response, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest("GET", base+SearchPath+"?"+q.Encode(), nil)
	req.Header.Set("Authorization", "Bearer tok")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var doc map[string]any
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatalf("answer %d is not JSON: %s", resp.StatusCode, body)
	}
	return resp, doc
}

// ids lists the post ids of a search answer's data, in order.
func ids(doc map[string]any) []string {
	var out []string
	data, _ := doc["data"].([]any)
	for _, d := range data {
		out = append(out, d.(map[string]any)["id"].(string))
	}
	return out
}

// keysOf lists a JSON object's keys, sorted.
func keysOf(v any) []string {
	m, _ := v.(map[string]any)
	return slices.Sorted(maps.Keys(m))
}

// TestSearch_AnswersInTheShapeXRecorded compares an answer of the local
// recent search with one X gave (recorded by tweepy's tests): the same
// keys in a page's posts and meta, posts newest first, ids between
// meta.oldest_id and meta.newest_id, a lower-case next_token while more
// posts match, and X's rate-limit headers (450 a window).
func TestSearch_AnswersInTheShapeXRecorded(t *testing.T) {
	raw, err := os.ReadFile("testdata/tweepy/search-recent-2022-10.json")
	if err != nil {
		t.Fatal(err)
	}
	var recorded map[string]any
	if err := json.Unmarshal(raw, &recorded); err != nil {
		t.Fatal(err)
	}
	srv, base := Start(t, Options{BearerToken: "tok"})
	// Published an hour ago: a search without start_time, end_time or
	// since_id ends 30 seconds before the request.
	at := time.Now().Add(-time.Hour)
	for i := range 12 {
		srv.Publish(Post{Text: fmt.Sprintf("%s tweepy", at.Add(time.Duration(i)*time.Minute).Format(time.DateTime)), CreatedAt: at.Add(time.Duration(i) * time.Minute)})
	}
	resp, got := search(t, base, url.Values{"query": {"Tweepy"}})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %v", resp.StatusCode, got)
	}
	if k, want := keysOf(got), keysOf(recorded); !slices.Equal(k, want) {
		t.Errorf("answer keys %v, recorded %v", k, want)
	}
	if k, want := keysOf(got["meta"]), keysOf(recorded["meta"]); !slices.Equal(k, want) {
		t.Errorf("meta keys %v, recorded %v", k, want)
	}
	post := got["data"].([]any)[0]
	if k, want := keysOf(post), keysOf(recorded["data"].([]any)[0]); !slices.Equal(k, want) {
		t.Errorf("post keys %v, recorded %v", k, want)
	}
	for _, doc := range []map[string]any{recorded, got} {
		list := ids(doc)
		meta := doc["meta"].(map[string]any)
		if len(list) != 10 || int(meta["result_count"].(float64)) != 10 {
			t.Errorf("%d posts, result_count %v: want a page of 10", len(list), meta["result_count"])
		}
		if !slices.IsSortedFunc(list, func(a, b string) int { return -cmpID(a, b) }) {
			t.Errorf("ids %v are not newest first", list)
		}
		if list[0] != meta["newest_id"] || list[len(list)-1] != meta["oldest_id"] {
			t.Errorf("newest_id %v oldest_id %v, page %v", meta["newest_id"], meta["oldest_id"], list)
		}
		if tok, _ := meta["next_token"].(string); !regexp.MustCompile(`^[0-9a-z]+$`).MatchString(tok) {
			t.Errorf("next_token %q", tok)
		}
	}
	if resp.Header.Get("x-rate-limit-limit") != "450" || resp.Header.Get("x-rate-limit-remaining") != "449" {
		t.Errorf("rate headers limit %q remaining %q, want 450 and 449", resp.Header.Get("x-rate-limit-limit"), resp.Header.Get("x-rate-limit-remaining"))
	}
	if reset, err := strconv.ParseInt(resp.Header.Get("x-rate-limit-reset"), 10, 64); err != nil || reset < time.Now().Unix() {
		t.Errorf("x-rate-limit-reset %q is not a Unix time to come", resp.Header.Get("x-rate-limit-reset"))
	}
}

func cmpID(a, b string) int {
	switch {
	case idLess(a, b):
		return -1
	case idLess(b, a):
		return 1
	}
	return 0
}

// TestSearch_BoundsAndPagesAsX: since_id, start_time and until_id bound
// the posts, a search without any bound ends 30 seconds ago, the pages of
// next_token cover every match once, newest first, and a search that
// finds nothing answers meta alone.
func TestSearch_BoundsAndPagesAsX(t *testing.T) {
	srv, base := Start(t, Options{BearerToken: "tok"})
	old := time.Now().Add(-2 * time.Hour)
	var all []Post
	for i := range 25 {
		p, _ := srv.Publish(Post{Text: fmt.Sprintf("gap %d", i), CreatedAt: old.Add(time.Duration(i) * time.Minute)})
		all = append(all, p)
	}
	recent, _ := srv.Publish(Post{Text: "gap now"})
	srv.Publish(Post{Text: "unrelated"})

	newestFirst := func(ps []Post) []string {
		var out []string
		for i := len(ps) - 1; i >= 0; i-- {
			out = append(out, ps[i].ID)
		}
		return out
	}
	cases := []struct {
		name string
		q    url.Values
		want []string
	}{
		{"no bounds end 30 s ago", url.Values{"query": {"gap"}, "max_results": {"100"}}, newestFirst(all)},
		{"since_id", url.Values{"query": {"gap"}, "since_id": {all[21].ID}}, append([]string{recent.ID}, newestFirst(all[22:])...)},
		{"start_time", url.Values{"query": {"gap"}, "start_time": {old.Add(23 * time.Minute).UTC().Format(time.RFC3339)}}, append([]string{recent.ID}, newestFirst(all[23:])...)},
		{"until_id", url.Values{"query": {"gap"}, "until_id": {all[2].ID}}, newestFirst(all[:2])},
		{"nothing found", url.Values{"query": {"absent"}}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, doc := search(t, base, tc.q)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %v", resp.StatusCode, doc)
			}
			if got := ids(doc); !slices.Equal(got, tc.want) {
				t.Fatalf("ids %v\nwant %v", got, tc.want)
			}
			if tc.want == nil {
				if k := keysOf(doc); !slices.Equal(k, []string{"meta"}) || doc["meta"].(map[string]any)["result_count"] != 0.0 {
					t.Fatalf("empty answer %v, want {\"meta\":{\"result_count\":0}}", doc)
				}
			}
		})
	}

	// Paging with max_results 10 from since_id: 3 pages, every post once.
	var paged []string
	q := url.Values{"query": {"gap"}, "since_id": {all[0].ID}, "max_results": {"10"}}
	for pages := 0; ; pages++ {
		if pages > 5 {
			t.Fatal("next_token never ends")
		}
		_, doc := search(t, base, q)
		paged = append(paged, ids(doc)...)
		tok, _ := doc["meta"].(map[string]any)["next_token"].(string)
		if tok == "" {
			break
		}
		q.Set("next_token", tok)
	}
	if want := append([]string{recent.ID}, newestFirst(all[1:])...); !slices.Equal(paged, want) {
		t.Fatalf("pages %v\nwant %v", paged, want)
	}
}

// TestSearch_RefusesBadParametersAsX: each bad parameter is a 400 naming
// it in errors[].parameters.
func TestSearch_RefusesBadParametersAsX(t *testing.T) {
	_, base := Start(t, Options{BearerToken: "tok", MaxQueryLength: 20})
	now := time.Now().UTC()
	cases := []struct {
		name  string
		q     url.Values
		param string
	}{
		{"no query", url.Values{}, "query"},
		{"query too long", url.Values{"query": {"a very long query over twenty"}}, "query"},
		{"query syntax", url.Values{"query": {"(go OR"}}, "query"},
		{"max_results below 10", url.Values{"query": {"go"}, "max_results": {"5"}}, "max_results"},
		{"max_results above 100", url.Values{"query": {"go"}, "max_results": {"101"}}, "max_results"},
		{"since_id not a number", url.Values{"query": {"go"}, "since_id": {"12a"}}, "since_id"},
		{"since_id past seven days", url.Values{"query": {"go"}, "since_id": {"1578516068309794817"}}, "since_id"},
		{"since_id and start_time", url.Values{"query": {"go"}, "since_id": {"1578516068309794817"}, "start_time": {now.Add(-time.Hour).Format(time.RFC3339)}}, "since_id"},
		{"start_time past seven days", url.Values{"query": {"go"}, "start_time": {now.Add(-8 * 24 * time.Hour).Format(time.RFC3339)}}, "start_time"},
		{"end_time too recent", url.Values{"query": {"go"}, "end_time": {now.Format(time.RFC3339)}}, "end_time"},
		{"bad next_token", url.Values{"query": {"go"}, "next_token": {"!!"}}, "next_token"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, doc := search(t, base, tc.q)
			if resp.StatusCode != http.StatusBadRequest || doc["title"] != "Invalid Request" || doc["type"] != typeInvalidRequest {
				t.Fatalf("status %d %v, want 400 Invalid Request", resp.StatusCode, doc)
			}
			errs, _ := doc["errors"].([]any)
			if len(errs) != 1 {
				t.Fatalf("errors %v", doc["errors"])
			}
			if params := keysOf(errs[0].(map[string]any)["parameters"]); !slices.Equal(params, []string{tc.param}) {
				t.Fatalf("parameters %v, want %s", params, tc.param)
			}
		})
	}
}

// TestSearch_RateLimitedPastTheWindowsRequests: past SearchLimit requests
// the answer is 429 with no requests remaining until the reset.
func TestSearch_RateLimitedPastTheWindowsRequests(t *testing.T) {
	_, base := Start(t, Options{BearerToken: "tok", SearchLimit: 2})
	for i, want := range []int{http.StatusOK, http.StatusOK, http.StatusTooManyRequests} {
		resp, doc := search(t, base, url.Values{"query": {"go"}})
		if resp.StatusCode != want {
			t.Fatalf("request %d: %d %v, want %d", i+1, resp.StatusCode, doc, want)
		}
		if remaining := resp.Header.Get("x-rate-limit-remaining"); remaining != strconv.Itoa(max(0, 1-i)) {
			t.Fatalf("request %d: remaining %q", i+1, remaining)
		}
	}
}

// TestSearch_QuoteMatchesOnItsOwnTextOnly: X's search, unlike its stream,
// does not match a quote post on the post it quotes.
func TestSearch_QuoteMatchesOnItsOwnTextOnly(t *testing.T) {
	srv, base := Start(t, Options{BearerToken: "tok"})
	srv.AddRule("zebra", "z")
	orig, _ := srv.Publish(Post{Text: "a zebra crossing", CreatedAt: time.Now().Add(-time.Hour)})
	quote, matched := srv.Publish(Post{Text: "look at this", QuoteOf: orig.ID, CreatedAt: time.Now().Add(-time.Hour)})
	if len(matched) != 1 {
		t.Fatalf("the stream's rule did not match the quote post")
	}
	_, doc := search(t, base, url.Values{"query": {"zebra"}})
	if got := ids(doc); !slices.Equal(got, []string{orig.ID}) {
		t.Fatalf("search found %v, want the quoted post %s alone (not the quote %s)", got, orig.ID, quote.ID)
	}
}

// TestStream_ClientGoneHoldsTheConnectionForAWhile: a client that goes
// away (killed, or closing its socket) keeps the app's one connection
// taken for SlotHold, so the next connection is refused with
// TooManyConnections until then; a stream the server itself ends frees it
// at once.
func TestStream_ClientGoneHoldsTheConnectionForAWhile(t *testing.T) {
	const hold = 300 * time.Millisecond
	srv, base := Start(t, Options{BearerToken: "tok", SlotHold: hold})
	connect := func(ctx context.Context) (*http.Response, error) {
		req, _ := http.NewRequestWithContext(ctx, "GET", base+StreamPath, nil)
		req.Header.Set("Authorization", "Bearer tok")
		return http.DefaultClient.Do(req)
	}
	ctx, cancel := context.WithCancel(context.Background())
	resp, err := connect(ctx)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("first connection: %v %v", resp, err)
	}
	cancel() // the client goes away
	resp.Body.Close()
	deadline := time.Now().Add(5 * time.Second)
	for srv.Connected() && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	gone := time.Now()
	second, err := connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(second.Body)
	second.Body.Close()
	if second.StatusCode != http.StatusTooManyRequests || !regexp.MustCompile(`"connection_issue":"TooManyConnections"`).Match(body) {
		t.Fatalf("reconnect right after the client went away: %d %s, want 429 TooManyConnections", second.StatusCode, body)
	}
	for srv.SlotHeld() {
		time.Sleep(10 * time.Millisecond)
	}
	if held := time.Since(gone); held < hold-50*time.Millisecond {
		t.Fatalf("slot freed after %v, want about %v", held, hold)
	}
	third, err := connect(context.Background())
	if err != nil || third.StatusCode != http.StatusOK {
		t.Fatalf("after the hold: %v %v", third, err)
	}
	srv.Cut() // the server ends it: free at once
	for srv.Connected() {
		time.Sleep(time.Millisecond)
	}
	third.Body.Close()
	if srv.SlotHeld() {
		t.Fatal("a stream the server cut still holds the connection")
	}
}

// TestStream_ConnectionRequestsRateLimited: past StreamConnectLimit
// requests in the window the stream answers a plain 429, with the
// window's headers.
func TestStream_ConnectionRequestsRateLimited(t *testing.T) {
	srv, base := Start(t, Options{BearerToken: "tok", StreamConnectLimit: 2})
	srv.Hold()
	for i, want := range []string{"1", "0", "0"} {
		resp, _ := do(t, "GET", base+StreamPath, "tok", "")
		if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("x-rate-limit-remaining") != want || resp.Header.Get("x-rate-limit-limit") != "2" {
			t.Fatalf("attempt %d: %d remaining %q limit %q", i+1, resp.StatusCode, resp.Header.Get("x-rate-limit-remaining"), resp.Header.Get("x-rate-limit-limit"))
		}
	}
	srv.Release()
	if resp, _ := do(t, "GET", base+StreamPath, "tok", ""); resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("past the limit: %d, want 429 until the window resets", resp.StatusCode)
	}
}
