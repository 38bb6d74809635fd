package kubelet

import (
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"runtime"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/informers"

	"github.com/skiff-sh/skiff/internal/version"
)

// Config configures one kubelet.
type Config struct {
	// NodeName is the Node object's name. Required.
	NodeName string
	// Roles become node-role.kubernetes.io/<role> labels.
	Roles []string
	// Labels are extra node labels.
	Labels map[string]string
	// Taints are set on the Node when it is first registered.
	Taints []corev1.Taint
	// Addresses of the node; empty means the detected primary IP
	// (InternalIP) and the node name (Hostname).
	Addresses []corev1.NodeAddress
	// PodCIDRs, when set, are written to a newly registered Node's spec;
	// otherwise the kubelet waits for the ones assigned to the Node.
	PodCIDRs []string
	// SystemReserved is subtracted from capacity to get allocatable.
	SystemReserved corev1.ResourceList
	// MaxPods is the pods capacity.
	MaxPods int
	// DataDir holds per-pod directories (logs, termination messages).
	DataDir string
	// RootDir is the kubelet's root directory as CSI drivers know it (Kubernetes' --root-dir,
	// /var/lib/kubelet on a real node): node plugins register through sockets in
	// RootDir/plugins_registry, keep their sockets under RootDir/plugins, and publish volumes
	// into RootDir/pods/<uid>/volumes/kubernetes.io~csi/<name>/mount. Default DataDir; the
	// kubelet's other files stay in DataDir.
	RootDir string
	// NodeLogDir is the node's log directory the kubelet API serves under /logs/ (nodes/log, as
	// Kubernetes' kubelet serves /var/log); default /var/log.
	NodeLogDir string
	// CNIConfDir, when set, receives the bridge network list for the node's
	// pod CIDRs (the supervised containerd's conf dir). Empty when the runtime
	// is configured externally.
	CNIConfDir string
	// CNIBridge names the bridge in the network list; default "cni0".
	CNIBridge string
	// SkiffCNI makes the network list name skiff's own CNI plugin
	// (internal/cni) instead of bridge, host-local and portmap; the runtime's
	// CNI bin dir must hold it (containerd.Config.SkiffCNIBinary). Its address
	// leases live in DataDir/cni.
	SkiffCNI bool
	// CNIPortmapPath is the portmap plugin skiff's plugin runs for pods with
	// hostPorts; default /usr/lib/cni/portmap.
	CNIPortmapPath string
	// CNINetworkName names the network list (and host-local IPAM's state
	// dir); default "skiff".
	CNINetworkName string
	// ClusterDNS are the nameservers of ClusterFirst pods. Only addresses a
	// Service answers on are used: with none (nothing serves cluster DNS
	// yet, or none configured) ClusterFirst pods fall back to the node's
	// resolv.conf, as upstream does without cluster DNS.
	ClusterDNS []string
	// ClusterDomain is the cluster's DNS domain: the search domains of
	// ClusterFirst pods and the pods' /etc/hosts names end with it.
	ClusterDomain string
	// ResolvConf is the node resolv.conf pods with policy Default (and the
	// host search domains of ClusterFirst pods) get; empty picks
	// /etc/resolv.conf, or systemd-resolved's upstream file when
	// /etc/resolv.conf only names its loopback stub.
	ResolvConf string
	// AllowedUnsafeSysctls are sysctls (names, or prefixes ending in "*")
	// pods may set besides the safe ones; each must be namespaced
	// (net.*, kernel.shm*, kernel.msg*, kernel.sem, fs.mqueue.*).
	AllowedUnsafeSysctls []string
	// RuntimeHandler is the CRI runtime handler pods run with ("" default).
	RuntimeHandler string
	// KubeletVersion is reported in nodeInfo.
	KubeletVersion string
	// Port is the kubelet endpoint port advertised in the Node status.
	Port int32
	// PodManifestPath is a directory of static pod manifests, mirrored
	// into the API; empty disables static pods.
	PodManifestPath string
	// StaticPodResyncPeriod is how often the manifest directory is read.
	StaticPodResyncPeriod time.Duration
	// SyncFrequency is how often a running pod with API-backed volumes
	// (configMap, secret, downwardAPI, projected) is synced again, which
	// refreshes their files: upstream's syncFrequency. Default 1 minute.
	SyncFrequency time.Duration

	// LeaseDuration is the node Lease's leaseDurationSeconds.
	LeaseDuration time.Duration
	// LeaseRenewInterval is how often the Lease is renewed.
	LeaseRenewInterval time.Duration
	// NodeStatusUpdateFrequency is how often node status is computed and
	// posted if changed.
	NodeStatusUpdateFrequency time.Duration
	// NodeStatusReportFrequency is how often status is posted even unchanged.
	NodeStatusReportFrequency time.Duration
	// NodeStatusNotReadyInterval is how often node status is computed while the posted status is
	// not Ready (a new node whose pod network is configured after it registers, a runtime that
	// comes back), so Ready is posted within this of the runtime's readiness rather than up to
	// NodeStatusUpdateFrequency later: upstream's fast status update at start-up. It only reads
	// the runtime; the status is posted when it changed. Default 100ms.
	NodeStatusNotReadyInterval time.Duration
	// MaxParallelSandboxes bounds how many pod sandboxes are being created at
	// once (the runtime's heaviest call: a shim, runc and the CNI plugin per
	// sandbox); more pods wait their turn with their first status written.
	// Default: 2 per CPU, at least 4.
	MaxParallelSandboxes int
	// RelistPeriod is how often container states are compared with the
	// previous listing to notice exits.
	RelistPeriod time.Duration
	// HousekeepingPeriod is how often runtime pods without an API pod are
	// cleaned up.
	HousekeepingPeriod time.Duration
	// CrashLoopInitialBackoff, CrashLoopMaxBackoff and CrashLoopResetAfter
	// shape restart back-off of failing containers.
	CrashLoopInitialBackoff time.Duration
	CrashLoopMaxBackoff     time.Duration
	CrashLoopResetAfter     time.Duration
	// PrepareInformers, when set, is called once with the kubelet's two informer factories, before
	// it asks them for an informer: pods, whose lists and watches onThisNode narrows to this
	// node's pods, and services (for the pods' environment variables). A node that also runs the
	// API server registers informers reading its watch cache there.
	PrepareInformers func(pods informers.SharedInformerFactory, onThisNode func(*metav1.ListOptions), services informers.SharedInformerFactory)
}

// Default returns a Config for nodeName with every optional field set.
func Default(nodeName, dataDir string) Config {
	c := Config{NodeName: nodeName, DataDir: dataDir}
	return c.WithDefaults()
}

// WithDefaults returns c with unset optional fields filled in.
func (c Config) WithDefaults() Config {
	if c.MaxPods == 0 {
		c.MaxPods = 110
	}
	if c.CNIBridge == "" {
		c.CNIBridge = "cni0"
	}
	if c.RootDir == "" {
		c.RootDir = c.DataDir
	}
	if c.NodeLogDir == "" {
		c.NodeLogDir = "/var/log"
	}
	if c.CNIPortmapPath == "" {
		c.CNIPortmapPath = "/usr/lib/cni/portmap"
	}
	if c.CNINetworkName == "" {
		c.CNINetworkName = "skiff"
	}
	if c.ClusterDomain == "" {
		c.ClusterDomain = "cluster.local"
	}
	if c.KubeletVersion == "" {
		c.KubeletVersion = version.GitVersion
	}
	if c.Port == 0 {
		c.Port = 10250
	}
	if c.MaxParallelSandboxes <= 0 {
		c.MaxParallelSandboxes = max(4, 2*runtime.NumCPU())
	}
	durations := []struct {
		field *time.Duration
		value time.Duration
	}{
		{&c.LeaseDuration, 40 * time.Second},
		{&c.LeaseRenewInterval, 10 * time.Second},
		{&c.NodeStatusUpdateFrequency, 10 * time.Second},
		{&c.NodeStatusReportFrequency, 5 * time.Minute},
		{&c.NodeStatusNotReadyInterval, 100 * time.Millisecond},
		{&c.RelistPeriod, time.Second},
		{&c.HousekeepingPeriod, 30 * time.Second},
		{&c.StaticPodResyncPeriod, 20 * time.Second},
		{&c.SyncFrequency, time.Minute},
		{&c.CrashLoopInitialBackoff, 10 * time.Second},
		{&c.CrashLoopMaxBackoff, 5 * time.Minute},
		{&c.CrashLoopResetAfter, 10 * time.Minute},
	}
	for _, d := range durations {
		if *d.field == 0 {
			*d.field = d.value
		}
	}
	return c
}

// Validate reports every problem of a defaulted Config.
func (c Config) Validate() error {
	var errs []error
	if c.NodeName == "" {
		errs = append(errs, errors.New("nodeName: required"))
	} else if msgs := validation.IsDNS1123Subdomain(c.NodeName); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("nodeName: %q: %v", c.NodeName, msgs))
	}
	if c.DataDir == "" || !filepath.IsAbs(c.DataDir) {
		errs = append(errs, fmt.Errorf("dataDir: %q must be an absolute path", c.DataDir))
	}
	if !filepath.IsAbs(c.RootDir) {
		errs = append(errs, fmt.Errorf("rootDir: %q must be an absolute path", c.RootDir))
	}
	for _, role := range c.Roles {
		if msgs := validation.IsQualifiedName(roleLabelPrefix + role); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("roles: %q: %v", role, msgs))
		}
	}
	for k, v := range c.Labels {
		if msgs := validation.IsQualifiedName(k); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("labels: key %q: %v", k, msgs))
		}
		if msgs := validation.IsValidLabelValue(v); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("labels: value %q: %v", v, msgs))
		}
	}
	for _, cidr := range c.PodCIDRs {
		if _, err := netip.ParsePrefix(cidr); err != nil {
			errs = append(errs, fmt.Errorf("podCIDRs: %q: %w", cidr, err))
		}
	}
	for _, ip := range c.ClusterDNS {
		if _, err := netip.ParseAddr(ip); err != nil {
			errs = append(errs, fmt.Errorf("clusterDNS: %q is not an IP address", ip))
		}
	}
	if _, err := newSysctlAllowlist(c.AllowedUnsafeSysctls); err != nil {
		errs = append(errs, fmt.Errorf("allowedUnsafeSysctls: %w", err))
	}
	for name, q := range c.SystemReserved {
		if q.Sign() < 0 {
			errs = append(errs, fmt.Errorf("systemReserved: %s: %s is negative", name, q.String()))
		}
	}
	if c.PodManifestPath != "" && !filepath.IsAbs(c.PodManifestPath) {
		errs = append(errs, fmt.Errorf("podManifestPath: %q must be an absolute path", c.PodManifestPath))
	}
	if c.MaxPods <= 0 {
		errs = append(errs, fmt.Errorf("maxPods: %d must be positive", c.MaxPods))
	}
	if c.LeaseRenewInterval >= c.LeaseDuration {
		errs = append(errs, fmt.Errorf("leaseRenewInterval: %v must be shorter than leaseDuration %v", c.LeaseRenewInterval, c.LeaseDuration))
	}
	if c.CrashLoopMaxBackoff < c.CrashLoopInitialBackoff {
		errs = append(errs, fmt.Errorf("crashLoopMaxBackoff: %v must be >= crashLoopInitialBackoff %v", c.CrashLoopMaxBackoff, c.CrashLoopInitialBackoff))
	}
	return errors.Join(errs...)
}

// ParseSystemReserved parses a --system-reserved value such as
// "cpu=500m,memory=512Mi".
func ParseSystemReserved(value string) (corev1.ResourceList, error) {
	out := corev1.ResourceList{}
	if value == "" {
		return out, nil
	}
	for _, pair := range splitNonEmpty(value, ',') {
		name, qty, ok := cut(pair, '=')
		if !ok {
			return nil, fmt.Errorf("system-reserved: %q is not name=quantity", pair)
		}
		switch corev1.ResourceName(name) {
		case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage, corev1.ResourcePods:
		default:
			return nil, fmt.Errorf("system-reserved: unsupported resource %q", name)
		}
		q, err := resource.ParseQuantity(qty)
		if err != nil {
			return nil, fmt.Errorf("system-reserved: %s: %w", name, err)
		}
		if q.Sign() < 0 {
			return nil, fmt.Errorf("system-reserved: %s: %s is negative", name, qty)
		}
		out[corev1.ResourceName(name)] = q
	}
	return out, nil
}

func splitNonEmpty(s string, sep byte) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == sep {
			if part := s[start:i]; part != "" {
				out = append(out, part)
			}
			start = i + 1
		}
	}
	return out
}

func cut(s string, sep byte) (string, string, bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == sep {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}
