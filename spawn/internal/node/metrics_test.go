package node

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/blackwidow-crawl/blackwidow/api"
)

func TestMetrics_EachNodeCountsApartAndServesItsOwn(t *testing.T) {
	a, _, _ := attachedNode(t)
	b, _, _ := attachedNode(t)
	for seq := range uint64(3) {
		if _, err := a.Poll(api.PollRequest{Epoch: "e1", Seq: seq + 1}); err != nil {
			t.Fatal(err)
		}
	}
	if got := testutil.ToFloat64(a.Metrics().polls); got != 3 {
		t.Fatalf("first node counted %v polls, want 3", got)
	}
	if got := testutil.ToFloat64(b.Metrics().polls); got != 0 {
		t.Fatalf("second node counted %v polls, want 0", got)
	}
	rec := httptest.NewRecorder()
	promhttp.HandlerFor(b.Metrics().Registry, promhttp.HandlerOpts{}).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	if !strings.Contains(string(body), "bw_spawn_polls_total 0\n") {
		t.Fatalf("second node's /metrics does not show its own polls:\n%s", body)
	}
}
