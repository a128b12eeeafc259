package httpx

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/blackwidow-crawl/blackwidow/api"
)

func TestCheckText(t *testing.T) {
	cases := []struct {
		name, in, want string // want: "" for accepted, else a part of the error
	}{
		{"plain", "acme corp", ""},
		{"unicode letters", "Zoë 東京 عربي", ""},
		{"query syntax", `("black widow" OR #spawn) -marvel`, ""},
		{"bell", "ac\x07me", "control character U+0007 at character 3"},
		{"newline", "a\nb", "control character U+000A at character 2"},
		{"right-to-left override", "user\u202Egpj.exe", "bidirectional control U+202E at character 5"},
		{"isolate", "\u2066x", "bidirectional control U+2066 at character 1"},
		{"replacement character", "caf\uFFFD", "replacement character U+FFFD"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckText("name", tc.in)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrBadRequest)):
				t.Fatalf("got %v, want an ErrBadRequest naming %q", err, tc.want)
			}
		})
	}
}

func TestDecodeJSON_RefusesInvalidUTF8(t *testing.T) {
	body := "{\"name\": \"ac\xffme\"}"
	r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
	var v struct{ Name string }
	err := DecodeJSON(httptest.NewRecorder(), r, &v)
	if err == nil || !strings.Contains(err.Error(), "not valid UTF-8 (at byte 12)") {
		t.Fatalf("got %v (decoded %q), want a refusal naming byte 12", err, v.Name)
	}
}

// TestJSONErrors_RouterErrorsAreJSON checks that the router's own 404 and
// 405 answers, and any plain-text error, reach the client as the API's
// {"error": …} body, while JSON answers pass untouched.
func TestJSONErrors_RouterErrorsAreJSON(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/things", func(w http.ResponseWriter, r *http.Request) { WriteJSON(w, http.StatusOK, []int{1}) })
	mux.HandleFunc("GET /v1/missing", func(w http.ResponseWriter, r *http.Request) { WriteError(w, http.StatusNotFound, "thing 9 not found") })
	mux.HandleFunc("GET /v1/plain", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "plain failure", http.StatusBadGateway) })
	srv := httptest.NewServer(JSONErrors(mux))
	defer srv.Close()
	cases := []struct {
		method, path string
		code         int
		want         string
	}{
		{"GET", "/v1/things", 200, ""},
		{"GET", "/v1/nothing-here", 404, "not found"},
		{"DELETE", "/v1/things", 405, "method not allowed: use GET, HEAD"},
		{"GET", "/v1/missing", 404, "thing 9 not found"},
		{"GET", "/v1/plain", 502, "bad gateway"},
	}
	for _, tc := range cases {
		req, _ := http.NewRequest(tc.method, srv.URL+tc.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var e api.Error
		decErr := json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if resp.StatusCode != tc.code {
			t.Errorf("%s %s: status %d, want %d", tc.method, tc.path, resp.StatusCode, tc.code)
		}
		if tc.want == "" {
			continue
		}
		if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") || decErr != nil || e.Error != tc.want {
			t.Errorf("%s %s: %s body %q (%v), want JSON error %q", tc.method, tc.path, ct, e.Error, decErr, tc.want)
		}
	}
}
