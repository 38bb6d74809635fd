package cluster

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// componentMetrics gathers the metrics of the components one skiff process runs, served together on
// the API server's /metrics. A component that restarts (after losing its leader Lease) registers
// its collectors again, so each run gets a fresh registry that replaces the previous one.
type componentMetrics struct {
	base *prometheus.Registry
	// rejectedConnections counts connections the API server closed at once, by the limit that
	// refused them (per-client, total).
	rejectedConnections *prometheus.CounterVec

	mu         sync.Mutex
	components map[string]*prometheus.Registry
}

func newComponentMetrics(base *prometheus.Registry) *componentMetrics {
	rejected := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "skiff_apiserver_rejected_connections_total",
		Help: "Connections the API server closed on accept because a connection limit was reached, by limit.",
	}, []string{"limit"})
	base.MustRegister(rejected)
	return &componentMetrics{base: base, rejectedConnections: rejected, components: map[string]*prometheus.Registry{}}
}

// connectionRejected counts one connection refused by limit.
func (m *componentMetrics) connectionRejected(limit string) {
	m.rejectedConnections.WithLabelValues(limit).Inc()
}

// fresh returns a new registry for component, dropping the one its previous run used.
func (m *componentMetrics) fresh(component string) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	m.mu.Lock()
	m.components[component] = reg
	m.mu.Unlock()
	return reg
}

// Gather implements prometheus.Gatherer over the base registry and every component's current one.
func (m *componentMetrics) Gather() ([]*dto.MetricFamily, error) {
	m.mu.Lock()
	gatherers := prometheus.Gatherers{m.base}
	for _, reg := range m.components {
		gatherers = append(gatherers, reg)
	}
	m.mu.Unlock()
	return gatherers.Gather()
}
