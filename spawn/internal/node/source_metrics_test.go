package node

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/blackwidow-crawl/blackwidow/api"
	"github.com/blackwidow-crawl/blackwidow/internal/testkit"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
)

// reportingSource is a chanSource that reports stats.
type reportingSource struct{ *chanSource }

func (reportingSource) Report() []source.Stat {
	return append(source.StandardStats(7, 2, 1, map[string]int64{"malformed": 3}),
		source.Stat{Name: source.StatLag, Help: "lag", Gauge: true, Value: 1.5})
}

// TestNode_DataSourceStatsAreMetrics checks that what a data source reports
// reaches the spawn's registry, labelled by its redacted key.
func TestNode_DataSourceStatsAreMetrics(t *testing.T) {
	n, kind := attachedNodeWith(t, &memStore{})
	kind.wrap = func(s *chanSource) source.DataSource { return reportingSource{s} }
	feed := "https://example.com/f?key=SECRET"
	if _, err := n.Upsert(api.SubscribersRequest{Epoch: "e1", Seq: 1, Subscribers: []api.SubscriberSpec{spec(1, 1, feed)}}); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, waitTimeout, "data source", func() bool { return kind.starts(feed) == 1 })
	want := `
# HELP bw_spawn_source_items_total Items a data source handed to the spawn.
# TYPE bw_spawn_source_items_total counter
bw_spawn_source_items_total{data_source="https://example.com/f?REDACTED"} 7
# HELP bw_spawn_source_lag_seconds lag
# TYPE bw_spawn_source_lag_seconds gauge
bw_spawn_source_lag_seconds{data_source="https://example.com/f?REDACTED"} 1.5
# HELP bw_spawn_source_skipped_total Messages a data source skipped, by reason.
# TYPE bw_spawn_source_skipped_total counter
bw_spawn_source_skipped_total{data_source="https://example.com/f?REDACTED",reason="malformed"} 3
`
	if err := testutil.GatherAndCompare(n.metrics.Registry, strings.NewReader(want),
		"bw_spawn_source_items_total", "bw_spawn_source_lag_seconds", "bw_spawn_source_skipped_total"); err != nil {
		t.Fatal(err)
	}
}
