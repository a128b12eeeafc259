package cluster

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Registry holds the hub's metrics; GET /metrics serves it.
var Registry = prometheus.NewRegistry()

var (
	factory        = promauto.With(Registry)
	registrations  = factory.NewCounter(prometheus.CounterOpts{Name: "bw_hub_registrations_total", Help: "Spawn registrations accepted."})
	nodesLost      = factory.NewCounter(prometheus.CounterOpts{Name: "bw_hub_nodes_lost_total", Help: "Nodes removed after repeated failed polls."})
	reloads        = factory.NewCounterVec(prometheus.CounterOpts{Name: "bw_hub_reloads_total", Help: "Reloads by kind (hard, soft)."}, []string{"kind"})
	moves          = factory.NewCounter(prometheus.CounterOpts{Name: "bw_hub_subscriber_moves_total", Help: "Subscribers moved to another node by a reload."})
	sendFailures   = factory.NewCounter(prometheus.CounterOpts{Name: "bw_hub_send_failures_total", Help: "Subscriber sends to a node that failed."})
	polls          = factory.NewCounter(prometheus.CounterOpts{Name: "bw_hub_polls_total", Help: "Node polls answered."})
	pollFailures   = factory.NewCounter(prometheus.CounterOpts{Name: "bw_hub_poll_failures_total", Help: "Node polls that failed."})
	pollSeconds    = factory.NewHistogram(prometheus.HistogramOpts{Name: "bw_hub_poll_seconds", Help: "Duration of one node poll.", Buckets: prometheus.ExponentialBuckets(0.001, 2, 14)})
	leaseGrants    = factory.NewCounter(prometheus.CounterOpts{Name: "bw_hub_lease_grants_total", Help: "Leases granted."})
	leaseComments  = factory.NewCounter(prometheus.CounterOpts{Name: "bw_hub_lease_comments_total", Help: "Comments newly allowed by leases."})
	usageRecovered = factory.NewCounter(prometheus.CounterOpts{Name: "bw_hub_usage_recovered_total", Help: "Comments lost nodes stored but never reported, read back from the store and counted."})
	usageApplied   = factory.NewCounter(prometheus.CounterOpts{Name: "bw_hub_usage_applied_total", Help: "Comments applied to usage in SQL."})
)

func init() {
	Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
}
