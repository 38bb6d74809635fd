package cloudmanager

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/skiff-sh/skiff/internal/cloudprovider"
	"github.com/skiff-sh/skiff/internal/controller/cloudroutes"
	"github.com/skiff-sh/skiff/internal/controller/ctrlutil"
	"github.com/skiff-sh/skiff/internal/controller/servicelb"
	"github.com/skiff-sh/skiff/internal/leader"
)

// LeaseName is the cloud controller manager's Lease in kube-system (upstream's name).
const LeaseName = "cloud-controller-manager"

// ErrLeaderElectionLost is returned when the Lease was lost while running.
var ErrLeaderElectionLost = leader.ErrLost

// Config configures Run.
type Config struct {
	Client   kubernetes.Interface
	Registry *cloudprovider.Registry
	// Provider is the --cloud-provider name; "none" (or empty) runs nothing.
	Provider    string
	ClusterName string
	Identity    string
	// LeaseDuration, RenewDeadline, RetryPeriod: the Lease's timing (leader's defaults when zero).
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// Fence, when set, is the fence of this component's client transport: Campaign gives it each
	// term, so the client writes only while the Lease is confirmed held (leader.Fence).
	Fence   *leader.Fence
	Workers int
	Clock   clock.WithTicker
	Logger  *slog.Logger
}

func (c *Config) defaults() {
	if c.ClusterName == "" {
		c.ClusterName = "skiff"
	}
	if c.Workers == 0 {
		c.Workers = 2
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// Run campaigns for the Lease and runs the provider's controllers while leading. It returns nil
// when ctx ends (or the provider is none) and ErrLeaderElectionLost when the Lease is lost.
func Run(ctx context.Context, cfg Config) error {
	cfg.defaults()
	if cfg.Provider == cloudprovider.None || cfg.Provider == "" {
		cfg.Logger.Info("no cloud provider; cloud controller manager not started")
		return nil
	}
	if !cfg.Registry.Has(cfg.Provider) {
		return fmt.Errorf("cloud controller manager: %w %q (known: %v)", cloudprovider.ErrUnknown, cfg.Provider, cfg.Registry.Names())
	}
	return leader.Campaign(ctx, leader.Config{
		Client: cfg.Client, Namespace: metav1.NamespaceSystem, Name: LeaseName, Identity: cfg.Identity,
		LeaseDuration: cfg.LeaseDuration, RenewDeadline: cfg.RenewDeadline, RetryPeriod: cfg.RetryPeriod,
		Policy: leader.ReturnOnLoss, Logger: cfg.Logger, Fence: cfg.Fence,
	}, func(ctx context.Context) error {
		cfg.Logger.Info("starting cloud controllers", "identity", cfg.Identity, "provider", cfg.Provider)
		return runTerm(ctx, &cfg)
	})
}

// runner is one controller.
type runner interface {
	Run(ctx context.Context, workers int)
}

// runTerm is one leadership term: fresh informers, provider and controllers.
func runTerm(ctx context.Context, cfg *Config) error {
	factory := informers.NewSharedInformerFactory(cfg.Client, 0)
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cfg.Client.CoreV1().Events("")})
	defer broadcaster.Shutdown()
	provider, err := cfg.Registry.New(cfg.Provider, cloudprovider.InitContext{Client: cfg.Client, Informers: factory, Logger: cfg.Logger})
	if err != nil {
		return err
	}
	deps := func(name, component string) ctrlutil.Deps {
		return ctrlutil.Deps{Client: cfg.Client, Informers: factory, Clock: cfg.Clock, Logger: cfg.Logger.With("controller", name),
			Recorder: broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: component})}
	}
	var runners []runner
	if lb, ok := provider.LoadBalancer(); ok {
		c, err := servicelb.New(deps("service-lb", "service-controller"), lb, cfg.ClusterName)
		if err != nil {
			return err
		}
		runners = append(runners, c)
	}
	if routes, ok := provider.Routes(); ok {
		c, err := cloudroutes.New(deps("cloud-node-routes", "route_controller"), routes, cfg.ClusterName)
		if err != nil {
			return err
		}
		runners = append(runners, c)
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	var wg sync.WaitGroup
	for _, r := range runners {
		wg.Add(1)
		go func() { defer wg.Done(); r.Run(ctx, cfg.Workers) }()
	}
	wg.Wait()
	return nil
}
