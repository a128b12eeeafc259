package alert

import "github.com/prometheus/client_golang/prometheus"

// Delivery outcomes, as bw_hub_alert_deliveries_total labels them.
const (
	outcomeDelivered = "delivered"
	outcomeRetried   = "retried"
	outcomeFailed    = "failed"
)

type metrics struct {
	registry   *prometheus.Registry
	fired      *prometheus.CounterVec
	deliveries *prometheus.CounterVec
	latency    *prometheus.HistogramVec
	evaluation *prometheus.HistogramVec
}

func newMetrics() *metrics {
	m := &metrics{
		registry: prometheus.NewRegistry(),
		fired: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "bw_hub_alerts_fired_total",
			Help: "Alerts fired by alert rules, by kind (test alerts included)."}, []string{"kind"}),
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "bw_hub_alert_deliveries_total",
			Help: "Alert delivery attempts by channel and outcome: delivered, retried (a failed attempt that will be retried) or failed (given up)."},
			[]string{"channel", "outcome"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "bw_hub_alert_delivery_latency_seconds",
			Help:    "Time from an alert's detection to its delivery, by channel.",
			Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300, 1800, 7200, 86400}}, []string{"channel"}),
		evaluation: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "bw_hub_alert_evaluation_seconds",
			Help:    "Time one evaluation pass of the alert rules of a kind took.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 9)}, []string{"kind"}),
	}
	m.registry.MustRegister(m.fired, m.deliveries, m.latency, m.evaluation)
	for _, k := range []string{"spike", "term", "match", "sentiment"} {
		m.fired.WithLabelValues(k)
		m.evaluation.WithLabelValues(k)
	}
	for _, c := range []string{"webhook", "slack", "email"} {
		for _, o := range []string{outcomeDelivered, outcomeRetried, outcomeFailed} {
			m.deliveries.WithLabelValues(c, o)
		}
		m.latency.WithLabelValues(c)
	}
	return m
}
