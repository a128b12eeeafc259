package queue

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// The queue's metrics, served with the rest of the spawn's on GET /metrics.
var (
	publishedOpts     = prometheus.CounterOpts{Name: "bw_spawn_queue_published_total", Help: "Comments published to the queue (acknowledged by JetStream, or flushed on core NATS); a retried batch counts again."}
	publishErrorsOpts = prometheus.CounterOpts{Name: "bw_spawn_queue_publish_errors_total", Help: "Failed publishes of a batch to the queue (each is retried with the batch)."}
)

// published and publishErrors count for the publishers connected without
// a Registerer (tests, tools): they are on no registry.
var (
	published     = prometheus.NewCounter(publishedOpts)
	publishErrors = prometheus.NewCounter(publishErrorsOpts)
)

// metrics are one publisher's counters.
type metrics struct {
	published     prometheus.Counter
	publishErrors prometheus.Counter
}

// newMetrics registers a publisher's counters on reg, the spawn's
// registry; a nil reg shares the unregistered ones.
func newMetrics(reg prometheus.Registerer) metrics {
	if reg == nil {
		return metrics{published: published, publishErrors: publishErrors}
	}
	f := promauto.With(reg)
	return metrics{published: f.NewCounter(publishedOpts), publishErrors: f.NewCounter(publishErrorsOpts)}
}
