package manager

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/skiff-sh/skiff/internal/controller/ctrlutil"
	"github.com/skiff-sh/skiff/internal/leader"
)

// ErrLeaderElectionLost is returned by Run when this instance lost the Lease
// while running; the caller should exit (or Run again) as kube-controller-manager does.
var ErrLeaderElectionLost = leader.ErrLost

// constructor builds one controller from the shared dependencies. It returns
// (nil, nil) when the controller cannot run with this config (and says why in
// the log), e.g. nodeipam without a cluster CIDR.
type constructor func(deps ctrlutil.Deps, cfg *Config) (ctrlutil.Runner, error)

// Run runs the controllers selected by cfg.Controllers until ctx is done,
// only while holding the leader Lease (unless leader election is disabled).
// It returns nil when ctx ends and ErrLeaderElectionLost when the Lease is lost.
func Run(ctx context.Context, cfg Config) error {
	return run(ctx, cfg, constructors())
}

func run(ctx context.Context, cfg Config, registry map[string]constructor) error {
	cfg.Default()
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("controller manager config: %w", err)
	}
	enabled, err := ParseControllers(cfg.Controllers)
	if err != nil {
		return fmt.Errorf("controller manager: %w", err)
	}
	explicit := sets.New(cfg.Controllers...)
	for _, name := range sortedNames(enabled) {
		if _, ok := registry[name]; !ok {
			if explicit.Has(name) {
				return fmt.Errorf("controller manager: controller %q is not available yet", name)
			}
			cfg.Logger.Warn("controller not available yet; skipping", "controller", name)
			enabled.Delete(name)
		}
	}
	metrics, err := ctrlutil.NewMetrics(cfg.Registerer)
	if err != nil {
		return fmt.Errorf("controller manager metrics: %w", err)
	}
	runControllers := func(ctx context.Context) error {
		return runTerm(ctx, &cfg, registry, enabled, metrics)
	}
	if cfg.LeaderElection.Disabled {
		return runControllers(ctx)
	}
	return runElected(ctx, &cfg, runControllers)
}

func runElected(ctx context.Context, cfg *Config, runControllers func(context.Context) error) error {
	le := cfg.LeaderElection
	return leader.Campaign(ctx, leader.Config{
		Client: cfg.Client, Namespace: le.Namespace, Name: le.Name, Identity: cfg.Identity,
		LeaseDuration: le.LeaseDuration, RenewDeadline: le.RenewDeadline, RetryPeriod: le.RetryPeriod,
		Policy: leader.ReturnOnLoss, Logger: cfg.Logger, Fence: le.Fence,
	}, runControllers)
}

// runTerm is one leadership term: fresh informers, recorder and controllers,
// all stopped when ctx ends.
func runTerm(ctx context.Context, cfg *Config, registry map[string]constructor, enabled sets.Set[string], metrics *ctrlutil.Metrics) error {
	factory := informers.NewSharedInformerFactory(cfg.Client, cfg.ResyncPeriod)
	if cfg.PrepareInformers != nil {
		cfg.PrepareInformers(factory)
	}
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cfg.Client.CoreV1().Events("")})
	defer broadcaster.Shutdown()

	var runners []namedRunner
	for _, name := range sortedNames(enabled) {
		deps := ctrlutil.Deps{
			Client:       cfg.Client,
			Informers:    factory,
			Clock:        cfg.Clock,
			Recorder:     broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: componentName(name)}),
			QueueMetrics: metrics,
			Observe:      metrics.ObserveReconcile,
			Logger:       cfg.Logger.With("controller", name),
		}
		r, err := registry[name](deps, cfg)
		if err != nil {
			return fmt.Errorf("controller manager: build %s: %w", name, err)
		}
		if r == nil {
			continue
		}
		runners = append(runners, namedRunner{name, r})
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()

	var wg sync.WaitGroup
	for _, r := range runners {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cfg.Logger.Debug("started controller", "controller", r.name)
			r.runner.Run(ctx, cfg.Workers)
		}()
	}
	wg.Wait()
	return nil
}

type namedRunner struct {
	name   string
	runner ctrlutil.Runner
}

// componentName is the Event source Kubernetes' controllers use.
func componentName(controller string) string {
	switch controller {
	case GarbageCollector:
		return "garbage-collector-controller"
	case NodeLifecycle:
		return "node-controller"
	case EndpointSlice:
		return "endpoint-slice-controller"
	default:
		return controller + "-controller"
	}
}
