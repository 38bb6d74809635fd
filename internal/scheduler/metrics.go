package scheduler

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the scheduler's Prometheus metrics (names as kube-scheduler's).
type Metrics struct {
	// Attempts counts scheduling attempts by result (scheduled, unschedulable, error) and profile.
	Attempts *prometheus.CounterVec
	// AttemptDuration is the latency of one attempt (scheduling cycle + binding).
	AttemptDuration *prometheus.HistogramVec
	// E2EDuration is the time from a pod's first attempt to its successful binding.
	E2EDuration *prometheus.HistogramVec
	// Pending is the number of pending pods per queue.
	Pending *prometheus.GaugeVec
	// PreemptionAttempts counts preemption runs; PreemptionVictims observes victims per preemption.
	PreemptionAttempts prometheus.Counter
	PreemptionVictims  prometheus.Histogram
}

// NewMetrics creates and registers the metrics with reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	buckets := prometheus.ExponentialBuckets(0.001, 2, 20)
	m := &Metrics{
		Attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "scheduler_schedule_attempts_total", Help: "Number of attempts to schedule pods, by the result.",
		}, []string{"result", "profile"}),
		AttemptDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "scheduler_scheduling_attempt_duration_seconds", Help: "Scheduling attempt latency in seconds (scheduling algorithm + binding).", Buckets: buckets,
		}, []string{"result", "profile"}),
		E2EDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "scheduler_pod_scheduling_sli_duration_seconds", Help: "E2e latency for a pod being scheduled, from the first attempt to bound.", Buckets: buckets,
		}, []string{"profile"}),
		Pending: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "scheduler_pending_pods", Help: "Number of pending pods, by the queue type.",
		}, []string{"queue"}),
		PreemptionAttempts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "scheduler_preemption_attempts_total", Help: "Total preemption attempts in the cluster till now.",
		}),
		PreemptionVictims: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "scheduler_preemption_victims", Help: "Number of selected preemption victims.", Buckets: prometheus.ExponentialBuckets(1, 2, 7),
		}),
	}
	for _, c := range []prometheus.Collector{m.Attempts, m.AttemptDuration, m.E2EDuration, m.Pending, m.PreemptionAttempts, m.PreemptionVictims} {
		if err := reg.Register(c); err != nil {
			var already prometheus.AlreadyRegisteredError
			if errors.As(err, &already) {
				return nil, fmt.Errorf("register scheduler metrics: %w (use one registry per scheduler)", err)
			}
			return nil, fmt.Errorf("register scheduler metrics: %w", err)
		}
	}
	return m, nil
}
