package api

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// nodeRequest is one request a fake spawn received.
type nodeRequest struct {
	method, path, query string
	header              http.Header
	body                []byte
}

// fakeSpawn answers every request with status and body, and records what it
// received.
func fakeSpawn(t *testing.T, status int, body string) (*httptest.Server, <-chan nodeRequest) {
	t.Helper()
	got := make(chan nodeRequest, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- nodeRequest{method: r.Method, path: r.URL.Path, query: r.URL.RawQuery, header: r.Header.Clone(), body: b}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv, got
}

// TestNodeClient_SendsEachCallAsTheSpawnExpects: method, path, query, token
// and body bytes of every call are those the spawn's routes read; the body
// is exactly the request's JSON encoding, epoch and sequence included.
func TestNodeClient_SendsEachCallAsTheSpawnExpects(t *testing.T) {
	poll := PollRequest{Epoch: "e1", NodeID: "n1", Seq: 7, Subscribers: []SubscriberRef{{CrawlerID: 3, Version: 2}}, Acks: []uint64{4}}
	upsert := SubscribersRequest{Epoch: "e1", Seq: 8, Subscribers: []SubscriberSpec{{CrawlerID: 3, Version: 2, Source: SourceRSS, QueryUUID: "q"}}}
	remove := RemoveRequest{Epoch: "e1", Seq: 9, CrawlerIDs: []int64{5}}
	recoverReq := RecoverRequest{Epoch: "e1", NodeID: "lost", AfterSeq: 11}
	cases := []struct {
		name               string
		answer             string
		call               func(c *NodeClient) error
		method, path, qry  string
		in                 any // nil: no body
		wantContentTypeSet bool
	}{
		{"poll", `{"node_id":"n1","clock":5,"subscribers":[]}`, func(c *NodeClient) error {
			resp, err := c.Poll(context.Background(), poll)
			if err == nil && (resp.NodeID != "n1" || resp.Clock != 5) {
				t.Errorf("poll answer decoded as %+v", resp)
			}
			return err
		}, http.MethodPost, PathPoll, "", poll, true},
		{"upsert", `{"results":[{"crawler_id":3}]}`, func(c *NodeClient) error {
			resp, err := c.UpsertSubscribers(context.Background(), upsert)
			if err == nil && (len(resp.Results) != 1 || resp.Results[0].CrawlerID != 3) {
				t.Errorf("upsert answer decoded as %+v", resp)
			}
			return err
		}, http.MethodPut, PathSubscribers, "", upsert, true},
		{"remove", ``, func(c *NodeClient) error {
			return c.RemoveSubscribers(context.Background(), remove)
		}, http.MethodPost, PathSubscribersRemove, "", remove, true},
		{"recover", `{"increments":[{"node_id":"lost","seq":12,"crawler_id":3,"count":4}]}`, func(c *NodeClient) error {
			resp, err := c.RecoverUsage(context.Background(), recoverReq)
			if err == nil && (len(resp.Increments) != 1 || resp.Increments[0].Count != 4) {
				t.Errorf("recover answer decoded as %+v", resp)
			}
			return err
		}, http.MethodPost, PathRecover, "", recoverReq, true},
		{"recent comments", `[{"id":"c1"}]`, func(c *NodeClient) error {
			out, err := c.RecentComments(context.Background(), 3, 20)
			if err == nil && len(out) != 1 {
				t.Errorf("comments decoded as %+v", out)
			}
			return err
		}, http.MethodGet, PathNodeComments, "crawler_id=3&n=20", nil, false},
	}
	for _, tc := range cases {
		for _, token := range []string{"node-secret", ""} {
			t.Run(tc.name+"/token="+token, func(t *testing.T) {
				srv, got := fakeSpawn(t, http.StatusOK, tc.answer)
				c := NewNodeClient(srv.URL+"/", NodeOptions{Token: token})
				if err := tc.call(c); err != nil {
					t.Fatal(err)
				}
				r := <-got
				if r.method != tc.method || r.path != tc.path || r.query != tc.qry {
					t.Errorf("sent %s %s?%s, want %s %s?%s", r.method, r.path, r.query, tc.method, tc.path, tc.qry)
				}
				wantAuth := ""
				if token != "" {
					wantAuth = "Bearer " + token
				}
				if a := r.header.Get("Authorization"); a != wantAuth {
					t.Errorf("Authorization %q, want %q", a, wantAuth)
				}
				if ct := r.header.Get("Content-Type"); (ct == "application/json") != tc.wantContentTypeSet || (ct != "" && ct != "application/json") {
					t.Errorf("Content-Type %q", ct)
				}
				var want []byte
				if tc.in != nil {
					want, _ = json.Marshal(tc.in)
				}
				if string(r.body) != string(want) {
					t.Errorf("body %s, want %s", r.body, want)
				}
			})
		}
	}
}

// TestNodeClient_MapsErrors: a spawn's refusal is a *StatusError with its
// code and message; a transport failure and a bad answer are not.
func TestNodeClient_MapsErrors(t *testing.T) {
	cases := []struct {
		name     string
		status   int
		body     string
		maxBytes int64
		wantCode int // 0: not a *StatusError
		wantMsg  string
	}{
		{"epoch refused", http.StatusConflict, `{"error":"node: hub epoch mismatch"}`, 0, http.StatusConflict, "node: hub epoch mismatch"},
		{"no journal", http.StatusNotImplemented, `{"error":"node: the store keeps no journal"}`, 0, http.StatusNotImplemented, "node: the store keeps no journal"},
		{"unauthorised", http.StatusUnauthorized, `{"error":"unauthorized"}`, 0, http.StatusUnauthorized, "unauthorized"},
		{"plain text", http.StatusBadGateway, "bad gateway from a proxy\n", 0, http.StatusBadGateway, "bad gateway from a proxy"},
		{"html page", http.StatusServiceUnavailable, "<html>down</html>", 0, http.StatusServiceUnavailable, "Service Unavailable"},
		{"not json", http.StatusOK, "{not json", 0, 0, "unable to decode"},
		{"too large", http.StatusOK, `{"node_id":"` + strings.Repeat("x", 100) + `"}`, 64, 0, "larger than 64 bytes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv, _ := fakeSpawn(t, tc.status, tc.body)
			c := NewNodeClient(srv.URL, NodeOptions{MaxAnswerBytes: tc.maxBytes})
			_, err := c.Poll(context.Background(), PollRequest{Epoch: "e"})
			if err == nil {
				t.Fatal("no error")
			}
			var se *StatusError
			switch {
			case tc.wantCode == 0 && errors.As(err, &se):
				t.Fatalf("got a *StatusError for %v", err)
			case tc.wantCode != 0 && !errors.As(err, &se):
				t.Fatalf("%v is not a *StatusError", err)
			case tc.wantCode != 0 && (se.Code != tc.wantCode || se.Message != tc.wantMsg):
				t.Fatalf("got %d %q, want %d %q", se.Code, se.Message, tc.wantCode, tc.wantMsg)
			case tc.wantCode == 0 && !strings.Contains(err.Error(), tc.wantMsg):
				t.Fatalf("error %q does not say %q", err, tc.wantMsg)
			}
		})
	}

	t.Run("nobody listening", func(t *testing.T) {
		srv := httptest.NewServer(http.NotFoundHandler())
		url := srv.URL
		srv.Close()
		_, err := NewNodeClient(url, NodeOptions{}).Poll(context.Background(), PollRequest{})
		var se *StatusError
		if err == nil || errors.As(err, &se) {
			t.Fatalf("a refused connection gave %v, want a transport error", err)
		}
	})
}

// TestNodeClient_TimeoutPerCall: each kind of call is bounded by its own
// timeout, so a slow store read is not cut at the poll's deadline.
func TestNodeClient_TimeoutPerCall(t *testing.T) {
	const (
		short = 30 * time.Millisecond
		delay = 150 * time.Millisecond // the spawn's answer time
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
		switch r.URL.Path {
		case PathNodeComments:
			_, _ = io.WriteString(w, `[]`)
		default:
			_, _ = io.WriteString(w, `{}`)
		}
	}))
	t.Cleanup(srv.Close)
	c := NewNodeClient(srv.URL, NodeOptions{Timeouts: NodeTimeouts{Poll: short, Subscribers: short, Recover: short, Comments: 20 * delay}})
	ctx := context.Background()
	calls := []struct {
		name     string
		call     func() error
		timesOut bool
	}{
		{"poll", func() error { _, err := c.Poll(ctx, PollRequest{}); return err }, true},
		{"upsert", func() error { _, err := c.UpsertSubscribers(ctx, SubscribersRequest{}); return err }, true},
		{"remove", func() error { return c.RemoveSubscribers(ctx, RemoveRequest{}) }, true},
		{"recover", func() error { _, err := c.RecoverUsage(ctx, RecoverRequest{}); return err }, true},
		{"recent comments", func() error { _, err := c.RecentComments(ctx, 1, 1); return err }, false},
	}
	for _, tc := range calls {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			err := tc.call()
			took := time.Since(start)
			if !tc.timesOut {
				if err != nil {
					t.Fatalf("call with a long timeout failed: %v", err)
				}
				return
			}
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("got %v, want a deadline error", err)
			}
			if took >= delay {
				t.Fatalf("timed out after %v, not at its own %v", took, short)
			}
		})
	}

	t.Run("zero leaves the context's deadline", func(t *testing.T) {
		c := NewNodeClient(srv.URL, NodeOptions{})
		ctx, cancel := context.WithTimeout(context.Background(), short)
		defer cancel()
		if _, err := c.Poll(ctx, PollRequest{}); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("got %v, want the context's deadline", err)
		}
	})
}
