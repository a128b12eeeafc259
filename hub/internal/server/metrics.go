package server

import (
	"net/http"
	"slices"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/blackwidow-crawl/blackwidow/api"
)

// Gauges read from the hub's live view at scrape time.
var (
	descNodes = prometheus.NewDesc("bw_hub_nodes",
		"Live spawn nodes.", nil, nil)
	descDesiredNodes = prometheus.NewDesc("bw_hub_desired_nodes",
		"Spawn nodes the current load wants at --scaling-target subscribers a node (the autoscaling signal of GET /v1/scaling).", nil, nil)
	descCrawlers = prometheus.NewDesc("bw_hub_crawlers",
		"Crawlers by state.", []string{"state"}, nil)
	descNodeSubscribers = prometheus.NewDesc("bw_hub_node_subscribers",
		"Subscribers routed to a spawn node.", []string{"node"}, nil)
	descNodeDataSources = prometheus.NewDesc("bw_hub_node_data_sources",
		"Data sources a spawn node runs, as of its last poll.", []string{"node"}, nil)
)

// crawlerStates are always exported, at zero when no crawler is in them, so
// a series does not vanish when its last crawler changes state.
var crawlerStates = []string{
	api.StatePending, api.StateRunning, api.StateDegraded, api.StateQuotaWait, api.StateLimitReached,
	api.StateDisabled, api.StateFailed,
}

// viewCollector exports the gauges of one hub. It reads the hub's views on
// every scrape, so the numbers are never older than the scrape.
type viewCollector struct{ s *Server }

func (c viewCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descNodes, descDesiredNodes, descCrawlers, descNodeSubscribers, descNodeDataSources} {
		ch <- d
	}
}

func (c viewCollector) Collect(ch chan<- prometheus.Metric) {
	health := c.s.Hub.Health()
	sc := c.s.scalingFrom(health)
	ch <- prometheus.MustNewConstMetric(descDesiredNodes, prometheus.GaugeValue, float64(sc.DesiredNodes))

	byState := health.Crawlers.ByState
	states := slices.Clone(crawlerStates)
	for st := range byState {
		if !slices.Contains(states, st) {
			states = append(states, st)
		}
	}
	for _, st := range states {
		ch <- prometheus.MustNewConstMetric(descCrawlers, prometheus.GaugeValue, float64(byState[st]), st)
	}

	nodes := c.s.Hub.Nodes()
	ch <- prometheus.MustNewConstMetric(descNodes, prometheus.GaugeValue, float64(len(nodes)))
	for _, n := range nodes {
		ch <- prometheus.MustNewConstMetric(descNodeSubscribers, prometheus.GaugeValue, float64(n.Subscribers), n.ID)
		ch <- prometheus.MustNewConstMetric(descNodeDataSources, prometheus.GaugeValue, float64(len(n.DataSources)), n.ID)
	}
}

// metricsHandler serves this hub's metrics (its cluster's registry) with its
// view gauges. The gauges live in a registry of their own, built with the
// handler, so building the handler twice never registers them twice.
func (s *Server) metricsHandler() http.Handler {
	views := prometheus.NewRegistry()
	views.MustRegister(viewCollector{s})
	gatherers := prometheus.Gatherers{s.Hub.Registry(), views}
	if s.Alerts != nil {
		gatherers = append(gatherers, s.Alerts.Registry())
	}
	return promhttp.HandlerFor(gatherers, promhttp.HandlerOpts{})
}
