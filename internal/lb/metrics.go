package lb

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	health       *prometheus.GaugeVec
	connections  *prometheus.GaugeVec
	dialFailures *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		health: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "skiff_lb_backend_healthy",
			Help: "Whether the node-local load balancer believes an API server healthy (1), unhealthy (0) or not yet probed (-1).",
		}, []string{"backend"}),
		connections: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "skiff_lb_backend_connections",
			Help: "Open client connections the node-local load balancer proxies to an API server.",
		}, []string{"backend"}),
		dialFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skiff_lb_backend_dial_failures_total",
			Help: "Connection attempts to an API server that failed (the next backend was tried).",
		}, []string{"backend"}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.health, m.connections, m.dialFailures} {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("register load balancer metrics: %w", err)
			}
		}
	}
	return m, nil
}

// observe sets the health gauge of every backend and drops those no longer known.
func (m *metrics) observe(backends []Backend) {
	m.health.Reset()
	for _, b := range backends {
		v := -1.0
		switch b.Health {
		case Healthy:
			v = 1
		case Unhealthy:
			v = 0
		}
		m.health.WithLabelValues(b.Addr).Set(v)
	}
}
