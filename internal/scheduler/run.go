package scheduler

import (
	"context"
	"fmt"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"

	"github.com/skiff-sh/skiff/internal/leader"
)

// ErrLeadershipLost is returned by Run when this instance stops being the
// leader while its context is still live; the caller should exit or restart
// it, as kube-scheduler does.
var ErrLeadershipLost = leader.ErrLost

// Run starts informers, waits for their caches, and schedules until ctx ends.
// With LeaderElect, caches stay warm on every instance but only the holder of
// the Lease schedules and binds. started, if non-nil, is called with the
// Scheduler once it is built (tests and metrics).
func Run(ctx context.Context, cfg Config) error {
	return RunWithHook(ctx, cfg, nil)
}

// RunWithHook is Run with a callback receiving the built Scheduler.
func RunWithHook(ctx context.Context, cfg Config, started func(*Scheduler)) error {
	cfg.Default()
	if err := cfg.Validate(); err != nil {
		return err
	}
	if cfg.Client == nil {
		client, err := kubernetes.NewForConfig(cfg.RestConfig)
		if err != nil {
			return fmt.Errorf("scheduler client: %w", err)
		}
		cfg.Client = client
		if cfg.EventClient == nil {
			// A second clientset has its own token bucket.
			if cfg.EventClient, err = kubernetes.NewForConfig(cfg.RestConfig); err != nil {
				return fmt.Errorf("scheduler event client: %w", err)
			}
		}
	}
	factory := informers.NewSharedInformerFactory(cfg.Client, 0)
	if cfg.PrepareInformers != nil {
		cfg.PrepareInformers(factory)
	}
	s, err := New(cfg, factory)
	if err != nil {
		return err
	}
	defer s.Shutdown()
	informerCtx, stopInformers := context.WithCancel(ctx)
	defer factory.Shutdown()
	defer stopInformers()
	factory.Start(informerCtx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("scheduler: informer cache for %v did not sync: %w", typ, context.Cause(ctx))
		}
	}
	if started != nil {
		started(s)
	}
	if !cfg.LeaderElect {
		s.Run(ctx)
		return nil
	}
	return leader.Campaign(ctx, leader.Config{
		Client: cfg.Client, Namespace: cfg.LeaseNamespace, Name: cfg.LeaseName, Identity: cfg.Identity,
		LeaseDuration: cfg.LeaseDuration, RenewDeadline: cfg.RenewDeadline, RetryPeriod: cfg.RetryPeriod,
		Policy: leader.ReturnOnLoss, Logger: s.logger, Fence: cfg.Fence,
	}, func(ctx context.Context) error {
		s.Run(ctx)
		return nil
	})
}
