// Command skiff is a Kubernetes-compatible cluster in one binary.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/klog/v2"

	"github.com/skiff-sh/skiff/internal/cluster"
	// containerd runs this binary as the pod network's CNI plugin through a link named after the
	// plugin's type: cniexec serves it from its package initializer, before the rest of skiff
	// initializes, and exits.
	_ "github.com/skiff-sh/skiff/internal/cni/cniexec"
	"github.com/skiff-sh/skiff/internal/controller/localpath"
	"github.com/skiff-sh/skiff/internal/version"
)

const usage = `skiff: a Kubernetes-compatible cluster in one binary.

Usage:
  skiff server [flags]      run a node (all roles by default: a whole single-node cluster)
  skiff kubeconfig [flags]  print the admin kubeconfig of a node's data dir (--user NAME: one for that identity)
  skiff images ...          import image archives into the node's runtime; build an offline busybox image
  skiff explain [--node N] P  why pod P does or does not fit each node (or node N: every plugin's verdict), asked of the API server
  skiff etcd snapshot ...   save a running node's etcd to a file; restore one into a new data dir
  skiff secrets-encrypt rotate  seal Secrets with a new key (old keys read until every Secret is rewritten)
  skiff token ...           create, list and delete join tokens (skiff token -h)
  skiff certificate rotate|check|rotate-sa-key  re-issue the node's leaf certificates now; list their expiry; new service-account signing key
  skiff status [-o json]    nodes and roles, etcd members, API servers, leaders, versions
  skiff node remove NAME    cordon a node, remove its etcd member, delete its Node object
  skiff install [-- ARGS]   install the binary and a systemd unit running skiff server ARGS
  skiff uninstall --yes     remove the node's containers, mounts, rules, data dir, unit and binary
  skiff dashboard [--port 8001]  the web dashboard on loopback with the admin credentials (prints its URL)
  skiff version             print the version

Run "skiff server -h" for the server's flags.
`

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "skiff:", err)
		}
		os.Exit(1)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errors.New("a subcommand is required")
	}
	switch args[0] {
	case "server":
		return runServer(args[1:], stderr)
	case "kubeconfig":
		return runKubeconfig(args[1:], stdout, stderr)
	case "images":
		return runImages(args[1:], stdout, stderr)
	case "explain":
		return runExplain(args[1:], stdout, stderr)
	case "install":
		return runInstall(args[1:], stdout, stderr)
	case "uninstall":
		return runUninstall(args[1:], stdout, stderr)
	case "secrets-encrypt":
		return runSecretsEncrypt(args[1:], stdout, stderr)
	case "etcd":
		return runEtcd(args[1:], stdout, stderr)
	case "token":
		return runToken(args[1:], stdout, stderr)
	case "certificate":
		return runCertificate(args[1:], stdout, stderr)
	case "status":
		return runStatus(args[1:], stdout, stderr)
	case "node":
		return runNode(args[1:], stdout, stderr)
	case "dashboard":
		return runDashboard(args[1:], stdout, stderr)
	case "version", "--version":
		fmt.Fprintln(stdout, version.GitVersion)
		return nil
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprint(stderr, usage)
	return fmt.Errorf("unknown subcommand %q", args[0])
}

func defaultDataDir() string {
	if os.Geteuid() == 0 {
		return "/var/lib/skiff"
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ".skiff"
	}
	return filepath.Join(home, ".skiff")
}

func runServer(args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("skiff server", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg cluster.Config
	roles := fs.String("roles", "etcd,controlplane,worker", "comma-separated roles of this node: etcd, controlplane, worker")
	etcdServers := fs.String("etcd-servers", "", "comma-separated client URLs of an external etcd cluster (instead of an embedded member)")
	controllers := fs.String("controllers", "*", "controllers to run, as kube-controller-manager's --controllers: \"*\", \"name\", \"-name\"")
	unsafeSysctls := fs.String("allowed-unsafe-sysctls", "", "comma-separated unsafe sysctls or patterns (ending in *) pods may set besides the safe ones, e.g. kernel.msg*,net.core.somaxconn")
	clusterDNS := fs.String("cluster-dns", "", "comma-separated cluster DNS server addresses for ClusterFirst pods (default: the 10th address of --service-cidr, 10.43.0.10, where the control plane creates the kube-dns Service); until a Service has that cluster IP, ClusterFirst pods get the node's resolv.conf")
	dnsUpstreams := fs.String("dns-upstream", "", "comma-separated IP:port resolvers a worker's cluster DNS forwards names outside the cluster domain to (default: the nameservers of /etc/resolv.conf)")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn, error")
	logFormat := fs.String("log-format", "text", "log format: text or json (one line per record either way)")
	fs.StringVar(&cfg.DataDir, "data-dir", defaultDataDir(), "directory for certificates, etcd data and kubeconfigs")
	fs.IntVar(&cfg.HTTPSPort, "https-port", 6443, "API server HTTPS port")
	fs.IntVar(&cfg.LBPort, "lb-port", 6444, "node-local API load balancer port, on the --bind-address when it is a loopback address, else on 127.0.0.1")
	fs.IntVar(&cfg.EtcdClientPort, "etcd-client-port", 2379, "embedded etcd client port")
	fs.IntVar(&cfg.EtcdPeerPort, "etcd-peer-port", 2380, "embedded etcd peer port")
	fs.IntVar(&cfg.EtcdHTTPPort, "etcd-http-port", 0, "embedded etcd's HTTP endpoints (/health, /metrics, /version; mutual TLS as the client port), which serves gRPC alone; 0: a loopback port the system picks")
	// External etcd over TLS, as kube-apiserver's flags of the same names.
	fs.StringVar(&cfg.EtcdCAFile, "etcd-cafile", "", "CA bundle that signed the external etcd's serving certificates (with --etcd-servers)")
	fs.StringVar(&cfg.EtcdCertFile, "etcd-certfile", "", "client certificate presented to the external etcd (with --etcd-servers)")
	fs.StringVar(&cfg.EtcdKeyFile, "etcd-keyfile", "", "key of --etcd-certfile")
	fs.StringVar(&cfg.EtcdJoinKubeconfig, "etcd-join-kubeconfig", "", "admin kubeconfig of a running cluster whose etcd this node's new member joins (as a learner, promoted once caught up); needs the cluster's pki/ (etcd CA) in --data-dir")
	fs.StringVar(&cfg.SystemReserved, "system-reserved", "", "resources kept for the system, subtracted from the node's allocatable (e.g. cpu=500m,memory=512Mi)")
	fs.StringVar(&cfg.KubeletRootDir, "kubelet-root-dir", "/var/lib/kubelet", "the kubelet's root directory as CSI drivers see it: node plugins register in its plugins_registry/, keep sockets in plugins/ and publish volumes under pods/ (Kubernetes' --root-dir)")
	fs.StringVar(&cfg.PodManifestPath, "pod-manifest-path", "", "directory of static pod manifests the kubelet runs and mirrors into the API")
	fs.StringVar(&cfg.ManifestsDir, "manifests-dir", "", "control-plane nodes: every YAML or JSON file in this directory is applied (server-side apply, field manager skiff-deploy), re-applied when it changes, and what a removed file created is deleted; state in the ConfigMap kube-system/skiff-manifests (default <data-dir>/manifests)")
	fs.IntVar(&cfg.KubeletPort, "kubelet-port", 10250, "kubelet API port (logs, exec, attach, port-forward)")
	fs.DurationVar(&cfg.KubeletSyncFrequency, "kubelet-sync-frequency", time.Minute, "how often the kubelet syncs a running pod again, refreshing its configMap, secret, downwardAPI and projected volumes (upstream's syncFrequency)")
	fs.StringVar(&cfg.BindAddress, "bind-address", "0.0.0.0", "address the API server listens on")
	fs.StringVar(&cfg.AdvertiseAddress, "advertise-address", "", "address other nodes and clients use (default: bind address, or 127.0.0.1)")
	fs.StringVar(&cfg.NodeName, "node-name", "", "this node's name (default: host name)")
	fs.StringVar(&cfg.ServiceCIDR, "service-cidr", "10.43.0.0/16", "range of service cluster IPs")
	fs.StringVar(&cfg.ClusterDomain, "cluster-domain", "cluster.local", "cluster DNS domain: pods' search domains and /etc/hosts names end with it")
	fs.StringVar(&cfg.CNIPlugin, "cni-plugin", "skiff", "the pod network's CNI plugin: skiff (skiff's own: veth, bridge, addresses and masquerade in one exec of this binary) or bridge (the bridge, host-local and portmap plugins of /usr/lib/cni)")
	fs.StringVar(&cfg.OCIRuntime, "oci-runtime", "auto", "OCI runtime of the node's own containerd, under its runc v2 shim: auto, runc or crun (the C runtime, Debian package crun: about a third of runc's CPU per container start). auto chooses crun where it is installed and the cgroup layout lets it create containers (not a hybrid layout whose cgroup2 hierarchy holds controllers), else runc, and says which and why in the log; state under <data-dir>/kubelet/containerd/state/<runtime>")
	fs.StringVar(&cfg.CNIBridge, "cni-bridge", "", "Linux bridge (and CNI network name) the node's pods attach to (default cni0, network \"skiff\"); a distinct name keeps several clusters on one host apart")
	fs.StringVar(&cfg.ResolvConf, "resolv-conf", "", "resolver file pods with dnsPolicy Default (and ClusterFirst pods until cluster DNS serves) get, as the kubelet's --resolv-conf (default: /etc/resolv.conf)")
	fs.StringVar(&cfg.ClusterCIDR, "cluster-cidr", "10.42.0.0/16", "pod network; every node gets a podCIDR from it")
	fs.StringVar(&cfg.CloudProvider, "cloud-provider", "local", "cloud controller manager provider: local (LoadBalancer Services answer on the nodes' addresses) or none")
	fs.BoolVar(&cfg.DisableProxy, "disable-kube-proxy", false, "do not run the service proxy on this worker (no cluster IP, NodePort or external IP rules)")
	fs.BoolVar(&cfg.DisableNetworkPolicy, "disable-network-policy", false, "do not enforce NetworkPolicy on this worker (for a cluster that runs another policy agent)")
	fs.BoolVar(&cfg.NetworkPolicyLog, "network-policy-log", false, "log every packet a NetworkPolicy drops (at most 10 a second, kernel log, prefix \"skiff-netpol\")")
	fs.StringVar(&cfg.ProxyMode, "proxy-mode", "nftables", "the service proxy's backend: nftables (one table of the node's own, ip skiff-<prefix>) or iptables (chains <prefix>-* hooked into the built-in chains)")
	fs.IntVar(&cfg.IngressHTTPPort, "ingress-http-port", 80, "port of the bind address a worker's built-in HTTP data plane serves Ingresses on, in cleartext; 0: off")
	fs.IntVar(&cfg.IngressHTTPSPort, "ingress-https-port", 443, "port of the bind address a worker's built-in HTTP data plane serves Ingresses on over TLS (certificates from the Ingresses' Secrets, by SNI); 0: off")
	fs.IntVar(&cfg.ProxyHealthzPort, "proxy-healthz-port", 0, "serve the service proxy's /healthz and /livez on this port of the bind address (kube-proxy uses 10256); 0: off")
	fs.BoolVar(&cfg.DisableScheduler, "disable-scheduler", false, "do not run skiff's scheduler on this control-plane node (e.g. to run upstream kube-scheduler instead)")
	fs.BoolVar(&cfg.DisableControllerManager, "disable-controller-manager", false, "do not run skiff's controller manager on this control-plane node (e.g. to run upstream kube-controller-manager instead)")
	fs.BoolVar(&cfg.DisableLocalInformers, "disable-local-informers", false, "controller manager and scheduler read through client-go instead of the API server's watch cache in process (one copy of each object)")
	fs.Func("memory-limit", "the Go runtime's soft memory limit for this process (e.g. 1Gi): the collector runs sooner as the heap nears it; off (the default) leaves it to GOMEMLIMIT", func(v string) (err error) {
		cfg.MemoryLimit, err = cluster.ParseMemoryLimit(v)
		return err
	})
	fs.DurationVar(&cfg.LeaseDuration, "leader-elect-lease-duration", 15*time.Second, "how long the scheduler's and controller manager's leader Lease lasts without renewal (a standby takes over after it)")
	fs.DurationVar(&cfg.RenewDeadline, "leader-elect-renew-deadline", 10*time.Second, "how long the leader keeps trying to renew before it steps down")
	fs.DurationVar(&cfg.RetryPeriod, "leader-elect-retry-period", 2*time.Second, "how often candidates try to acquire or renew the Lease")
	fs.StringVar(&cfg.LocalPathDir, "local-path-dir", "", "where the local-path StorageClass puts volumes on each worker (default <data-dir>/storage)")
	fs.StringVar(&cfg.LocalPathHelperImage, "local-path-helper-image", "", "image of the pod that removes a deleted local-path volume's directory (needs rm; default "+localpath.DefaultHelperImage+")")
	fs.StringVar(&cfg.SchedulerConfig, "scheduler-config", "", "scheduler configuration file (profiles, plugins, weights); default profile when empty")
	fs.StringVar(&cfg.ContainerRuntimeEndpoint, "container-runtime-endpoint", "", "CRI socket of an existing runtime; empty: skiff supervises its own containerd")
	fs.DurationVar(&cfg.MetricsResolution, "metrics-resolution", 15*time.Second, "how often the API server scrapes every Ready kubelet's resource metrics for metrics.k8s.io (kubectl top, autoscaling)")
	fs.DurationVar(&cfg.NodeMonitorGracePeriod, "node-monitor-grace-period", 40*time.Second, "how long a node may go unheard before it is marked Ready=Unknown and tainted unreachable")
	fs.Var(optionalInt64{p: &cfg.DefaultNotReadyTolerationSeconds, def: 300}, "default-not-ready-toleration-seconds", "seconds of the node.kubernetes.io/not-ready:NoExecute toleration added to pods that have none (how long they stay on a not-ready node)")
	fs.Var(optionalInt64{p: &cfg.DefaultUnreachableTolerationSeconds, def: 300}, "default-unreachable-toleration-seconds", "seconds of the node.kubernetes.io/unreachable:NoExecute toleration added to pods that have none (how long they stay on an unreachable node)")
	fs.DurationVar(&cfg.ClusterSigningDuration, "cluster-signing-duration", 365*24*time.Hour, "the longest certificate issued for an approved CertificateSigningRequest; spec.expirationSeconds may only shorten it")
	fs.DurationVar(&cfg.HPASyncPeriod, "horizontal-pod-autoscaler-sync-period", 15*time.Second, "how often the horizontal pod autoscaler syncs every HorizontalPodAutoscaler")
	fs.DurationVar(&cfg.HPADownscaleStabilization, "horizontal-pod-autoscaler-downscale-stabilization", 5*time.Minute, "the horizontal pod autoscaler scales down only to the highest replica count it recommended within this long")
	fs.Float64Var(&cfg.HPATolerance, "horizontal-pod-autoscaler-tolerance", 0.1, "the horizontal pod autoscaler does not scale while the metrics' ratio to their targets is within 1 plus or minus this")
	fs.StringVar(&cfg.Server, "server", "", "join the cluster whose API server is https://HOST:PORT (worker-only nodes: --roles worker)")
	fs.StringVar(&cfg.Token, "token", "", "join token from skiff token create (K10<CA hash>::<id>.<secret>); needed only for the first start")
	fs.Var(kubeletFlag{&cfg.ControlPlaneKubelet}, "control-plane-kubelet", "whether a node without the worker role runs the kubelet (and containerd) too, registering a Node labelled with its roles and tainted node-role.kubernetes.io/control-plane:NoSchedule (etcd-only: node-role.kubernetes.io/etcd:NoExecute), so only pods that tolerate it (DaemonSets) run there. Default auto: where the node can (root and a container runtime: --container-runtime-endpoint, or containerd and the --oci-runtime on PATH), saying in the log why not where it cannot; true requires it (the node is refused at start when it cannot); false opts out")
	fs.StringVar(&cfg.StorageEncoding, "storage-encoding", "protobuf", "encoding of objects in etcd: protobuf or json")
	fs.BoolVar(&cfg.SecretsEncryption, "secrets-encryption", true, "seal Secrets in etcd with a key generated into <data-dir>/pki/encryption-config.yaml (rotate with `skiff secrets-encrypt rotate`)")
	fs.StringVar(&cfg.EncryptionProviderConfig, "encryption-provider-config", "", "an EncryptionConfiguration file (apiserver.config.k8s.io/v1) for encryption at rest, instead of --secrets-encryption's; reloaded when it changes")
	fs.StringVar(&cfg.AuditPolicyFile, "audit-policy-file", "", "audit policy (audit.k8s.io/v1 Policy); with --audit-log-path, requests are recorded as its rules say")
	fs.StringVar(&cfg.AuditLogPath, "audit-log-path", "", "file the audit log is appended to, one JSON event per line (\"-\": standard output)")
	fs.IntVar(&cfg.AuditLogMaxSizeMB, "audit-log-maxsize", 100, "megabytes the audit log grows to before it is rotated (0: never)")
	fs.IntVar(&cfg.AuditLogMaxBackups, "audit-log-maxbackup", 10, "rotated audit logs to keep (0: all)")
	// Authentication (issue 10): kube-apiserver's names.
	fs.BoolVar(&cfg.AnonymousAuth, "anonymous-auth", true, "let requests without credentials in as system:anonymous (group system:unauthenticated), authorized by RBAC like any other; false answers them 401")
	fs.StringVar(&cfg.ServiceAccountIssuer, "service-account-issuer", "", "issuer (\"iss\") of service-account tokens and of /.well-known/openid-configuration (default https://kubernetes.default.svc.cluster.local)")
	fs.DurationVar(&cfg.ReadHeaderTimeout, "read-header-timeout", 32*time.Second, "how long a client may take to send its request headers before the API server closes the connection")
	fs.StringVar(&cfg.ServiceAccountJWKSURI, "service-account-jwks-uri", "", "jwks_uri the OpenID discovery document names (default <issuer>/openid/v1/jwks)")
	fs.Int64Var(&cfg.EtcdQuotaBackendBytes, "etcd-quota-backend-bytes", 0, "size the embedded etcd database may grow to before etcd refuses writes (NOSPACE); 0: etcd's default, 2 GiB")
	fs.Int64Var(&cfg.EtcdDiskReserveBytes, "etcd-disk-reserve-bytes", 0, "free space kept for the embedded etcd on its file system: below it API writes are refused (NOSPACE) so that etcd never meets a full disk; 0: 5% of the file system, 64 MiB to 1 GiB")
	addEtcdSnapshotFlags(fs, &cfg.Snapshots)
	// Server limits (issue 13): kube-apiserver's names where it has them.
	fs.DurationVar(&cfg.RequestTimeout, "request-timeout", time.Minute, "how long a request that is not long-running may take before it is answered 504 (a shorter ?timeout= is honoured)")
	minRequestTimeout := fs.Int("min-request-timeout", 1800, "seconds a watch without timeoutSeconds lasts at least (randomised up to twice this)")
	fs.DurationVar(&cfg.IdleConnectionTimeout, "idle-connection-timeout", 90*time.Second, "how long an idle keep-alive connection to the API server stays open")
	fs.IntVar(&cfg.MaxConnectionsPerClient, "max-connections-per-client", 1000, "connections to the API server one client address may hold open (0: unbounded)")
	fs.IntVar(&cfg.MaxRequestsInflight, "max-requests-inflight", 600, "API Priority and Fairness: the seats the limited priority levels share (kube-apiserver's 400 + 200 in flight)")
	// API aggregation (APIServices): the front-proxy client certificate and the request headers
	// extension API servers trust; empty files are created in <data-dir>/pki at start.
	fs.StringVar(&cfg.Aggregation.RequestHeaderClientCAFile, "requestheader-client-ca-file", "", "CA (PEM) of the front-proxy client certificate, published to extension API servers in kube-system/extension-apiserver-authentication (default: <data-dir>/pki/front-proxy-ca.crt, created)")
	fs.StringVar(&cfg.Aggregation.ProxyClientCertFile, "proxy-client-cert-file", "", "client certificate the API server presents to extension API servers (default: <data-dir>/pki/front-proxy-client.crt, created)")
	fs.StringVar(&cfg.Aggregation.ProxyClientKeyFile, "proxy-client-key-file", "", "key of --proxy-client-cert-file")
	fs.Var(commaList{&cfg.Aggregation.UsernameHeaders}, "requestheader-username-headers", "request headers naming the user to extension API servers (default X-Remote-User)")
	fs.Var(commaList{&cfg.Aggregation.GroupHeaders}, "requestheader-group-headers", "request headers naming the groups (default X-Remote-Group)")
	fs.Var(commaList{&cfg.Aggregation.ExtraHeadersPrefix}, "requestheader-extra-headers-prefix", "request header prefixes of the user's extra attributes (default X-Remote-Extra-)")
	fs.Var(commaList{&cfg.Aggregation.AllowedNames}, "requestheader-allowed-names", "common names of front-proxy client certificates extension API servers accept (default front-proxy-client)")
	// Admission that protects (issue 10).
	fs.StringVar(&cfg.ImagePolicyFile, "image-policy", "", "image policy file (kind ImagePolicy: allowed image prefixes by default and per namespace); pods with other images are refused. Empty: all images allowed")
	fs.StringVar(&cfg.PodSecurityConfigFile, "pod-security-config", "", "PodSecurityConfiguration file (pod-security.admission.config.k8s.io/v1): default enforce/audit/warn levels and exempt usernames, runtimeClasses, namespaces. Empty: privileged, nothing exempt")
	// A test setting: every leaf the node issues lives this long and is renewed at two thirds.
	fs.DurationVar(&cfg.LeafCertificateLifetime, "leaf-certificate-lifetime", 0, "lifetime of the leaf certificates the node issues (0: a year)")
	hideFlags(fs, "leaf-certificate-lifetime")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	cfg.MinRequestTimeout = time.Duration(*minRequestTimeout) * time.Second
	parsed, err := cluster.ParseRoles(*roles)
	if err != nil {
		return err
	}
	cfg.Roles = parsed
	if *etcdServers != "" {
		for _, s := range strings.Split(*etcdServers, ",") {
			if s = strings.TrimSpace(s); s != "" {
				cfg.EtcdServers = append(cfg.EtcdServers, s)
			}
		}
	}
	for _, s := range strings.Split(*clusterDNS, ",") {
		if s = strings.TrimSpace(s); s != "" {
			cfg.ClusterDNS = append(cfg.ClusterDNS, s)
		}
	}
	for _, s := range strings.Split(*dnsUpstreams, ",") {
		if s = strings.TrimSpace(s); s != "" {
			cfg.DNSUpstreams = append(cfg.DNSUpstreams, s)
		}
	}
	for _, s := range strings.Split(*unsafeSysctls, ",") {
		if s = strings.TrimSpace(s); s != "" {
			cfg.AllowedUnsafeSysctls = append(cfg.AllowedUnsafeSysctls, s)
		}
	}
	cfg.Controllers = strings.Split(*controllers, ",")
	logger, err := newLogger(stderr, *logLevel, *logFormat)
	if err != nil {
		return err
	}
	cfg.Logger = logger

	ctx, stop := commandContext()
	defer stop()
	return cluster.Run(ctx, cfg)
}

func runKubeconfig(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("skiff kubeconfig", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dataDir := fs.String("data-dir", defaultDataDir(), "the node's data directory")
	user := fs.String("user", "", "issue a client certificate for this user (CN) from the node's CA instead of printing the admin kubeconfig, e.g. system:kube-scheduler")
	groups := fs.String("groups", "", "comma-separated groups (O) of --user's certificate")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *user != "" {
		var gs []string
		for _, g := range strings.Split(*groups, ",") {
			if g = strings.TrimSpace(g); g != "" {
				gs = append(gs, g)
			}
		}
		data, err := cluster.UserKubeconfig(*dataDir, *user, gs, time.Now())
		if err != nil {
			return err
		}
		_, err = stdout.Write(data)
		return err
	}
	cfg := cluster.Config{DataDir: *dataDir}
	data, err := os.ReadFile(cfg.AdminKubeconfigPath())
	if err != nil {
		return fmt.Errorf("read admin kubeconfig (has skiff server run with --data-dir %s?): %w", *dataDir, err)
	}
	_, err = stdout.Write(data)
	return err
}

// newLogger builds the node's one logger and routes the process-wide ones into it at this edge:
// klog (client-go, leader election) and Go's log package (net/http) would otherwise print their
// own formats beside skiff's. Components still get the logger passed in, never the global one.
func newLogger(w io.Writer, levelName, format string) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(levelName)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	opts := &slog.HandlerOptions{Level: level}
	var handler slog.Handler
	switch format {
	case "text":
		handler = slog.NewTextHandler(w, opts)
	case "json":
		handler = slog.NewJSONHandler(w, opts)
	default:
		return nil, fmt.Errorf("--log-format: %q is not text or json", format)
	}
	logger := slog.New(handler)
	slog.SetDefault(logger)
	klog.SetSlogLogger(slog.New(stopCutHandler{handler}).With("component", "klog"))
	return logger, nil
}
