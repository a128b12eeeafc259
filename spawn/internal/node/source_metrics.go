package node

import (
	"maps"
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/blackwidow-crawl/blackwidow/pkg/redact"
	"github.com/blackwidow-crawl/blackwidow/spawn/internal/source"
)

// sourceCollector publishes what the node's data sources report about
// themselves (source.Reporter): items read, reconnects, skipped messages,
// lag, per-rule costs. Each stat is labelled with its data source's key,
// redacted (keys name crawl targets). The set of data sources changes with
// the subscribers, so the collector is unchecked: it describes nothing up
// front.
type sourceCollector struct{ n *Node }

// Describe implements prometheus.Collector (unchecked).
func (sourceCollector) Describe(chan<- *prometheus.Desc) {}

// Collect implements prometheus.Collector.
func (c sourceCollector) Collect(ch chan<- prometheus.Metric) {
	type reporting struct {
		key string
		r   source.Reporter
	}
	c.n.mu.Lock()
	var all []reporting
	for key, ds := range c.n.table.sources {
		if r, ok := ds.ds.(source.Reporter); ok {
			all = append(all, reporting{key, r})
		}
	}
	c.n.mu.Unlock()
	for _, rep := range all {
		for _, st := range rep.r.Report() {
			names := slices.Sorted(maps.Keys(st.Labels))
			values := make([]string, 0, len(names)+1)
			for _, l := range names {
				values = append(values, st.Labels[l])
			}
			names = append(names, "data_source")
			values = append(values, redact.Text(rep.key))
			kind := prometheus.CounterValue
			if st.Gauge {
				kind = prometheus.GaugeValue
			}
			m, err := prometheus.NewConstMetric(prometheus.NewDesc(st.Name, st.Help, names, nil), kind, st.Value, values...)
			if err != nil {
				c.n.logger.Warn("data source stat not published", "name", st.Name, "err", err)
				continue
			}
			ch <- m
		}
	}
}
