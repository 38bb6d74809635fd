// Command skiff is a Kubernetes-compatible cluster in one binary.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"k8s.io/klog/v2"

	"github.com/skiff-sh/skiff/internal/cluster"
	"github.com/skiff-sh/skiff/internal/controller/localpath"
)

const usage = `skiff: a Kubernetes-compatible cluster in one binary.

Usage:
  skiff server [flags]      run a node (all roles by default: a whole single-node cluster)
  skiff kubeconfig [flags]  print the admin kubeconfig of a node's data dir
  skiff images ...          import image archives into the node's runtime; build an offline busybox image
  skiff explain --node N P  why pod P does or does not fit node N (the scheduler's per-plugin verdicts)
  skiff etcd snapshot ...   save a running node's etcd to a file; restore one into a new data dir
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
	case "etcd":
		return runEtcd(args[1:], stdout, stderr)
	case "version", "--version":
		fmt.Fprintln(stdout, cluster.Version.GitVersion)
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
	clusterDNS := fs.String("cluster-dns", "", "comma-separated cluster DNS server addresses for ClusterFirst pods (default: the 10th address of --service-cidr, 10.43.0.10); until a Service has that cluster IP, ClusterFirst pods get the node's resolv.conf")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn, error")
	logFormat := fs.String("log-format", "text", "log format: text or json (one line per record either way)")
	fs.StringVar(&cfg.DataDir, "data-dir", defaultDataDir(), "directory for certificates, etcd data and kubeconfigs")
	fs.IntVar(&cfg.HTTPSPort, "https-port", 6443, "API server HTTPS port")
	fs.IntVar(&cfg.EtcdClientPort, "etcd-client-port", 2379, "embedded etcd client port")
	fs.IntVar(&cfg.EtcdPeerPort, "etcd-peer-port", 2380, "embedded etcd peer port")
	fs.StringVar(&cfg.SystemReserved, "system-reserved", "", "resources kept for the system, subtracted from the node's allocatable (e.g. cpu=500m,memory=512Mi)")
	fs.StringVar(&cfg.PodManifestPath, "pod-manifest-path", "", "directory of static pod manifests the kubelet runs and mirrors into the API")
	fs.IntVar(&cfg.KubeletPort, "kubelet-port", 10250, "kubelet API port (logs, exec, attach, port-forward)")
	fs.StringVar(&cfg.BindAddress, "bind-address", "0.0.0.0", "address the API server listens on")
	fs.StringVar(&cfg.AdvertiseAddress, "advertise-address", "", "address other nodes and clients use (default: bind address, or 127.0.0.1)")
	fs.StringVar(&cfg.NodeName, "node-name", "", "this node's name (default: host name)")
	fs.StringVar(&cfg.ServiceCIDR, "service-cidr", "10.43.0.0/16", "range of service cluster IPs")
	fs.StringVar(&cfg.ClusterDomain, "cluster-domain", "cluster.local", "cluster DNS domain: pods' search domains and /etc/hosts names end with it")
	fs.StringVar(&cfg.CNIBridge, "cni-bridge", "", "Linux bridge (and CNI network name) the node's pods attach to (default cni0, network \"skiff\"); a distinct name keeps several clusters on one host apart")
	fs.StringVar(&cfg.ResolvConf, "resolv-conf", "", "resolver file pods with dnsPolicy Default (and ClusterFirst pods until cluster DNS serves) get, as the kubelet's --resolv-conf (default: /etc/resolv.conf)")
	fs.StringVar(&cfg.ClusterCIDR, "cluster-cidr", "10.42.0.0/16", "pod network; every node gets a podCIDR from it")
	fs.DurationVar(&cfg.LeaseDuration, "leader-elect-lease-duration", 15*time.Second, "how long the scheduler's and controller manager's leader Lease lasts without renewal (a standby takes over after it)")
	fs.DurationVar(&cfg.RenewDeadline, "leader-elect-renew-deadline", 10*time.Second, "how long the leader keeps trying to renew before it steps down")
	fs.DurationVar(&cfg.RetryPeriod, "leader-elect-retry-period", 2*time.Second, "how often candidates try to acquire or renew the Lease")
	fs.StringVar(&cfg.LocalPathDir, "local-path-dir", "", "where the local-path StorageClass puts volumes on each worker (default <data-dir>/storage)")
	fs.StringVar(&cfg.LocalPathHelperImage, "local-path-helper-image", "", "image of the pod that removes a deleted local-path volume's directory (needs rm; default "+localpath.DefaultHelperImage+")")
	fs.StringVar(&cfg.SchedulerConfig, "scheduler-config", "", "scheduler configuration file (profiles, plugins, weights); default profile when empty")
	fs.StringVar(&cfg.ContainerRuntimeEndpoint, "container-runtime-endpoint", "", "CRI socket of an existing runtime; empty: skiff supervises its own containerd")
	fs.DurationVar(&cfg.NodeMonitorGracePeriod, "node-monitor-grace-period", 40*time.Second, "how long a node may go unheard before it is marked Ready=Unknown and tainted unreachable")
	fs.DurationVar(&cfg.ClusterSigningDuration, "cluster-signing-duration", 365*24*time.Hour, "the longest certificate issued for an approved CertificateSigningRequest; spec.expirationSeconds may only shorten it")
	fs.StringVar(&cfg.StorageEncoding, "storage-encoding", "protobuf", "encoding of objects in etcd: protobuf or json")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
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

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return cluster.Run(ctx, cfg)
}

func runKubeconfig(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("skiff kubeconfig", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dataDir := fs.String("data-dir", defaultDataDir(), "the node's data directory")
	if err := fs.Parse(args); err != nil {
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
