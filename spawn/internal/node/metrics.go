package node

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Registry holds the spawn's metrics; GET /metrics serves it.
var Registry = prometheus.NewRegistry()

var (
	factory              = promauto.With(Registry)
	registrations        = factory.NewCounter(prometheus.CounterOpts{Name: "bw_spawn_registration_attempts_total", Help: "Registration attempts with the hub."})
	registrationFailures = factory.NewCounter(prometheus.CounterOpts{Name: "bw_spawn_registration_failures_total", Help: "Registration attempts that failed."})
	detaches             = factory.NewCounter(prometheus.CounterOpts{Name: "bw_spawn_detaches_total", Help: "Times the spawn dropped everything because the hub went silent or changed epoch."})
	orphansDropped       = factory.NewCounter(prometheus.CounterOpts{Name: "bw_spawn_orphans_dropped_total", Help: "Subscribers stopped because the hub stopped polling them."})
	polls                = factory.NewCounter(prometheus.CounterOpts{Name: "bw_spawn_polls_total", Help: "Polls answered."})
	dataSourcesStarted   = factory.NewCounter(prometheus.CounterOpts{Name: "bw_spawn_data_sources_started_total", Help: "Data sources started."})
	commentsRejected     = factory.NewCounter(prometheus.CounterOpts{Name: "bw_spawn_comments_rejected_total", Help: "Comments not stored because no live lease covered them."})
	storeWrites          = factory.NewCounter(prometheus.CounterOpts{Name: "bw_spawn_comments_stored_total", Help: "Comments written to the store."})
	storeWriteSeconds    = factory.NewHistogram(prometheus.HistogramOpts{Name: "bw_spawn_store_write_seconds", Help: "Time of one store call (a batch of comments).", Buckets: prometheus.ExponentialBuckets(0.001, 2, 14)})
	storeQueueDepth      = factory.NewGauge(prometheus.GaugeOpts{Name: "bw_spawn_store_queue_depth", Help: "Counted comments waiting for the store (the bounded buffer)."})
	duplicatesSkipped    = factory.NewCounter(prometheus.CounterOpts{Name: "bw_spawn_comments_duplicate_total", Help: "Comments the store already held (delivered again after a move); not counted as usage."})
	storeWriteErrors     = factory.NewCounter(prometheus.CounterOpts{Name: "bw_spawn_store_write_errors_total", Help: "Failed store writes (each is retried)."})
)

func init() {
	Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
}
