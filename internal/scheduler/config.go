package scheduler

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/skiff-sh/skiff/internal/leader"
	"github.com/skiff-sh/skiff/internal/scheduler/framework"
)

// Config is everything Run needs.
type Config struct {
	// Client talks to the API server; if nil, one is built from RestConfig.
	Client     kubernetes.Interface
	RestConfig *rest.Config
	// EventClient posts the scheduler's Events. Give it its own client (own rate limiter), so
	// that one Event per binding never takes tokens from the bindings; nil builds one from
	// RestConfig when set, else Events share Client.
	EventClient kubernetes.Interface
	// MaxConcurrentBinds bounds the Binding calls in flight (default 64); the scheduling loop
	// never waits for them.
	MaxConcurrentBinds int
	// Configuration holds profiles and tuning (LoadConfig from --config); nil means defaults.
	Configuration *framework.Configuration
	// Registry adds out-of-tree plugins to the in-tree ones (tests, extensions).
	Registry framework.Registry

	// LeaderElect turns on leader election; only the leader schedules and binds.
	LeaderElect bool
	LeaseName   string
	// Fence, when set, follows the terms: clients whose transport it wraps bind and write only
	// while the Lease is confirmed held (leader.Fence).
	Fence          *leader.Fence
	LeaseNamespace string
	LeaseDuration  time.Duration
	RenewDeadline  time.Duration
	RetryPeriod    time.Duration
	// Identity is this instance's holder identity in the Lease.
	Identity string

	// Registerer receives the metrics; nil means a private registry.
	Registerer prometheus.Registerer
	Clock      clock.WithTicker
	Logger     *slog.Logger

	// PrepareInformers, when set, is called with the informer factory before the scheduler asks it
	// for an informer: the node assembly registers informers that read the API server's cache in
	// process (InformerFor), so the scheduler's code stays the same.
	PrepareInformers func(informers.SharedInformerFactory)
}

// Default fills unset fields: leader election settings from the
// configuration file (Kubernetes' 15s/10s/2s, kube-system/kube-scheduler),
// identity hostname_uuid.
func (c *Config) Default() {
	if c.Configuration == nil {
		c.Configuration = framework.DefaultConfiguration()
	} else {
		c.Configuration.SetDefaults()
	}
	le := c.Configuration.LeaderElection
	if c.LeaseName == "" {
		c.LeaseName = le.ResourceName
	}
	if c.LeaseNamespace == "" {
		c.LeaseNamespace = le.ResourceNamespace
	}
	if c.LeaseDuration == 0 {
		c.LeaseDuration = le.LeaseDuration.Duration
	}
	if c.RenewDeadline == 0 {
		c.RenewDeadline = le.RenewDeadline.Duration
	}
	if c.RetryPeriod == 0 {
		c.RetryPeriod = le.RetryPeriod.Duration
	}
	if c.Identity == "" {
		host, _ := os.Hostname()
		c.Identity = host + "_" + uuid.NewString()
	}
	if c.Registerer == nil {
		c.Registerer = prometheus.NewRegistry()
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Validate reports every problem, joined.
func (c *Config) Validate() error {
	var errs []error
	if c.Client == nil && c.RestConfig == nil {
		errs = append(errs, errors.New("scheduler config: one of Client or RestConfig is required"))
	}
	if c.Configuration != nil {
		if err := c.Configuration.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if c.LeaderElect {
		if c.LeaseName == "" || c.LeaseNamespace == "" {
			errs = append(errs, errors.New("scheduler config: lease name and namespace are required"))
		}
		if c.LeaseDuration <= c.RenewDeadline {
			errs = append(errs, fmt.Errorf("scheduler config: leaseDuration (%s) must be greater than renewDeadline (%s)", c.LeaseDuration, c.RenewDeadline))
		}
		if c.RetryPeriod <= 0 || c.RenewDeadline <= c.RetryPeriod {
			errs = append(errs, fmt.Errorf("scheduler config: retryPeriod (%s) must be positive and less than renewDeadline (%s)", c.RetryPeriod, c.RenewDeadline))
		}
		if c.Identity == "" {
			errs = append(errs, errors.New("scheduler config: identity is required"))
		}
	}
	return errors.Join(errs...)
}
