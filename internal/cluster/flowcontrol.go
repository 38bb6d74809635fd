package cluster

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"

	"github.com/skiff-sh/skiff/internal/apiserver/flowcontrol"
)

// newFlowControl builds API Priority and Fairness with --max-requests-inflight seats; the API
// server starts it on its FlowSchema and PriorityLevelConfiguration objects (newAPIServer).
func newFlowControl(cfg *Config, reg prometheus.Registerer) (*flowcontrol.Controller, error) {
	return flowcontrol.New(flowcontrol.Config{
		ServerLimit: cfg.MaxRequestsInflight,
		Clock:       clock.RealClock{},
		Logger:      cfg.Logger.With("component", "flowcontrol"),
		Registry:    reg,
	})
}
