package simnode

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/skiff-sh/skiff/internal/version"
)

const (
	// MaxNodeIndex bounds FirstIndex+Nodes: every node gets its own /24 of fake pod addresses in
	// 10.128.0.0/9, which holds 32,768 of them.
	MaxNodeIndex = 1 << 15

	defaultNamePrefix        = "sim-node-"
	defaultHeartbeatInterval = 10 * time.Second
	defaultLeaseDuration     = 40 * time.Second
	defaultWorkers           = 16
)

// defaultKubeletVersion is what simulated kubelets report: the binary's own version (which a build
// may set at link time, internal/version), marked as simulated.
func defaultKubeletVersion() string { return version.GitVersion + "-sim" }

// CompletePodsFunc decides whether and when a running simulated pod finishes: ok reports that it
// does, after is how long after it started, exitCode 0 makes it Succeeded and anything else Failed.
// It is called once per pod and must not modify the pod. Pods finish as told whatever their
// restartPolicy: the simulator never restarts containers.
type CompletePodsFunc func(pod *corev1.Pod) (exitCode int32, after time.Duration, ok bool)

// Config describes a set of simulated nodes.
type Config struct {
	// Client reaches the cluster. Its rate limits (rest.Config QPS and Burst) bound how fast
	// pods are reported Running; set them high for benchmarks.
	Client kubernetes.Interface
	// Nodes is how many nodes to simulate.
	Nodes int
	// NamePrefix names the nodes NamePrefix+index (default "sim-node-").
	NamePrefix string
	// FirstIndex is the index of the first node. Simulators sharing a cluster use disjoint index
	// ranges so that their fake pod and host addresses do not collide.
	FirstIndex int
	// Capacity of every node; also its allocatable. Default cpu 4, memory 16Gi, pods 110,
	// ephemeral-storage 100Gi. Resources left out of a non-empty Capacity are not defaulted.
	Capacity corev1.ResourceList
	// Labels are added to every node beside kubernetes.io/hostname, os and arch.
	Labels map[string]string
	// Taints are set on every node at registration.
	Taints []corev1.Taint
	// HeartbeatInterval is how often each node's Lease is renewed (default 10s).
	HeartbeatInterval time.Duration
	// LeaseDuration is written into each Lease (default 40s, the kubelet's default).
	LeaseDuration time.Duration
	// PodStartDelay is how long after a pod is first seen bound it is reported Running (0: at once).
	PodStartDelay time.Duration
	// CompletePods, when set, makes pods finish (see CompletePodsFunc). Nil: pods run forever.
	CompletePods CompletePodsFunc
	// Workers is how many pods are handled at once (default 16).
	Workers int
	// KubeletVersion is reported in each node's nodeInfo.
	KubeletVersion string
	// Clock is the time source (default the real clock).
	Clock clock.WithTicker
	// Logger receives errors the simulator retries (default slog.Default()).
	Logger *slog.Logger
}

// DefaultCapacity is what a simulated node offers when Config.Capacity is empty.
func DefaultCapacity() corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse("4"),
		corev1.ResourceMemory:           resource.MustParse("16Gi"),
		corev1.ResourcePods:             resource.MustParse("110"),
		corev1.ResourceEphemeralStorage: resource.MustParse("100Gi"),
	}
}

// Default fills unset fields.
func (c *Config) Default() {
	if c.NamePrefix == "" {
		c.NamePrefix = defaultNamePrefix
	}
	if len(c.Capacity) == 0 {
		c.Capacity = DefaultCapacity()
	}
	if c.HeartbeatInterval == 0 {
		c.HeartbeatInterval = defaultHeartbeatInterval
	}
	if c.LeaseDuration == 0 {
		c.LeaseDuration = defaultLeaseDuration
	}
	if c.Workers == 0 {
		c.Workers = defaultWorkers
	}
	if c.KubeletVersion == "" {
		c.KubeletVersion = defaultKubeletVersion()
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Validate reports every problem with a defaulted Config.
func (c *Config) Validate() error {
	var errs []error
	if c.Client == nil {
		errs = append(errs, errors.New("client is required"))
	}
	if c.Nodes < 0 {
		errs = append(errs, fmt.Errorf("nodes must not be negative, got %d", c.Nodes))
	}
	if c.FirstIndex < 0 {
		errs = append(errs, fmt.Errorf("first index must not be negative, got %d", c.FirstIndex))
	}
	if c.FirstIndex+c.Nodes > MaxNodeIndex {
		errs = append(errs, fmt.Errorf("first index + nodes must be at most %d, got %d", MaxNodeIndex, c.FirstIndex+c.Nodes))
	}
	for _, msg := range validation.IsDNS1123Subdomain(c.NamePrefix + "0") {
		errs = append(errs, fmt.Errorf("name prefix %q does not make valid node names: %s", c.NamePrefix, msg))
	}
	if c.HeartbeatInterval <= 0 {
		errs = append(errs, fmt.Errorf("heartbeat interval must be positive, got %s", c.HeartbeatInterval))
	}
	if c.LeaseDuration < time.Second {
		errs = append(errs, fmt.Errorf("lease duration must be at least 1s, got %s", c.LeaseDuration))
	}
	if c.PodStartDelay < 0 {
		errs = append(errs, fmt.Errorf("pod start delay must not be negative, got %s", c.PodStartDelay))
	}
	if c.Workers < 1 {
		errs = append(errs, fmt.Errorf("workers must be at least 1, got %d", c.Workers))
	}
	for name, q := range c.Capacity {
		if q.Sign() < 0 {
			errs = append(errs, fmt.Errorf("capacity %s must not be negative, got %s", name, q.String()))
		}
	}
	return errors.Join(errs...)
}
