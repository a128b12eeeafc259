package cluster

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// metrics are one hub's counters, on a registry of their own: hubs started
// in one process (the end-to-end tests run several) never add to each
// other's numbers.
type metrics struct {
	registry       *prometheus.Registry
	registrations  prometheus.Counter
	nodesLost      prometheus.Counter
	reloads        *prometheus.CounterVec
	moves          prometheus.Counter
	sendFailures   prometheus.Counter
	polls          prometheus.Counter
	pollFailures   prometheus.Counter
	pollSeconds    prometheus.Histogram
	leaseGrants    prometheus.Counter
	leaseComments  prometheus.Counter
	usageRecovered prometheus.Counter
	usageApplied   prometheus.Counter
	drains         prometheus.Counter
	drainSeconds   prometheus.Histogram
	// retractionsLogged counts the log entries written (retractions.go).
	retractionsLogged prometheus.Counter
}

func newMetrics() *metrics {
	r := prometheus.NewRegistry()
	f := promauto.With(r)
	m := &metrics{
		registry:       r,
		registrations:  f.NewCounter(prometheus.CounterOpts{Name: "bw_hub_registrations_total", Help: "Spawn registrations accepted."}),
		nodesLost:      f.NewCounter(prometheus.CounterOpts{Name: "bw_hub_nodes_lost_total", Help: "Nodes removed after repeated failed polls."}),
		reloads:        f.NewCounterVec(prometheus.CounterOpts{Name: "bw_hub_reloads_total", Help: "Reloads by kind (hard, soft)."}, []string{"kind"}),
		moves:          f.NewCounter(prometheus.CounterOpts{Name: "bw_hub_subscriber_moves_total", Help: "Subscribers moved to another node by a reload."}),
		sendFailures:   f.NewCounter(prometheus.CounterOpts{Name: "bw_hub_send_failures_total", Help: "Subscriber sends to a node that failed."}),
		polls:          f.NewCounter(prometheus.CounterOpts{Name: "bw_hub_polls_total", Help: "Node polls answered."}),
		pollFailures:   f.NewCounter(prometheus.CounterOpts{Name: "bw_hub_poll_failures_total", Help: "Node polls that failed."}),
		pollSeconds:    f.NewHistogram(prometheus.HistogramOpts{Name: "bw_hub_poll_seconds", Help: "Duration of one node poll.", Buckets: prometheus.ExponentialBuckets(0.001, 2, 14)}),
		leaseGrants:    f.NewCounter(prometheus.CounterOpts{Name: "bw_hub_lease_grants_total", Help: "Leases granted."}),
		leaseComments:  f.NewCounter(prometheus.CounterOpts{Name: "bw_hub_lease_comments_total", Help: "Comments newly allowed by leases."}),
		usageRecovered: f.NewCounter(prometheus.CounterOpts{Name: "bw_hub_usage_recovered_total", Help: "Comments lost nodes stored but never reported, read back from the store and counted."}),
		usageApplied:   f.NewCounter(prometheus.CounterOpts{Name: "bw_hub_usage_applied_total", Help: "Comments applied to usage in SQL."}),
		drains:         f.NewCounter(prometheus.CounterOpts{Name: "bw_hub_node_drains_total", Help: "Spawns that started draining (SIGTERM, or bwctl node drain)."}),
		drainSeconds: f.NewHistogram(prometheus.HistogramOpts{Name: "bw_hub_node_drain_seconds", Help: "How long drained spawns took from the start of their drain to leaving, every crawler handed over.",
			Buckets: prometheus.ExponentialBuckets(0.25, 2, 10)}),
		retractionsLogged: f.NewCounter(prometheus.CounterOpts{Name: "bw_hub_retractions_logged_total", Help: "Deletes, edits, account changes and forgets logged for every spawn."}),
	}
	r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Registry holds this hub's metrics; its GET /metrics serves them.
func (h *Hub) Registry() *prometheus.Registry { return h.metrics.registry }
