package node

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Metrics are one spawn's counters, on a registry of its own: spawns that
// share a process (the end-to-end tests start several) count apart. GET
// /metrics serves Registry; the spawn's other parts (the queue publisher)
// register their metrics on it too.
type Metrics struct {
	// Registry holds the spawn's metrics, with the Go and process
	// collectors.
	Registry *prometheus.Registry

	registrations        prometheus.Counter
	registrationFailures prometheus.Counter
	detaches             prometheus.Counter
	orphansDropped       prometheus.Counter
	expiredRequests      prometheus.Counter
	polls                prometheus.Counter
	dataSourcesStarted   prometheus.Counter
	commentsRejected     prometheus.Counter
	storeWrites          prometheus.Counter
	storeWriteSeconds    prometheus.Histogram
	storeQueueDepth      prometheus.Gauge
	duplicatesSkipped    prometheus.Counter
	storeWriteErrors     prometheus.Counter
	draining             prometheus.Gauge
	drainSeconds         prometheus.Gauge
	retractionsApplied   prometheus.Counter
	retractionsRemoved   prometheus.Counter
	retractionsDropped   prometheus.Counter
	retractionErrors     prometheus.Counter
	expiredComments      prometheus.Counter
}

// NewMetrics builds a spawn's metrics on a new registry.
func NewMetrics() *Metrics {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	f := promauto.With(reg)
	return &Metrics{
		Registry:             reg,
		registrations:        f.NewCounter(prometheus.CounterOpts{Name: "bw_spawn_registration_attempts_total", Help: "Registration attempts with the hub."}),
		registrationFailures: f.NewCounter(prometheus.CounterOpts{Name: "bw_spawn_registration_failures_total", Help: "Registration attempts that failed."}),
		detaches:             f.NewCounter(prometheus.CounterOpts{Name: "bw_spawn_detaches_total", Help: "Times the spawn dropped everything because the hub went silent or changed epoch."}),
		orphansDropped:       f.NewCounter(prometheus.CounterOpts{Name: "bw_spawn_orphans_dropped_total", Help: "Subscribers stopped because the hub stopped polling them."}),
		expiredRequests:      f.NewCounter(prometheus.CounterOpts{Name: "bw_spawn_expired_requests_total", Help: "Hub requests refused because they arrived after the hub stopped waiting for them."}),
		polls:                f.NewCounter(prometheus.CounterOpts{Name: "bw_spawn_polls_total", Help: "Polls answered."}),
		dataSourcesStarted:   f.NewCounter(prometheus.CounterOpts{Name: "bw_spawn_data_sources_started_total", Help: "Data sources started."}),
		commentsRejected:     f.NewCounter(prometheus.CounterOpts{Name: "bw_spawn_comments_rejected_total", Help: "Comments not stored because no live lease covered them."}),
		storeWrites:          f.NewCounter(prometheus.CounterOpts{Name: "bw_spawn_comments_stored_total", Help: "Comments written to the store."}),
		storeWriteSeconds:    f.NewHistogram(prometheus.HistogramOpts{Name: "bw_spawn_store_write_seconds", Help: "Time of one store call (a batch of comments).", Buckets: prometheus.ExponentialBuckets(0.001, 2, 14)}),
		storeQueueDepth:      f.NewGauge(prometheus.GaugeOpts{Name: "bw_spawn_store_queue_depth", Help: "Counted comments waiting for the store (the bounded buffer)."}),
		duplicatesSkipped:    f.NewCounter(prometheus.CounterOpts{Name: "bw_spawn_comments_duplicate_total", Help: "Comments the store already held (delivered again after a move); not counted as usage."}),
		storeWriteErrors:     f.NewCounter(prometheus.CounterOpts{Name: "bw_spawn_store_write_errors_total", Help: "Failed store writes (each is retried)."}),
		draining:             f.NewGauge(prometheus.GaugeOpts{Name: "bw_spawn_draining", Help: "1 while the spawn drains: it hands its crawlers to other spawns and takes no new ones."}),
		drainSeconds:         f.NewGauge(prometheus.GaugeOpts{Name: "bw_spawn_drain_seconds", Help: "How long the spawn's drain took, from its start to every crawler handed over and all usage acknowledged."}),
		retractionsApplied:   f.NewCounter(prometheus.CounterOpts{Name: "bw_spawn_retractions_applied_total", Help: "Retractions (deletes, edits, account changes, forgets) applied to the store."}),
		retractionsRemoved:   f.NewCounter(prometheus.CounterOpts{Name: "bw_spawn_comments_removed_total", Help: "Comments removed from the store because their source or an operator took them back."}),
		retractionsDropped:   f.NewCounter(prometheus.CounterOpts{Name: "bw_spawn_retractions_dropped_total", Help: "Retractions dropped because too many waited (the store or the hub unreachable for long)."}),
		retractionErrors:     f.NewCounter(prometheus.CounterOpts{Name: "bw_spawn_retraction_errors_total", Help: "Failed attempts to apply retractions to the store (each is retried)."}),
		expiredComments:      f.NewCounter(prometheus.CounterOpts{Name: "bw_spawn_comments_expired_total", Help: "Comments the store dropped past their crawler's retention."}),
	}
}
