package proxy

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the proxy's Prometheus metrics, named as kube-proxy's so dashboards carry over.
type Metrics struct {
	syncDuration     prometheus.Histogram
	lastSync         prometheus.Gauge
	restoreFailures  prometheus.Counter
	programmedChains prometheus.Gauge
}

// NewMetrics registers the proxy's metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		syncDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "kubeproxy_sync_proxy_rules_duration_seconds",
			Help:    "How long one sync of the service rules took (build, plan and iptables-restore).",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
		}),
		lastSync: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "kubeproxy_sync_proxy_rules_last_timestamp_seconds",
			Help: "When the service rules were last synced successfully (Unix seconds).",
		}),
		restoreFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "kubeproxy_sync_proxy_rules_iptables_restore_failures_total",
			Help: "Syncs whose iptables-restore failed (the next sync rewrites every chain).",
		}),
		programmedChains: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "skiff_proxy_chains",
			Help: "Chains the proxy owns after the last successful sync, over the nat and filter tables.",
		}),
	}
	reg.MustRegister(m.syncDuration, m.lastSync, m.restoreFailures, m.programmedChains)
	return m
}
