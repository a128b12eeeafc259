package httpx

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/blackwidow-crawl/blackwidow/api"
)

func TestCallJSON(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok" || r.Header.Get("Content-Type") != "application/json" {
			WriteError(w, http.StatusUnauthorized, "no token")
			return
		}
		var in map[string]int
		_ = json.NewDecoder(r.Body).Decode(&in)
		switch r.URL.Path {
		case "/echo":
			WriteJSON(w, http.StatusOK, map[string]int{"got": in["n"], "method": len(r.Method)})
		case "/big":
			_, _ = w.Write([]byte(`{"got": 1, "pad": "` + strings.Repeat("x", 100) + `"}`))
		default:
			WriteError(w, http.StatusNotFound, "nothing at %s", r.URL.Path)
		}
	}))
	defer srv.Close()
	ctx := context.Background()
	var out struct{ Got, Method int }
	if err := CallJSON(ctx, srv.Client(), http.MethodPut, srv.URL+"/echo", "tok", map[string]int{"n": 7}, &out, 1<<10); err != nil || out.Got != 7 || out.Method != 3 {
		t.Fatalf("echo: %+v, %v", out, err)
	}
	if err := CallJSON(ctx, srv.Client(), http.MethodPost, srv.URL+"/echo", "tok", nil, nil, 1<<10); err != nil {
		t.Fatalf("answer dropped: %v", err)
	}
	var status *api.StatusError
	if err := CallJSON(ctx, srv.Client(), http.MethodPost, srv.URL+"/nope", "tok", nil, &out, 1<<10); !errors.As(err, &status) || status.Code != http.StatusNotFound {
		t.Fatalf("404: %v", err)
	}
	if err := CallJSON(ctx, srv.Client(), http.MethodPost, srv.URL+"/echo", "", nil, &out, 1<<10); !errors.As(err, &status) || status.Code != http.StatusUnauthorized {
		t.Fatalf("no token: %v", err)
	}
	if err := CallJSON(ctx, srv.Client(), http.MethodPost, srv.URL+"/big", "tok", nil, &out, 16); err == nil {
		t.Fatal("an answer over the cap was decoded")
	}
}
