package cluster

import (
	"errors"
	"fmt"
	"github.com/skiff-sh/skiff/internal/etcd"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/skiff-sh/skiff/internal/kubelet"
	"github.com/skiff-sh/skiff/internal/proxy"
)

// Role names a node role.
type Role string

const (
	RoleEtcd         Role = "etcd"
	RoleControlPlane Role = "controlplane"
	RoleWorker       Role = "worker"
)

// AllRoles is the default: a single node that is the whole cluster.
var AllRoles = []Role{RoleEtcd, RoleControlPlane, RoleWorker}

// ParseRoles reads a comma-separated role list.
func ParseRoles(s string) ([]Role, error) {
	var roles []Role
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		r := Role(part)
		if !slices.Contains(AllRoles, r) {
			return nil, fmt.Errorf("unknown role %q: valid roles are etcd, controlplane, worker", part)
		}
		if !slices.Contains(roles, r) {
			roles = append(roles, r)
		}
	}
	if len(roles) == 0 {
		return nil, errors.New("at least one role is required")
	}
	return roles, nil
}

// Config is one skiff node's configuration: what every node has (its data dir, roles, addresses,
// name and the cluster it joins) and one part per concern. The parts are embedded so that cfg.Field
// reads a field wherever it lives; Validate checks each part on its own, then what spans parts
// (roles against etcd, join and runtime settings).
type Config struct {
	// DataDir holds everything the node keeps: certificates, etcd's data, the kubelet's state.
	DataDir string
	// Roles are what this node runs (default: all of them).
	Roles []Role
	// BindAddress is the address the node's servers listen on (default 0.0.0.0).
	BindAddress string
	// AdvertiseAddress is the address other nodes and clients use; empty picks the bind address, or
	// 127.0.0.1 when binding to all addresses.
	AdvertiseAddress string
	// NodeName names this node (default: the host name).
	NodeName string
	// MemoryLimit is the Go runtime's soft memory limit for the process in bytes (memlimit.go;
	// --memory-limit): 0 or MemoryLimitOff leaves it to GOMEMLIMIT, when set, or none.
	MemoryLimit int64
	// Server is the API server (https://HOST:PORT) of the cluster this node joins; empty starts or
	// restarts a cluster of its own. Token is the join token (`skiff token create`), needed only
	// until the node has its certificates (a restart needs none).
	Server string
	Token  string
	// Logger is every component's logger (default: slog's).
	Logger *slog.Logger
	EtcdConfig
	ControlPlaneConfig
	WorkerConfig
	NetworkConfig
	SecurityConfig
}

// EtcdConfig is the node's etcd: the embedded member's ports, quota and join, or the external
// etcd and its client TLS, and the scheduled snapshots.
type EtcdConfig struct {
	// EtcdClientPort and EtcdPeerPort are the embedded member's client (gRPC) and peer ports.
	EtcdClientPort int
	// EtcdHTTPPort serves the embedded member's HTTP endpoints (/health, /metrics, /version, with the
	// same mutual TLS) on the etcd listen address; 0 puts them on a loopback port the system picks.
	// The client port serves gRPC alone.
	EtcdHTTPPort int
	EtcdPeerPort int
	// EtcdServers, when set, is an external etcd cluster used instead of an embedded member.
	EtcdServers []string
	// EtcdCAFile, EtcdCertFile and EtcdKeyFile are the TLS files of the external etcd's clients
	// (--etcd-cafile, --etcd-certfile, --etcd-keyfile), as kube-apiserver's flags.
	EtcdCAFile, EtcdCertFile, EtcdKeyFile string
	// EtcdJoinKubeconfig, for a node with the etcd role and no etcd data yet, is an admin
	// kubeconfig of the running cluster: the node's member joins that cluster as a learner through
	// the API server's membership endpoints and is promoted once caught up (--etcd-join-kubeconfig).
	EtcdJoinKubeconfig string
	// EtcdQuotaBackendBytes is the size an embedded member's database may grow to before etcd
	// refuses writes with NOSPACE (0: etcd's default, 2 GiB).
	EtcdQuotaBackendBytes int64
	// EtcdDiskReserveBytes is the free space an embedded member's file system keeps for etcd:
	// below it API writes are refused (0: etcd.DiskReserve, 5% of the file system between 64 MiB
	// and 1 GiB). Hosts whose disk other tenants fill, as test machines, keep less.
	EtcdDiskReserveBytes int64
	// Snapshots are the scheduled etcd snapshots and the cluster reset (etcdsnapshot.go).
	Snapshots SnapshotConfig
}

// ControlPlaneConfig is what a control-plane node runs: the API server's port, limits and
// aggregation, the controller manager's and the scheduler's settings, storage and metrics.
type ControlPlaneConfig struct {
	// HTTPSPort is the API server's port (default 6443).
	HTTPSPort int
	// DisableLocalInformers makes the controller manager and scheduler of a control-plane node read
	// through client-go like remote components, instead of from the API server's watch cache in
	// process (onecopy.go); for comparisons and as an escape hatch.
	DisableLocalInformers bool
	// DisableScheduler and DisableControllerManager keep a control-plane node from running skiff's
	// own scheduler or controller manager, so others (upstream kube-scheduler and
	// kube-controller-manager, see upstream.go) can take their place.
	DisableScheduler         bool
	DisableControllerManager bool
	// CloudProvider is the cloud controller manager's provider: "local" (default) or "none".
	CloudProvider string
	// Controllers selects controllers as kube-controller-manager's --controllers does.
	Controllers []string
	// NodeMonitorGracePeriod is how long a node may go unheard before the node lifecycle
	// controller marks it Ready=Unknown (0: the controller manager's default, 40s).
	NodeMonitorGracePeriod time.Duration
	// DefaultNotReadyTolerationSeconds and DefaultUnreachableTolerationSeconds are the seconds of
	// the NoExecute tolerations admission adds to pods that have none for the not-ready and
	// unreachable taints (kube-apiserver's flags of those names; nil: 300).
	DefaultNotReadyTolerationSeconds    *int64
	DefaultUnreachableTolerationSeconds *int64
	// ClusterSigningDuration is the longest certificate the csrsigning controller issues from the
	// cluster CA (0: the controller manager's default, one year).
	ClusterSigningDuration time.Duration
	// HPASyncPeriod is how often the horizontal pod autoscaler syncs every HPA
	// (--horizontal-pod-autoscaler-sync-period; 0: 15s); HPATolerance is the usage ratio's
	// distance from 1 within which it does not scale (--horizontal-pod-autoscaler-tolerance; 0: 0.1).
	HPASyncPeriod time.Duration
	HPATolerance  float64
	// HPADownscaleStabilization is how long the horizontal pod autoscaler looks back for a
	// higher recommendation before scaling down (--horizontal-pod-autoscaler-downscale-stabilization; 0: 5m).
	HPADownscaleStabilization time.Duration
	// ManifestsDir is the auto-deployed manifests directory of a control-plane node: its YAML and
	// JSON files are applied and kept applied (manifests.go; empty: <data-dir>/manifests).
	ManifestsDir string
	// LeaderElection tunes the Leases the scheduler and controller manager elect their leader with;
	// zero values take Kubernetes' defaults (15 s, 10 s, 2 s).
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// SchedulerConfig is the scheduler's configuration file (profiles and plugins); empty uses defaults.
	SchedulerConfig string
	// LocalPathDir is where the built-in local-path provisioner puts volumes on worker nodes, one
	// directory per volume (default <data-dir>/storage, read from the controller manager's data dir:
	// nodes are expected to share the layout). LocalPathHelperImage runs the pod that removes a
	// deleted volume's directory.
	LocalPathDir         string
	LocalPathHelperImage string
	// StorageEncoding is "protobuf" or "json" (see README: protobuf is the measured default).
	StorageEncoding string
	// Server limits of the API server: RequestTimeout bounds a request that is not long-running,
	// MinRequestTimeout a watch without timeoutSeconds, IdleConnectionTimeout an idle keep-alive
	// connection; MaxConnectionsPerClient the connections one client address holds (0: unbounded).
	RequestTimeout, MinRequestTimeout, IdleConnectionTimeout time.Duration
	MaxConnectionsPerClient                                  int
	// MaxRequestsInflight is API Priority and Fairness' total seats, shared by the limited
	// priority levels (kube-apiserver's --max-requests-inflight plus --max-mutating-requests-inflight).
	MaxRequestsInflight int
	// API aggregation: the front-proxy certificates and --requestheader-* settings (aggregation.go).
	Aggregation AggregationOptions
	// ReadHeaderTimeout bounds how long a client may take to send its request headers to the API
	// server (0: DefaultReadHeaderTimeout, 32 s as kube-apiserver).
	ReadHeaderTimeout time.Duration
	// MetricsResolution is how often the API server scrapes every Ready kubelet's resource metrics
	// for metrics.k8s.io (0: 15 s, metrics-server's --metric-resolution default).
	MetricsResolution time.Duration
}

// WorkerConfig is what a node with a kubelet runs: the kubelet, its container runtime and the
// node-local API load balancer.
type WorkerConfig struct {
	// OCIRuntime is the OCI runtime of the node's own containerd: "auto" (the default: Default
	// resolves it to crun where it works on the host, else runc), "runc" or "crun"
	// (--oci-runtime; ociruntime.go).
	OCIRuntime string
	// ociRuntimeReason is why auto chose OCIRuntime, for the log line at containerd's start.
	ociRuntimeReason string
	// ResolvConf is the node resolv.conf the kubelet gives pods with dnsPolicy Default (empty:
	// /etc/resolv.conf); the conformance harness points it at a test address so no pod asks the
	// host's real resolver.
	ResolvConf string
	// KubeletPort is where the kubelet serves its API (logs, exec, attach, port-forward).
	KubeletPort int
	// KubeletSyncFrequency is how often the kubelet refreshes a running pod's API-backed volumes
	// (0: its default, 1 minute).
	KubeletSyncFrequency time.Duration
	// LBPort is the node-local API load balancer's port (default 6444), on LBAddress.
	LBPort int
	// SystemReserved is subtracted from the node's capacity to give its allocatable ("cpu=500m,memory=512Mi").
	SystemReserved string
	// AllowedUnsafeSysctls are the sysctls (names, or prefixes ending in "*") pods may set besides the
	// safe ones; others are rejected by the kubelet (SysctlForbidden).
	AllowedUnsafeSysctls []string
	// KubeletRootDir is the kubelet's root directory as CSI drivers see it (plugins_registry/,
	// plugins/, pods/); /var/lib/kubelet, where drivers' manifests mount it from. Empty keeps
	// everything in the kubelet's data dir.
	KubeletRootDir string
	// PodManifestPath holds static pod manifests the kubelet runs (and mirrors into the API).
	PodManifestPath string
	// ContainerRuntimeEndpoint is an existing CRI socket for the kubelet; empty means skiff starts and
	// supervises its own containerd under the data dir.
	ContainerRuntimeEndpoint string
	// ControlPlaneKubelet says whether a node without the worker role runs the kubelet too, so it
	// registers a Node (with its roles' labels and the control-plane or etcd taint, see
	// nodeTaints): automatic by default (where the node can: root and a container runtime), which
	// Default resolves to on or off (cpkubelet.go).
	ControlPlaneKubelet KubeletSetting
}

// NetworkConfig is the cluster's network as a node sees it: service and pod ranges, cluster DNS,
// the CNI plugin, the service proxy and network policy.
type NetworkConfig struct {
	// ServiceCIDR is the range services' cluster IPs come from.
	ServiceCIDR string
	// ClusterDNS are the cluster DNS server addresses ClusterFirst pods use (default: the 10th address
	// of ServiceCIDR, 10.43.0.10). The kubelet uses them only once a Service has that cluster IP;
	// until then ClusterFirst pods get the node's resolv.conf.
	ClusterDNS []string
	// ClusterDomain is the cluster's DNS domain (default cluster.local).
	ClusterDomain string
	// DNSUpstreams are the resolvers (host:port) a worker's cluster DNS forwards other names to;
	// empty means the nameservers of the host's /etc/resolv.conf.
	DNSUpstreams []string
	// DisableProxy keeps a worker from running the service proxy (k3s's --disable-kube-proxy).
	DisableProxy bool
	// DisableNetworkPolicy keeps a worker from enforcing NetworkPolicy (k3s's
	// --disable-network-policy), for a cluster that runs another policy agent.
	DisableNetworkPolicy bool
	// NetworkPolicyLog logs every packet a network policy drops (rate limited) to the kernel log.
	NetworkPolicyLog bool
	// ProxyHealthzPort, when not 0, serves the service proxy's /healthz and /livez on the bind
	// address (kube-proxy's port is 10256).
	ProxyHealthzPort int
	// IngressHTTPPort and IngressHTTPSPort are the ports of a worker's built-in HTTP data plane
	// (Ingress) on the bind address; 0 leaves that port off, both 0 the data plane. Zero in a
	// Config built in code: the command's flags default them to 80 and 443.
	IngressHTTPPort  int
	IngressHTTPSPort int
	// ProxyMode is the service proxy's backend: nftables (the default) or iptables.
	ProxyMode string
	// CNIBridge is the bridge the kubelet's pods attach to, also used as the CNI network name (so
	// host-local IPAM keeps its own state); empty: the kubelet's defaults (cni0, "skiff").
	CNIBridge string
	// CNIPlugin is the pod network's CNI plugin: "skiff" (default; skiff's own, see internal/cni)
	// or "bridge" (the distribution's bridge, host-local and portmap plugins).
	CNIPlugin string
	// ClusterCIDR is the pod network; each node gets a podCIDR from it.
	ClusterCIDR string
}

// SecurityConfig is how the API server protects: encryption at rest, the audit log, the admission
// that protects (image policy, pod security), anonymous access and service-account tokens.
type SecurityConfig struct {
	// LeafCertificateLifetime is how long the leaf certificates the node issues itself are valid
	// (0: pki.DefaultLeafLifetime, a year); the renewal loop re-issues each at two thirds of it,
	// and shortens a longer one it finds. A test setting (--leaf-certificate-lifetime, hidden).
	LeafCertificateLifetime time.Duration
	// SecretsEncryption seals Secrets in etcd with a key skiff generates into the data dir (see
	// EncryptionConfigPath); EncryptionProviderConfig names an EncryptionConfiguration file
	// instead, as kube-apiserver's --encryption-provider-config.
	SecretsEncryption        bool
	EncryptionProviderConfig string
	// The audit log: AuditPolicyFile (an audit.k8s.io/v1 Policy) decides what AuditLogPath records
	// ("-" for stdout); the file rotates past AuditLogMaxSizeMB, keeping AuditLogMaxBackups.
	AuditPolicyFile, AuditLogPath         string
	AuditLogMaxSizeMB, AuditLogMaxBackups int
	// Admission that protects (issue 10): ImagePolicyFile is the --image-policy file of allowed
	// image prefixes (empty: every image allowed); PodSecurityConfigFile is an upstream
	// PodSecurityConfiguration (default levels and exemptions; empty: privileged, nothing exempt).
	ImagePolicyFile       string
	PodSecurityConfigFile string
	// Authentication (issue 10): AnonymousAuth lets requests without credentials in as
	// system:anonymous (kube-apiserver's --anonymous-auth); ServiceAccountIssuer is the "iss" of
	// service-account tokens and of the OIDC discovery document (empty: DefaultServiceAccountIssuer),
	// ServiceAccountJWKSURI the jwks_uri that document names (empty: <issuer>/openid/v1/jwks).
	AnonymousAuth         bool
	ServiceAccountIssuer  string
	ServiceAccountJWKSURI string
}

// Default fills unset fields.
func (c *Config) Default() {
	if c.DataDir == "" {
		c.DataDir = "/var/lib/skiff"
	}
	if c.CNIPlugin == "" {
		c.CNIPlugin = CNIPluginSkiff
	}
	if c.OCIRuntime == "" {
		c.OCIRuntime = OCIRuntimeAuto
	}
	c.Snapshots.defaults(c.DataDir)
	if c.LocalPathDir == "" {
		dir, _ := filepath.Abs(c.DataDir)
		c.LocalPathDir = filepath.Join(dir, "storage")
	}
	if len(c.Roles) == 0 {
		c.Roles = slices.Clone(AllRoles)
	}
	if c.BindAddress == "" {
		c.BindAddress = "0.0.0.0"
	}
	if c.AdvertiseAddress == "" {
		if ip := net.ParseIP(c.BindAddress); ip != nil && !ip.IsUnspecified() {
			c.AdvertiseAddress = c.BindAddress
		} else {
			c.AdvertiseAddress = hostAddress()
		}
	}
	if c.HTTPSPort == 0 {
		c.HTTPSPort = 6443
	}
	if c.EtcdClientPort == 0 {
		c.EtcdClientPort = 2379
	}
	if c.EtcdPeerPort == 0 {
		c.EtcdPeerPort = 2380
	}
	if c.KubeletPort == 0 {
		c.KubeletPort = 10250
	}
	if c.LBPort == 0 {
		c.LBPort = 6444
	}
	if c.NodeName == "" {
		if h, err := os.Hostname(); err == nil {
			c.NodeName = strings.ToLower(h)
		}
	}
	if c.ServiceCIDR == "" {
		c.ServiceCIDR = "10.43.0.0/16"
	}
	if c.ClusterCIDR == "" {
		c.ClusterCIDR = "10.42.0.0/16"
	}
	if len(c.ClusterDNS) == 0 {
		if ip, err := serviceIP(c.ServiceCIDR, 10); err == nil {
			c.ClusterDNS = []string{ip.String()}
		}
	}
	if c.ClusterDomain == "" {
		c.ClusterDomain = "cluster.local"
	}
	if c.CloudProvider == "" {
		c.CloudProvider = "local"
	}
	if c.StorageEncoding == "" {
		c.StorageEncoding = "protobuf"
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = time.Minute
	}
	if c.MinRequestTimeout == 0 {
		c.MinRequestTimeout = 30 * time.Minute
	}
	if c.MaxRequestsInflight == 0 {
		c.MaxRequestsInflight = 600
	}
	if c.IdleConnectionTimeout == 0 {
		c.IdleConnectionTimeout = 90 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	c.defaultOCIRuntime(realOCIHost())              // ociruntime.go; before what looks the runtime up
	c.defaultControlPlaneKubelet(realKubeletHost()) // cpkubelet.go
}

// Validate reports configuration errors before anything starts: the node's own fields, each part's,
// then what spans parts.
func (c *Config) Validate() error {
	var errs []error
	errs = append(errs, c.validateNode()...)
	errs = append(errs, c.NetworkConfig.Validate()...)
	errs = append(errs, c.ControlPlaneConfig.Validate()...)
	errs = append(errs, c.EtcdConfig.Validate()...)
	errs = append(errs, c.WorkerConfig.Validate()...)
	errs = append(errs, c.SecurityConfig.Validate()...)
	errs = append(errs, c.validateAcrossParts()...)
	return errors.Join(errs...)
}

// validateNode checks what every node has: its data dir and addresses. A relative data dir is made
// absolute.
func (c *Config) validateNode() []error {
	var errs []error
	if !filepath.IsAbs(c.DataDir) {
		abs, err := filepath.Abs(c.DataDir)
		if err != nil {
			errs = append(errs, fmt.Errorf("data dir %q: %w", c.DataDir, err))
		}
		c.DataDir = abs
	}
	if net.ParseIP(c.BindAddress) == nil {
		errs = append(errs, fmt.Errorf("--bind-address %q is not an IP address", c.BindAddress))
	}
	if net.ParseIP(c.AdvertiseAddress) == nil {
		errs = append(errs, fmt.Errorf("advertise address %q is not an IP address", c.AdvertiseAddress))
	}
	return errs
}

// validateAcrossParts checks what no part can judge alone: the roles against the etcd, join and
// runtime settings, and what needs the host (files named by flags, binaries on PATH).
func (c *Config) validateAcrossParts() []error {
	var errs []error
	errs = append(errs, c.validateEtcdTLS()...) // etcdnode.go
	errs = append(errs, c.Snapshots.validate(c)...)
	if c.HasRole(RoleEtcd) && len(c.EtcdServers) > 0 {
		errs = append(errs, errors.New("--etcd-servers names an external etcd: drop the etcd role or the flag"))
	}
	errs = append(errs, c.validateEtcdOnly()...) // etcdonly.go
	errs = append(errs, c.validateJoin()...)     // join.go
	// --control-plane-kubelet=true (cpkubelet.go).
	errs = append(errs, c.validateControlPlaneKubelet(realKubeletHost())...)
	// --oci-runtime (ociruntime.go).
	errs = append(errs, c.validateOCIRuntimeOnPath()...)
	return errs
}

// validatePort reports a port outside min-65535 under its flag's name.
func validatePort(flag string, port, min int) error {
	if port < min || port > 65535 {
		return fmt.Errorf("%s %d is out of range %d-65535", flag, port, min)
	}
	return nil
}

// validateIngressPorts checks the data plane's ports: in range, 0 for off, not one port for both.
func (c NetworkConfig) validateIngressPorts() []error {
	var errs []error
	for _, p := range []struct {
		flag string
		port int
	}{{"--ingress-http-port", c.IngressHTTPPort}, {"--ingress-https-port", c.IngressHTTPSPort}} {
		if err := validatePort(p.flag, p.port, 0); err != nil {
			errs = append(errs, err)
		}
	}
	if c.IngressHTTPPort != 0 && c.IngressHTTPPort == c.IngressHTTPSPort {
		errs = append(errs, fmt.Errorf("--ingress-http-port and --ingress-https-port are both %d: HTTP and HTTPS need a port each", c.IngressHTTPPort))
	}
	return errs
}

// Validate checks the network part: the CNI plugin, the service CIDR, cluster DNS and the proxy's
// mode.
func (c NetworkConfig) Validate() []error {
	var errs []error
	errs = append(errs, c.validateIngressPorts()...)
	if c.CNIPlugin != CNIPluginSkiff && c.CNIPlugin != CNIPluginBridge {
		errs = append(errs, fmt.Errorf("--cni-plugin %q: must be %s or %s", c.CNIPlugin, CNIPluginSkiff, CNIPluginBridge))
	}
	if _, _, err := net.ParseCIDR(c.ServiceCIDR); err != nil {
		errs = append(errs, fmt.Errorf("service CIDR %q: %w", c.ServiceCIDR, err))
	}
	for _, ip := range c.ClusterDNS {
		if net.ParseIP(ip) == nil {
			errs = append(errs, fmt.Errorf("--cluster-dns %q is not an IP address", ip))
		}
	}
	for _, u := range c.DNSUpstreams {
		if host, port, err := net.SplitHostPort(u); err != nil || net.ParseIP(host) == nil || port == "" {
			errs = append(errs, fmt.Errorf("--dns-upstream %q: want IP:port", u))
		}
	}
	if msgs := validation.IsDNS1123Subdomain(c.ClusterDomain); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("--cluster-domain %q: %s", c.ClusterDomain, strings.Join(msgs, "; ")))
	}
	if !proxy.ValidMode(c.ProxyMode) {
		errs = append(errs, fmt.Errorf("--proxy-mode %q: want %s or %s", c.ProxyMode, proxy.ModeNftables, proxy.ModeIPTables))
	}
	return errs
}

// Validate checks the control-plane part: the API server's port and limits, the controller
// manager's and the scheduler's settings, storage and metrics.
func (c ControlPlaneConfig) Validate() []error {
	var errs []error
	if err := validatePort("--https-port", c.HTTPSPort, 1); err != nil {
		errs = append(errs, err)
	}
	if !filepath.IsAbs(c.LocalPathDir) {
		// Volume paths are read on other nodes, so a relative one means nothing there.
		errs = append(errs, fmt.Errorf("--local-path-dir %q must be absolute", c.LocalPathDir))
	}
	if err := validateCloudProvider(c.CloudProvider); err != nil {
		errs = append(errs, err)
	}
	if c.MetricsResolution < 0 {
		errs = append(errs, fmt.Errorf("--metrics-resolution %s must not be negative", c.MetricsResolution))
	}
	for _, f := range []struct {
		flag string
		v    *int64
	}{{"--default-not-ready-toleration-seconds", c.DefaultNotReadyTolerationSeconds}, {"--default-unreachable-toleration-seconds", c.DefaultUnreachableTolerationSeconds}} {
		if f.v != nil && *f.v < 0 {
			errs = append(errs, fmt.Errorf("%s %d must not be negative", f.flag, *f.v))
		}
	}
	if c.NodeMonitorGracePeriod < 0 {
		errs = append(errs, fmt.Errorf("--node-monitor-grace-period %s must not be negative", c.NodeMonitorGracePeriod))
	}
	if c.ClusterSigningDuration < 0 {
		errs = append(errs, fmt.Errorf("--cluster-signing-duration %s must not be negative", c.ClusterSigningDuration))
	}
	if c.HPASyncPeriod < 0 || c.HPATolerance < 0 || c.HPADownscaleStabilization < 0 {
		errs = append(errs, errors.New("--horizontal-pod-autoscaler-sync-period, -tolerance and -downscale-stabilization must not be negative"))
	}
	if c.RequestTimeout < 0 || c.MinRequestTimeout < 0 || c.IdleConnectionTimeout < 0 || c.MaxConnectionsPerClient < 0 {
		errs = append(errs, errors.New("--request-timeout, --min-request-timeout, --idle-connection-timeout and --max-connections-per-client must not be negative"))
	}
	if c.MaxRequestsInflight < 0 {
		errs = append(errs, fmt.Errorf("--max-requests-inflight %d must not be negative", c.MaxRequestsInflight))
	}
	if c.StorageEncoding != "protobuf" && c.StorageEncoding != "json" {
		errs = append(errs, fmt.Errorf("storage encoding %q: want protobuf or json", c.StorageEncoding))
	}
	if c.LeaseDuration < 0 || c.RenewDeadline < 0 || c.RetryPeriod < 0 {
		errs = append(errs, errors.New("leader election durations must not be negative"))
	}
	if c.LeaseDuration > 0 && c.RenewDeadline > 0 && c.RenewDeadline >= c.LeaseDuration {
		errs = append(errs, fmt.Errorf("--leader-elect-renew-deadline %s must be shorter than --leader-elect-lease-duration %s", c.RenewDeadline, c.LeaseDuration))
	}
	return errs
}

// Validate checks the etcd part's own fields: ports and quota. Its TLS files, snapshots and the
// etcd role against --etcd-servers are checked across parts (validateAcrossParts).
func (c EtcdConfig) Validate() []error {
	var errs []error
	for _, p := range []struct {
		flag      string
		port, min int
	}{{"--etcd-client-port", c.EtcdClientPort, 1}, {"--etcd-peer-port", c.EtcdPeerPort, 1}, {"--etcd-http-port", c.EtcdHTTPPort, 0}} {
		if err := validatePort(p.flag, p.port, p.min); err != nil {
			errs = append(errs, err)
		}
	}
	if c.EtcdQuotaBackendBytes < 0 {
		errs = append(errs, fmt.Errorf("--etcd-quota-backend-bytes %d must not be negative", c.EtcdQuotaBackendBytes))
	}
	if c.EtcdDiskReserveBytes != 0 && c.EtcdDiskReserveBytes < etcd.MinDiskReserve {
		errs = append(errs, fmt.Errorf("--etcd-disk-reserve-bytes %d must be 0 (automatic) or at least %d (one etcd WAL segment)", c.EtcdDiskReserveBytes, etcd.MinDiskReserve))
	}
	return errs
}

// Validate checks the worker part: the kubelet's and the node-local load balancer's ports, and
// the kubelet's sysctls and reservation. The OCI runtime, which needs the host, is checked across
// parts.
func (c WorkerConfig) Validate() []error {
	var errs []error
	for _, p := range []struct {
		flag string
		port int
	}{{"--kubelet-port", c.KubeletPort}, {"--lb-port", c.LBPort}} {
		if err := validatePort(p.flag, p.port, 1); err != nil {
			errs = append(errs, err)
		}
	}
	if err := kubelet.ValidateAllowedUnsafeSysctls(c.AllowedUnsafeSysctls); err != nil {
		errs = append(errs, fmt.Errorf("--allowed-unsafe-sysctls: %w", err))
	}
	if _, err := kubelet.ParseSystemReserved(c.SystemReserved); err != nil {
		errs = append(errs, fmt.Errorf("--system-reserved: %w", err))
	}
	return errs
}

// Validate checks the security part: the audit log's rotation (kube-apiserver refuses negative
// --audit-log-maxsize and --audit-log-maxbackup alike).
func (c SecurityConfig) Validate() []error {
	var errs []error
	if c.AuditLogMaxSizeMB < 0 {
		errs = append(errs, fmt.Errorf("--audit-log-maxsize %d must not be negative", c.AuditLogMaxSizeMB))
	}
	if c.AuditLogMaxBackups < 0 {
		errs = append(errs, fmt.Errorf("--audit-log-maxbackup %d must not be negative", c.AuditLogMaxBackups))
	}
	if c.LeafCertificateLifetime < 0 {
		errs = append(errs, fmt.Errorf("--leaf-certificate-lifetime %s must not be negative", c.LeafCertificateLifetime))
	}
	return errs
}

// HasRole reports whether the node has role r.
func (c *Config) HasRole(r Role) bool { return slices.Contains(c.Roles, r) }

// AdminKubeconfigPath is where the admin kubeconfig is written.
func (c *Config) AdminKubeconfigPath() string { return filepath.Join(c.DataDir, "admin.kubeconfig") }

// hostAddress is the host's first global unicast IPv4 address, or 127.0.0.1 when it has none.
func hostAddress() string {
	addrs, err := net.InterfaceAddrs()
	if err == nil {
		for _, a := range addrs {
			if ipnet, ok := a.(*net.IPNet); ok && ipnet.IP.To4() != nil && ipnet.IP.IsGlobalUnicast() {
				return ipnet.IP.String()
			}
		}
	}
	return "127.0.0.1"
}

// LocalURL is the API server address for clients on this host (the admin kubeconfig).
func (c *Config) LocalURL() string {
	host := c.BindAddress
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "https://" + net.JoinHostPort(host, strconv.Itoa(c.HTTPSPort))
}

// serviceIP returns the n-th address of a service CIDR (1 is the API server's Service,
// 10 cluster DNS by convention).
func serviceIP(cidr string, n uint64) (netip.Addr, error) {
	prefix, err := netip.ParsePrefix(cidr)
	if err != nil {
		return netip.Addr{}, err
	}
	addr := prefix.Masked().Addr()
	for range n {
		addr = addr.Next()
		if !prefix.Contains(addr) {
			return netip.Addr{}, fmt.Errorf("service CIDR %s has no address %d", cidr, n)
		}
	}
	return addr, nil
}
