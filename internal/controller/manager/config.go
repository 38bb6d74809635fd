package manager

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
	gatewayclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"github.com/skiff-sh/skiff/internal/leader"
	"github.com/skiff-sh/skiff/internal/pki"
)

// Config is everything the controller manager needs. Fill what you know, call
// Default(), then Validate() (Run does both).
type Config struct {
	// Client reaches the API server. Required.
	Client kubernetes.Interface
	// Dynamic reaches every resource by GVR; the garbage collector and the
	// namespace controller need it and are skipped (with a warning) without it.
	Dynamic dynamic.Interface

	// Identity names this instance in the leader Lease; default hostname_pid.
	Identity string
	// Controllers is the --controllers value; default ["*"].
	Controllers []string
	// Workers is the number of concurrent reconciles per controller (default 5).
	Workers int
	// ResyncPeriod is the informers' resync period (default 12h).
	ResyncPeriod time.Duration

	LeaderElection LeaderElection

	// NodeMonitorGracePeriod: a node not heard from for this long is marked
	// Ready=Unknown (default 40s).
	NodeMonitorGracePeriod time.Duration
	// ClusterCIDR is --cluster-cidr; nodeipam allocates per-node podCIDRs
	// of NodeCIDRMaskSize bits (default 24) from it. Empty disables nodeipam.
	ClusterCIDR      string
	NodeCIDRMaskSize int
	// TerminatedPodGCThreshold: podgc deletes terminated pods beyond this
	// many (default 12500, as kube-controller-manager).
	TerminatedPodGCThreshold int

	// RootCA is the cluster CA bundle (PEM) root-ca-cert-publisher puts in every namespace.
	RootCA []byte
	// RootCAFile, when set, is the bundle's file, which the publisher reads instead of RootCA
	// and follows (a CA rotation changes it) every few seconds.
	RootCAFile string
	// ClusterSigningCA issues the certificates of approved CertificateSigningRequests (what
	// kube-controller-manager reads from --cluster-signing-cert-file and --cluster-signing-key-file);
	// without it csrsigning is not started.
	ClusterSigningCA *pki.CA
	// ClusterSigningDuration is the longest certificate csrsigning issues (--cluster-signing-duration,
	// default 8760h, one year); a request's spec.expirationSeconds may only shorten it.
	ClusterSigningDuration time.Duration

	// Logger receives the manager's and every controller's logs (each tagged controller=<name>);
	// default: discarded.
	Logger *slog.Logger

	// LocalPathDir is where local-path-provisioner puts volumes on every node (default
	// /var/lib/skiff/storage); LocalPathHelperImage runs the pod that removes a deleted volume's
	// directory (default busybox).
	LocalPathDir         string
	LocalPathHelperImage string

	// Clock drives every controller's time; default the real clock.
	Clock clock.WithTicker
	// Registerer receives the metrics; default a fresh registry (discarded).
	Registerer prometheus.Registerer

	// HPA configures the horizontal pod autoscaler (hpa.go).
	HPA HPAConfig

	// GatewayAPI reaches the Gateway API resources; the gateway controller is skipped (with a
	// warning) without it.
	GatewayAPI gatewayclient.Interface

	// PrepareInformers, when set, is called with each leadership term's informer factory before
	// any controller asks it for an informer: the node assembly registers informers that read the
	// API server's cache in process (InformerFor), so the controllers' code stays the same.
	PrepareInformers func(informers.SharedInformerFactory)
}

// LeaderElection configures the Lease that makes one manager active.
type LeaderElection struct {
	// Disabled runs the controllers without a Lease (a single instance only).
	Disabled      bool
	Namespace     string        // default kube-system
	Name          string        // default kube-controller-manager
	LeaseDuration time.Duration // default 15s
	RenewDeadline time.Duration // default 10s
	RetryPeriod   time.Duration // default 2s
	// Fence, when set, follows the terms: Client and the other clients built on a rest.Config
	// whose transport it wraps write only while the Lease is confirmed held (leader.Fence).
	Fence *leader.Fence
}

// Default fills unset fields with kube-controller-manager's defaults.
func (c *Config) Default() {
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Identity == "" {
		host, _ := os.Hostname()
		c.Identity = fmt.Sprintf("%s_%d", host, os.Getpid())
	}
	if c.Controllers == nil {
		c.Controllers = []string{"*"}
	}
	if c.Workers == 0 {
		c.Workers = 5
	}
	if c.ResyncPeriod == 0 {
		c.ResyncPeriod = 12 * time.Hour
	}
	le := &c.LeaderElection
	if le.Namespace == "" {
		le.Namespace = "kube-system"
	}
	if le.Name == "" {
		le.Name = "kube-controller-manager"
	}
	if le.LeaseDuration == 0 {
		le.LeaseDuration = 15 * time.Second
	}
	if le.RenewDeadline == 0 {
		le.RenewDeadline = 10 * time.Second
	}
	if le.RetryPeriod == 0 {
		le.RetryPeriod = 2 * time.Second
	}
	if c.NodeMonitorGracePeriod == 0 {
		c.NodeMonitorGracePeriod = 40 * time.Second
	}
	if c.NodeCIDRMaskSize == 0 {
		c.NodeCIDRMaskSize = 24
	}
	if c.TerminatedPodGCThreshold == 0 {
		c.TerminatedPodGCThreshold = 12500
	}
	if c.ClusterSigningDuration == 0 {
		c.ClusterSigningDuration = 365 * 24 * time.Hour
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	if c.Registerer == nil {
		c.Registerer = prometheus.NewRegistry()
	}
}

// Validate reports every problem with the config at once.
func (c *Config) Validate() error {
	var errs []error
	if c.Client == nil {
		errs = append(errs, errors.New("client is required"))
	}
	if _, err := ParseControllers(c.Controllers); err != nil {
		errs = append(errs, fmt.Errorf("controllers: %w", err))
	}
	if c.Workers < 1 {
		errs = append(errs, fmt.Errorf("workers must be at least 1, got %d", c.Workers))
	}
	if c.ResyncPeriod < 0 {
		errs = append(errs, fmt.Errorf("resync period must not be negative, got %s", c.ResyncPeriod))
	}
	le := c.LeaderElection
	if !le.Disabled {
		if le.LeaseDuration <= le.RenewDeadline {
			errs = append(errs, fmt.Errorf("leader election: lease duration %s must be greater than renew deadline %s", le.LeaseDuration, le.RenewDeadline))
		}
		// client-go's leader elector refuses a renew deadline within the jittered retry period.
		if float64(le.RenewDeadline) <= 1.2*float64(le.RetryPeriod) {
			errs = append(errs, fmt.Errorf("leader election: renew deadline %s must be greater than 1.2 x retry period %s", le.RenewDeadline, le.RetryPeriod))
		}
		if le.RetryPeriod <= 0 {
			errs = append(errs, fmt.Errorf("leader election: retry period must be positive, got %s", le.RetryPeriod))
		}
	}
	if c.NodeMonitorGracePeriod <= 0 {
		errs = append(errs, fmt.Errorf("node monitor grace period must be positive, got %s", c.NodeMonitorGracePeriod))
	}
	if c.ClusterCIDR != "" {
		_, cidr, err := net.ParseCIDR(c.ClusterCIDR)
		if err != nil {
			errs = append(errs, fmt.Errorf("cluster CIDR: %w", err))
		} else if ones, bits := cidr.Mask.Size(); c.NodeCIDRMaskSize < ones || c.NodeCIDRMaskSize > bits {
			errs = append(errs, fmt.Errorf("node CIDR mask size %d must be between %d and %d for cluster CIDR %s", c.NodeCIDRMaskSize, ones, bits, c.ClusterCIDR))
		}
	}
	if c.ClusterSigningDuration < 0 {
		errs = append(errs, fmt.Errorf("cluster signing duration must not be negative, got %s", c.ClusterSigningDuration))
	}
	if c.TerminatedPodGCThreshold < 0 {
		errs = append(errs, fmt.Errorf("terminated pod GC threshold must not be negative, got %d", c.TerminatedPodGCThreshold))
	}
	return errors.Join(errs...)
}
