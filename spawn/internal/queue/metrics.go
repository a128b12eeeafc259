package queue

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/blackwidow-crawl/blackwidow/spawn/internal/node"
)

// The queue's metrics, served with the rest of the spawn's on GET /metrics.
var (
	factory       = promauto.With(node.Registry)
	published     = factory.NewCounter(prometheus.CounterOpts{Name: "bw_spawn_queue_published_total", Help: "Comments published to the queue (acknowledged by JetStream, or flushed on core NATS); a retried batch counts again."})
	publishErrors = factory.NewCounter(prometheus.CounterOpts{Name: "bw_spawn_queue_publish_errors_total", Help: "Failed publishes of a batch to the queue (each is retried with the batch)."})
)
