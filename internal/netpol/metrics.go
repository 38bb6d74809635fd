package netpol

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/skiff-sh/skiff/internal/proxy"
)

// Metrics are the policy agent's Prometheus metrics.
type Metrics struct {
	syncDuration prometheus.Histogram
	latency      prometheus.Histogram
	syncFailures prometheus.Counter
	rules        prometheus.Gauge
	elements     prometheus.Gauge
}

// NewMetrics registers the agent's metrics with reg. The drop counters are read from the table
// at scrape time (the kernel counts them), through h.
func NewMetrics(reg prometheus.Registerer, h proxy.Host, table string) *Metrics {
	buckets := prometheus.ExponentialBuckets(0.001, 2, 15)
	m := &Metrics{
		syncDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "skiff_network_policy_sync_duration_seconds", Buckets: buckets,
			Help: "How long one sync of the network policy rules took (build, plan and nft).",
		}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "skiff_network_policy_enforce_latency_seconds", Buckets: buckets,
			Help: "From a change of a policy, pod or namespace seen by the agent to the rules that enforce it.",
		}),
		syncFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "skiff_network_policy_sync_failures_total",
			Help: "Syncs whose nft transaction failed (the next sync rewrites the whole table).",
		}),
		rules: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "skiff_network_policy_rules", Help: "Rules in the node's network policy table after the last sync.",
		}),
		elements: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "skiff_network_policy_set_elements", Help: "Set and map elements in the node's network policy table after the last sync.",
		}),
	}
	dropped := func(ingress bool) func() float64 {
		return func() float64 {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			in, out, err := DroppedPackets(ctx, h, table)
			if err != nil {
				return 0
			}
			if ingress {
				return float64(in)
			}
			return float64(out)
		}
	}
	reg.MustRegister(m.syncDuration, m.latency, m.syncFailures, m.rules, m.elements,
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "skiff_network_policy_dropped_packets_total", ConstLabels: prometheus.Labels{"direction": "ingress"},
			Help: "Packets dropped because no network policy allowed them, by direction.",
		}, dropped(true)),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "skiff_network_policy_dropped_packets_total", ConstLabels: prometheus.Labels{"direction": "egress"},
			Help: "Packets dropped because no network policy allowed them, by direction.",
		}, dropped(false)),
	)
	return m
}

func (m *Metrics) observe(r SyncResult, changed bool) {
	m.rules.Set(float64(r.Rules))
	m.elements.Set(float64(r.Elements))
	if !changed {
		return
	}
	m.syncDuration.Observe((r.Build + r.Apply).Seconds())
	if r.Latency > 0 {
		m.latency.Observe(r.Latency.Seconds())
	}
}
