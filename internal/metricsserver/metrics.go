package metricsserver

import (
	"fmt"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// scraperMetrics are the scraper's own Prometheus metrics, named as metrics-server names them so
// that its dashboards read them.
type scraperMetrics struct {
	requestDuration *prometheus.HistogramVec
	requests        *prometheus.CounterVec
	tickDuration    prometheus.Histogram
	points          *prometheus.GaugeVec
}

func newScraperMetrics(reg prometheus.Registerer) (*scraperMetrics, error) {
	m := &scraperMetrics{
		requestDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "metrics_server_kubelet_request_duration_seconds", Help: "Duration of requests to a kubelet's /metrics/resource, in seconds.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 12),
		}, []string{"node"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "metrics_server_kubelet_request_total", Help: "Requests to kubelets' /metrics/resource, by success.",
		}, []string{"success"}),
		tickDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "metrics_server_manager_tick_duration_seconds", Help: "Duration of one scrape of every Ready node, in seconds.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 14),
		}),
		points: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "metrics_server_storage_points", Help: "Nodes and containers whose samples are kept, by type.",
		}, []string{"type"}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.requestDuration, m.requests, m.tickDuration, m.points} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("resource metrics: register metrics: %w", err)
		}
	}
	return m, nil
}

func (m *scraperMetrics) request(node string, took time.Duration, err error) {
	m.requestDuration.WithLabelValues(node).Observe(took.Seconds())
	m.requests.WithLabelValues(strconv.FormatBool(err == nil)).Inc()
}

func (m *scraperMetrics) stored(p *Points) {
	containers := 0
	for _, c := range p.pods {
		containers += len(c)
	}
	m.points.WithLabelValues("node").Set(float64(len(p.nodes)))
	m.points.WithLabelValues("container").Set(float64(containers))
}
