package flowcontrol

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are kube-apiserver's apiserver_flowcontrol_* series (the subset skiff keeps).
type metrics struct {
	dispatched     *prometheus.CounterVec
	rejected       *prometheus.CounterVec
	inQueue        *prometheus.GaugeVec
	executing      *prometheus.GaugeVec
	executingSeats *prometheus.GaugeVec
	wait           *prometheus.HistogramVec
	nominalLimit   *prometheus.GaugeVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	labels := []string{"priority_level", "flow_schema"}
	m := &metrics{
		dispatched: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_flowcontrol_dispatched_requests_total", Help: "Requests released to execution, by priority level and flow schema.",
		}, labels),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_flowcontrol_rejected_requests_total", Help: "Requests refused with 429, by priority level, flow schema and reason (queue-full, concurrency-limit, time-out, cancelled).",
		}, append(labels, "reason")),
		inQueue: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "apiserver_flowcontrol_current_inqueue_requests", Help: "Requests waiting in queues.",
		}, labels),
		executing: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "apiserver_flowcontrol_current_executing_requests", Help: "Requests executing.",
		}, labels),
		executingSeats: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "apiserver_flowcontrol_current_executing_seats", Help: "Seats held by executing requests.",
		}, labels),
		wait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "apiserver_flowcontrol_request_wait_duration_seconds", Help: "Time requests waited in a queue; execute says whether they then ran.",
			Buckets: []float64{0, 0.005, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30},
		}, append(labels, "execute")),
		nominalLimit: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "apiserver_flowcontrol_nominal_limit_seats", Help: "Each limited priority level's concurrency limit in seats.",
		}, []string{"priority_level"}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.dispatched, m.rejected, m.inQueue, m.executing, m.executingSeats, m.wait, m.nominalLimit} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register flow control metrics: %w", err)
		}
	}
	return m, nil
}
