package apiserver

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// healthSLIs are the health checks' service-level indicators that kube-apiserver serves at
// /metrics/slis, apart from /metrics so that a monitoring system can scrape them often and
// cheaply: kubernetes_healthcheck (1 while the named check of /livez, /readyz or /healthz last
// passed, else 0) and kubernetes_healthchecks_total (each run of a check, by its outcome). They
// move only when a health endpoint is asked, as upstream's do.
type healthSLIs struct {
	registry *prometheus.Registry
	last     *prometheus.GaugeVec
	runs     *prometheus.CounterVec
}

func newHealthSLIs() *healthSLIs {
	h := &healthSLIs{
		registry: prometheus.NewRegistry(),
		last: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "kubernetes_healthcheck",
			Help: "This metric records the result of a single healthcheck.",
		}, []string{"name", "type"}),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kubernetes_healthchecks_total",
			Help: "This metric records the results of all healthcheck.",
		}, []string{"name", "status", "type"}),
	}
	h.registry.MustRegister(h.last, h.runs)
	return h
}

// healthCheck is one named check of a health endpoint and whether it passed.
type healthCheck struct {
	name string
	ok   bool
}

// observe records one run of endpoint's checks (endpoint: livez, readyz or healthz).
func (h *healthSLIs) observe(endpoint string, checks ...healthCheck) {
	for _, c := range checks {
		value, status := 0.0, "error"
		if c.ok {
			value, status = 1, "success"
		}
		h.last.WithLabelValues(c.name, endpoint).Set(value)
		h.runs.WithLabelValues(c.name, status, endpoint).Inc()
	}
}

func (h *healthSLIs) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	promhttp.HandlerFor(h.registry, promhttp.HandlerOpts{}).ServeHTTP(w, r)
}
