package xv2

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

func TestParseRule_AcceptsAndRefusesAsX(t *testing.T) {
	cases := []struct {
		rule  string
		valid bool
	}{
		{"golang", true},
		{`"new release" -beta`, true},
		{"(go OR rust) lang:en", true},
		{"#kubernetes OR @gopher OR from:golang", true},
		{"a b OR c", true},
		{"-beta", false},
		{"lang:en", false},
		{"golang lang:zz", false},
		{"from:a_name_far_too_long_for_x", false},
		{"(go OR rust", false},
		{"go OR", false},
		{"go)", false},
		{`"unterminated`, false},
		{"has:media golang", false},
		{"", false},
		{"go OR -rust", false},
	}
	for _, tc := range cases {
		_, err := parseRule(tc.rule)
		if (err == nil) != tc.valid {
			t.Errorf("parseRule(%q) = %v, want valid=%v", tc.rule, err, tc.valid)
		}
	}
}

func TestRule_Matches(t *testing.T) {
	p := post{text: "golang 1.24 is out! #golang @gopher", username: "golangnews", lang: "en-gb"}
	cases := []struct {
		rule string
		want bool
	}{
		{"golang", true},
		{"gol", false},
		{`"1.24 is out"`, true},
		{"#golang", true},
		{"#rust", false},
		{"@gopher", true},
		{"from:golangnews", true},
		{"from:someone golang", false},
		{"golang lang:en", true},
		{"golang lang:fr", false},
		{"golang -out", false},
		{"rust OR golang", true},
		{"rust golang OR #golang", true},
		{"(rust OR gopher) -beta", true},
		{"(rust OR python) -out", false},
	}
	for _, tc := range cases {
		n, err := parseRule(tc.rule)
		if err != nil {
			t.Fatalf("parseRule(%q): %v", tc.rule, err)
		}
		if got := n.matches(p); got != tc.want {
			t.Errorf("%q matches = %v, want %v", tc.rule, got, tc.want)
		}
	}
}

func do(t *testing.T, method, url, auth, body string) (*http.Response, rulesResponse) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", "Bearer "+auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out rulesResponse
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp, out
}

func TestServer_RulesEndpoint(t *testing.T) {
	srv, url := Start(t, Options{BearerToken: "tok", MaxRules: 2, MaxRuleLength: 20})
	if resp, _ := do(t, "GET", url+RulesPath, "wrong", ""); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("wrong token: %d", resp.StatusCode)
	}
	resp, out := do(t, "POST", url+RulesPath+"?dry_run=true", "tok", `{"add":[{"value":"golang","tag":"a"}]}`)
	if resp.StatusCode != http.StatusOK || len(out.Data) != 1 || len(srv.Rules()) != 0 {
		t.Fatalf("dry run: %d %+v, %d rules stored", resp.StatusCode, out, len(srv.Rules()))
	}
	resp, out = do(t, "POST", url+RulesPath, "tok", `{"add":[{"value":"golang","tag":"a"},{"value":"-beta"},{"value":"`+strings.Repeat("x", 21)+`"}]}`)
	if resp.StatusCode != http.StatusBadRequest || len(out.Errors) != 2 || len(srv.Rules()) != 0 {
		t.Fatalf("invalid adds: %d %+v, %d rules stored", resp.StatusCode, out, len(srv.Rules()))
	}
	resp, _ = do(t, "POST", url+RulesPath, "tok", `{"add":[{"value":"golang","tag":"a"}]}`)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("add: %d", resp.StatusCode)
	}
	resp, out = do(t, "POST", url+RulesPath, "tok", `{"add":[{"value":"golang"},{"value":"rust"}]}`)
	if resp.StatusCode != http.StatusCreated || len(out.Errors) != 1 || out.Errors[0].Title != "DuplicateRule" || len(srv.Rules()) != 2 {
		t.Fatalf("duplicate: %d %+v", resp.StatusCode, out)
	}
	resp, out = do(t, "POST", url+RulesPath, "tok", `{"add":[{"value":"zig"}]}`)
	if resp.StatusCode != http.StatusBadRequest || len(out.Errors) != 1 || out.Errors[0].Title != "RulesCapExceeded" {
		t.Fatalf("over the cap: %d %+v", resp.StatusCode, out)
	}
	_, out = do(t, "GET", url+RulesPath+"?max_results=1", "tok", "")
	if len(out.Data) != 1 || out.Meta.NextToken == "" {
		t.Fatalf("first page %+v", out)
	}
	resp, _ = do(t, "POST", url+RulesPath, "tok", `{"delete":{"ids":["`+srv.Rules()[0].ID+`","404"]}}`)
	if resp.StatusCode != http.StatusOK || len(srv.Rules()) != 1 {
		t.Fatalf("delete: %d, %d rules left", resp.StatusCode, len(srv.Rules()))
	}
}

func TestServer_StreamDeliversMatchesToOneConnection(t *testing.T) {
	srv, url := Start(t, Options{BearerToken: "tok", KeepAlive: 20 * time.Millisecond})
	rule := srv.AddRule("golang", "go")
	req, _ := http.NewRequest("GET", url+StreamPath+"?expansions=author_id", nil)
	req.Header.Set("Authorization", "Bearer tok")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("stream: %d", resp.StatusCode)
	}
	second, _ := do(t, "GET", url+StreamPath, "tok", "")
	if second.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("second connection: %d", second.StatusCode)
	}
	if c := srv.Connections(); len(c) != 2 || c[1].Status != http.StatusTooManyRequests {
		t.Fatalf("connections %+v", c)
	}
	p, ids := srv.Publish(Post{Text: "Golang news", Username: "gopher"})
	if len(ids) != 1 || ids[0] != rule.ID {
		t.Fatalf("matched %v", ids)
	}
	r := bufio.NewReader(resp.Body)
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			t.Fatal(err)
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue // keep-alive
		}
		var m messageJSON
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatal(err)
		}
		if m.Data.ID != p.ID || m.Includes == nil || m.Includes.Users[0].Username != "gopher" ||
			len(m.MatchingRules) != 1 || m.MatchingRules[0].Tag != "go" {
			t.Fatalf("message %s", line)
		}
		return
	}
}

// TestRender_PublicMetricsOnlyWhenAsked: X sends a post's public_metrics
// only when tweet.fields names them.
func TestRender_PublicMetricsOnlyWhenAsked(t *testing.T) {
	s := New(Options{})
	st := s.storeLocked(Post{ID: "1", Text: "x", Metrics: Metrics{RetweetCount: 4, LikeCount: 20, ImpressionCount: 300}})
	if d, _ := s.renderLocked(st, fields{}); d.PublicMetrics != nil {
		t.Fatalf("metrics sent unasked: %+v", d.PublicMetrics)
	}
	d, _ := s.renderLocked(st, parseFields(url.Values{"tweet.fields": {"public_metrics"}}))
	b, _ := json.Marshal(d)
	if d.PublicMetrics == nil || !bytes.Contains(b, []byte(`"public_metrics":{"retweet_count":4,"reply_count":0,"like_count":20,"quote_count":0,"bookmark_count":0,"impression_count":300}`)) {
		t.Fatalf("post %s", b)
	}
}
