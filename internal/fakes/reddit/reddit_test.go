package reddit

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

func token(t *testing.T, s *Server, id, secret string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, s.URL()+"/api/v1/access_token", strings.NewReader(url.Values{"grant_type": {"client_credentials"}}.Encode()))
	req.SetBasicAuth(id, secret)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, string(b)
	}
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	_ = json.Unmarshal(b, &tok)
	return resp.StatusCode, tok.AccessToken
}

func read(t *testing.T, s *Server, tok, path string) (int, http.Header, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, s.URL()+path, nil)
	req.Header.Set("Authorization", "bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

func TestServer_CredentialsAndTokens(t *testing.T) {
	s := Start(t, Options{ClientID: "id", ClientSecret: "secret"})
	if status, body := token(t, s, "id", "wrong"); status != 401 || body != `{"message": "Unauthorized", "error": 401}` {
		t.Errorf("wrong secret: %d %s", status, body)
	}
	status, tok := token(t, s, "id", "secret")
	if status != 200 || tok == "" {
		t.Fatalf("token: %d %q", status, tok)
	}
	if status, h, _ := read(t, s, "nope", "/r/golang/new"); status != 401 || !strings.Contains(h.Get("www-authenticate"), "invalid_token") {
		t.Errorf("bad token: %d %v", status, h)
	}
	status, h, _ := read(t, s, tok, "/r/golang/new")
	if status != 200 || h.Get("x-ratelimit-remaining") == "" || h.Get("x-ratelimit-reset") == "" || h.Get("x-ratelimit-used") == "" {
		t.Errorf("listing: %d %v", status, h)
	}
}

func TestServer_ListingsEscapingAndPaging(t *testing.T) {
	s := Start(t, Options{ClientID: "id", ClientSecret: "secret", ListingCap: 3})
	_, tok := token(t, s, "id", "secret")
	var names []string
	for _, body := range []string{"a & b", "c < d", "e > f", "g"} {
		names = append(names, s.Comment(CommentSpec{Subreddit: "Go", Author: "x", Body: body, Link: "t3_1"}))
	}
	_, _, escaped := read(t, s, tok, "/r/go/comments?limit=100")
	_, _, raw := read(t, s, tok, "/r/go/comments?limit=100&raw_json=1")
	if !strings.Contains(escaped, `c \u0026lt; d`) || !strings.Contains(raw, `c \u003c d`) {
		t.Errorf("escaping: %s / %s", escaped, raw)
	}
	if strings.Contains(raw, `"a \u0026 b"`) {
		t.Error("a thing past the cap was listed")
	}
	_, _, page := read(t, s, tok, "/r/go/comments?limit=1&after="+names[3]+"&raw_json=1")
	if !strings.Contains(page, names[2]) || strings.Contains(page, names[3]) {
		t.Errorf("after: %s", page)
	}
	s.Delete(names[2])
	_, _, page = read(t, s, tok, "/r/go/comments?before="+names[2])
	if !strings.Contains(page, `"children":[]`) {
		t.Errorf("before a deleted thing: %s", page)
	}
	_, _, info := read(t, s, tok, "/api/info?id="+names[2]+","+names[3]+",t1_zzzzzz&raw_json=1")
	if !strings.Contains(info, `"body":"[deleted]"`) || !strings.Contains(info, `"author":"[deleted]"`) || strings.Count(info, `"kind":"t1"`) != 2 {
		t.Errorf("info: %s", info)
	}
}

func TestServer_AllowanceSpentGets429(t *testing.T) {
	s := Start(t, Options{ClientID: "id", ClientSecret: "secret", Allowance: 2})
	_, tok := token(t, s, "id", "secret")
	read(t, s, tok, "/r/go/new")
	status, h, body := read(t, s, tok, "/r/go/new")
	if status != 429 || h.Get("retry-after") == "" || !strings.Contains(body, "whoa there, pardner!") {
		t.Errorf("%d %v", status, h)
	}
}
