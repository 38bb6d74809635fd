package watchcache

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the watch caches' Prometheus metrics, labelled by resource key root. One Metrics
// serves every Cache of a process (pass it in each Config); a nil *Metrics records nothing.
type Metrics struct {
	watchers        *prometheus.GaugeVec
	events          *prometheus.CounterVec
	terminated      *prometheus.CounterVec
	passedThrough   *prometheus.CounterVec
	initializations *prometheus.CounterVec
	lists           *prometheus.CounterVec
	gets            *prometheus.CounterVec
}

// NewMetrics registers the metrics on reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	labels := []string{"resource"}
	m := &Metrics{
		watchers: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "apiserver_watch_cache_watchers",
			Help: "Watches currently served from the watch cache, by resource key root.",
		}, labels),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_watch_cache_events_received_total",
			Help: "Changes the watch cache received from its etcd watch, by resource key root.",
		}, labels),
		terminated: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_terminated_watchers_total",
			Help: "Watches closed because they could not keep up with the events, by resource key root.",
		}, labels),
		passedThrough: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_watch_cache_passed_through_total",
			Help: "Watches from a revision older than the cache's history, served by etcd directly, by resource key root.",
		}, labels),
		initializations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_watch_cache_initializations_total",
			Help: "Times a resource's watch cache was filled from a list (first use and after failures), by resource key root.",
		}, labels),
		lists: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_watch_cache_lists_total",
			Help: "Lists by resource key root and where they were answered: source \"cache\" (memory) or \"etcd\".",
		}, []string{"resource", "source"}),
		gets: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_watch_cache_gets_total",
			Help: "Reads of one object at resourceVersion \"0\" by resource key root and where they were answered: source \"cache\" (memory) or \"etcd\" (a key the cache does not hold, or a resource it does not run).",
		}, []string{"resource", "source"}),
	}
	for _, c := range []prometheus.Collector{m.watchers, m.events, m.terminated, m.passedThrough, m.initializations, m.lists, m.gets} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register watch cache metrics: %w", err)
		}
	}
	return m, nil
}

func (m *Metrics) watcherAdded(root string) {
	if m != nil {
		m.watchers.WithLabelValues(root).Inc()
	}
}

func (m *Metrics) watcherRemoved(root string) {
	if m != nil {
		m.watchers.WithLabelValues(root).Dec()
	}
}

func (m *Metrics) eventReceived(root string) {
	if m != nil {
		m.events.WithLabelValues(root).Inc()
	}
}

func (m *Metrics) watchersTerminated(root string, n int) {
	if m != nil {
		m.terminated.WithLabelValues(root).Add(float64(n))
	}
}

func (m *Metrics) passedThroughWatch(root string) {
	if m != nil {
		m.passedThrough.WithLabelValues(root).Inc()
	}
}

func (m *Metrics) initialized(root string) {
	if m != nil {
		m.initializations.WithLabelValues(root).Inc()
	}
}

func (m *Metrics) listServed(root string, fromCache bool) {
	if m == nil {
		return
	}
	source := "etcd"
	if fromCache {
		source = "cache"
	}
	m.lists.WithLabelValues(root, source).Inc()
}

// getServed counts a read at resourceVersion "0" under root by where it was answered.
func (m *Metrics) getServed(root string, fromCache bool) {
	if m == nil {
		return
	}
	source := "etcd"
	if fromCache {
		source = "cache"
	}
	m.gets.WithLabelValues(root, source).Inc()
}
