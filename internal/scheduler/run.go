package scheduler

import (
	"context"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// ErrLeadershipLost is returned by Run when this instance stops being the
// leader while its context is still live; the caller should exit or restart
// it, as kube-scheduler does.
var ErrLeadershipLost = errors.New("scheduler: leader election lost")

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
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: cfg.LeaseNamespace, Name: cfg.LeaseName},
		Client:     cfg.Client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: cfg.Identity},
	}
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   cfg.LeaseDuration,
		RenewDeadline:   cfg.RenewDeadline,
		RetryPeriod:     cfg.RetryPeriod,
		ReleaseOnCancel: true,
		Name:            "skiff-scheduler",
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				s.logger.Info("became leader, scheduling", "identity", cfg.Identity)
				s.Run(ctx)
			},
			OnStoppedLeading: func() {
				s.logger.Info("stopped leading", "identity", cfg.Identity)
			},
		},
	})
	if err != nil {
		return fmt.Errorf("scheduler leader election: %w", err)
	}
	elector.Run(ctx)
	if ctx.Err() == nil {
		return ErrLeadershipLost
	}
	return nil
}
