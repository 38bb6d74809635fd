package manager

import (
	"fmt"
	"time"

	"k8s.io/client-go/rest"

	"github.com/skiff-sh/skiff/internal/controller/ctrlutil"
	"github.com/skiff-sh/skiff/internal/controller/podautoscaler"
)

// HPAConfig is the horizontal pod autoscaler's part of the controller manager's config: its
// kube-controller-manager flags and the REST config its /scale and metrics clients are built
// from.
type HPAConfig struct {
	// RESTConfig reaches the API server for /scale and the metrics APIs; without it (and
	// without Clients) the controller is not started.
	RESTConfig *rest.Config
	// Clients, when set, replaces what RESTConfig would build (tests inject a fake metrics
	// source this way).
	Clients *podautoscaler.Clients
	// Metrics, when set, replaces the metrics source of the built clients.
	Metrics podautoscaler.MetricsSource
	// SyncPeriod is --horizontal-pod-autoscaler-sync-period (default 15s).
	SyncPeriod time.Duration
	// Tolerance is --horizontal-pod-autoscaler-tolerance (default 0.1).
	Tolerance float64
	// DownscaleStabilization is --horizontal-pod-autoscaler-downscale-stabilization (default 5m).
	DownscaleStabilization time.Duration
	// CPUInitializationPeriod is --horizontal-pod-autoscaler-cpu-initialization-period (default 5m).
	CPUInitializationPeriod time.Duration
	// InitialReadinessDelay is --horizontal-pod-autoscaler-initial-readiness-delay (default 30s).
	InitialReadinessDelay time.Duration
}

func newHorizontalPodAutoscaler(deps ctrlutil.Deps, cfg *Config) (ctrlutil.Runner, error) {
	h := cfg.HPA
	var clients podautoscaler.Clients
	switch {
	case h.Clients != nil:
		clients = *h.Clients
	case h.RESTConfig != nil:
		c, err := podautoscaler.NewClients(h.RESTConfig)
		if err != nil {
			return nil, fmt.Errorf("horizontal pod autoscaler clients: %w", err)
		}
		clients = c
	default:
		deps.Log().Warn("horizontal pod autoscaler needs a REST config; not started")
		return nil, nil
	}
	opts := podautoscaler.Options{
		Scales: clients.Scales, Mapper: clients.Mapper, SyncPeriod: h.SyncPeriod,
		Config: podautoscaler.Config{
			Tolerance: h.Tolerance, DownscaleStabilizationWindow: h.DownscaleStabilization,
			CPUInitializationPeriod: h.CPUInitializationPeriod, InitialReadinessDelay: h.InitialReadinessDelay,
		},
	}
	if clients.Metrics != nil {
		opts.Metrics = clients.Metrics
	}
	if h.Metrics != nil {
		opts.Metrics = h.Metrics
	}
	return podautoscaler.New(deps, opts)
}
