package dataplane

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the data plane's Prometheus metrics.
type Metrics struct {
	requests       *prometheus.CounterVec
	duration       prometheus.Histogram
	upstreamErrors *prometheus.CounterVec
	tableSwaps     prometheus.Counter
}

// NewMetrics registers the data plane's metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skiff_ingress_requests_total",
			Help: "Requests the HTTP data plane answered, by listener port and status code.",
		}, []string{"port", "code"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "skiff_ingress_request_duration_seconds",
			Help:    "Time from a request's headers read to its response's end (to the upgrade for upgraded connections).",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}),
		upstreamErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skiff_ingress_upstream_errors_total",
			Help: "Requests to endpoints that failed, by kind (dial: connecting; timeout; other), retried ones included.",
		}, []string{"kind"}),
		tableSwaps: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "skiff_ingress_table_swaps_total",
			Help: "Route tables the data plane was handed.",
		}),
	}
	reg.MustRegister(m.requests, m.duration, m.upstreamErrors, m.tableSwaps)
	return m
}
