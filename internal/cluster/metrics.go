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

	mu         sync.Mutex
	components map[string]*prometheus.Registry
}

func newComponentMetrics(base *prometheus.Registry) *componentMetrics {
	return &componentMetrics{base: base, components: map[string]*prometheus.Registry{}}
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
