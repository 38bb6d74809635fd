package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/utils/clock"

	"github.com/skiff-sh/skiff/internal/apiserver"
	"github.com/skiff-sh/skiff/internal/etcd"
	"github.com/skiff-sh/skiff/internal/pki"
	"github.com/skiff-sh/skiff/internal/storage/etcd3"
)

// Version is what /version reports; kubectl compares its own minor version to it.
var Version = version.Info{
	Major: "1", Minor: "32", GitVersion: "v1.32.0-skiff", GitCommit: "", GitTreeState: "clean",
	BuildDate: "2026-11-21T00:00:00Z", GoVersion: "go1.26", Compiler: "gc", Platform: "linux/amd64",
}

// Node is a running skiff node.
type Node struct {
	cfg        Config
	etcdMember *etcd.Member
	etcdClient *clientv3.Client
	api        *apiserver.Server
	httpServer *http.Server
	listener   net.Listener
	// metrics gathers every component's metrics for the API server's /metrics.
	metrics *componentMetrics
	// stopCompaction ends the periodic etcd compaction loop.
	stopCompaction context.CancelFunc
}

// Run starts every component of the node's roles and blocks until ctx ends or one fails.
func Run(ctx context.Context, cfg Config) error {
	node, err := Start(ctx, cfg)
	if err != nil {
		return err
	}
	defer node.Stop()
	cfg.Logger.Info("skiff node ready", "roles", cfg.Roles, "api", node.URL(), "kubeconfig", cfg.AdminKubeconfigPath())
	errCh := make(chan error, 3)
	go func() { errCh <- node.serve() }()
	if cfg.HasRole(RoleControlPlane) {
		go func() {
			if err := runControllerManager(ctx, &node.cfg, node.metrics, clock.RealClock{}.Now()); err != nil {
				errCh <- err
			}
		}()
		go func() {
			if err := runScheduler(ctx, &node.cfg, node.metrics, clock.RealClock{}.Now()); err != nil {
				errCh <- err
			}
		}()
	}
	if cfg.HasRole(RoleWorker) {
		go func() {
			if err := runWorker(ctx, &node.cfg, clock.RealClock{}.Now()); err != nil && ctx.Err() == nil {
				errCh <- fmt.Errorf("worker: %w", err)
			}
		}()
	}
	var failed <-chan struct{}
	if node.etcdMember != nil {
		failed = node.etcdMember.Failed()
	}
	select {
	case <-ctx.Done():
		return nil
	case err := <-errCh:
		return err
	case <-failed:
		return fmt.Errorf("embedded etcd failed: %w", node.etcdMember.Err())
	}
}

// Start brings the node up (certificates, etcd, API server) without serving yet.
func Start(ctx context.Context, cfg Config) (*Node, error) {
	cfg.Default()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("create data dir: %w", err)
	}
	n := &Node{cfg: cfg}
	ok := false
	defer func() {
		if !ok {
			n.Stop()
		}
	}()
	certs, err := ensureCertificates(&cfg, clock.RealClock{}.Now())
	if err != nil {
		return nil, err
	}
	if err := n.startStorage(ctx); err != nil {
		return nil, err
	}
	base := prometheus.NewRegistry()
	base.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	n.metrics = newComponentMetrics(base)
	api, err := newAPIServer(ctx, &cfg, n.etcdClient, n.metrics)
	if err != nil {
		return nil, err
	}
	n.api = api
	compactCtx, cancelCompaction := context.WithCancel(context.Background())
	n.stopCompaction = cancelCompaction
	go etcd3.NewCompactor(n.etcdClient, etcd3.DefaultCompactionInterval, clock.RealClock{}, cfg.Logger).Run(compactCtx)
	// Custom resources are served before the first request, then kept up to date in the background
	// like compaction, and stop with it.
	if err := api.SyncCustomResources(ctx); err != nil {
		return nil, err
	}
	go func() {
		if err := api.RunCustomResources(compactCtx); err != nil {
			cfg.Logger.Error("custom resources", "err", err)
		}
	}()
	tlsCfg, err := servingTLS(certs)
	if err != nil {
		return nil, err
	}
	addr := net.JoinHostPort(cfg.BindAddress, strconv.Itoa(cfg.HTTPSPort))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	n.listener = ln
	n.httpServer = &http.Server{
		Handler:           api,
		TLSConfig:         tlsCfg,
		ReadHeaderTimeout: 30 * time.Second,
		ErrorLog:          nil,
	}
	ok = true
	return n, nil
}

func (n *Node) serve() error {
	err := n.httpServer.ServeTLS(n.listener, "", "")
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// URL is the API server's address as clients on this host reach it.
func (n *Node) URL() string {
	return n.cfg.LocalURL()
}

// Stop shuts everything down in reverse order.
func (n *Node) Stop() {
	if n.stopCompaction != nil {
		n.stopCompaction()
	}
	if n.httpServer != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = n.httpServer.Shutdown(ctx)
		cancel()
	} else if n.listener != nil {
		n.listener.Close()
	}
	if n.etcdClient != nil {
		n.etcdClient.Close()
	}
	if n.etcdMember != nil {
		n.etcdMember.Stop()
	}
}

func (n *Node) startStorage(ctx context.Context) error {
	if len(n.cfg.EtcdServers) > 0 {
		client, err := etcd.NewClient(n.cfg.EtcdServers, nil)
		if err != nil {
			return fmt.Errorf("connect to external etcd %v: %w", n.cfg.EtcdServers, err)
		}
		n.etcdClient = client
		return nil
	}
	ecfg := etcd.Config{
		Name:                n.cfg.NodeName,
		DataDir:             filepath.Join(n.cfg.DataDir, "etcd"),
		ListenClientURLs:    []string{"http://127.0.0.1:" + strconv.Itoa(n.cfg.EtcdClientPort)},
		AdvertiseClientURLs: []string{"http://127.0.0.1:" + strconv.Itoa(n.cfg.EtcdClientPort)},
		ListenPeerURLs:      []string{"http://127.0.0.1:" + strconv.Itoa(n.cfg.EtcdPeerPort)},
		AdvertisePeerURLs:   []string{"http://127.0.0.1:" + strconv.Itoa(n.cfg.EtcdPeerPort)},
	}
	if ecfg.Name == "" {
		ecfg.Name = etcd.DefaultName
	}
	member, err := etcd.Start(ctx, ecfg)
	if err != nil {
		return fmt.Errorf("start embedded etcd: %w", err)
	}
	n.etcdMember = member
	client, err := member.Client()
	if err != nil {
		return fmt.Errorf("etcd client: %w", err)
	}
	n.etcdClient = client
	return nil
}

type nodeCerts struct {
	caPEM              []byte
	servingCert        string
	servingKey         string
	adminKubeconfigPEM []byte
}

// ensureCertificates creates (once) the cluster CA, the API server's serving certificate and the
// admin kubeconfig.
func ensureCertificates(cfg *Config, now time.Time) (*nodeCerts, error) {
	dir := filepath.Join(cfg.DataDir, "pki")
	ca, err := pki.LoadOrCreateCA(dir, "ca", "skiff-ca", now)
	if err != nil {
		return nil, err
	}
	ips := []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP(cfg.AdvertiseAddress)}
	if ip := net.ParseIP(cfg.BindAddress); ip != nil && !ip.IsUnspecified() {
		ips = append(ips, ip)
	}
	if first, err := firstServiceIP(cfg.ServiceCIDR); err == nil {
		ips = append(ips, first)
	}
	dns := []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"}
	if cfg.NodeName != "" {
		dns = append(dns, cfg.NodeName)
	}
	servingCert, servingKey, err := ca.EnsureLeaf(dir, "apiserver", pki.Leaf{CommonName: "kube-apiserver", DNSNames: dns, IPs: ips, Server: true}, now)
	if err != nil {
		return nil, fmt.Errorf("API server certificate: %w", err)
	}
	adminCert, adminKey, err := ca.EnsureLeaf(dir, "admin", pki.Leaf{CommonName: "kubernetes-admin", Organization: []string{"system:masters"}, Client: true}, now)
	if err != nil {
		return nil, fmt.Errorf("admin certificate: %w", err)
	}
	certPEM, err := os.ReadFile(adminCert)
	if err != nil {
		return nil, err
	}
	keyPEM, err := os.ReadFile(adminKey)
	if err != nil {
		return nil, err
	}
	kubeconfig, err := pki.Kubeconfig("skiff", cfg.LocalURL(), ca.CertPEM, certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	if err := pki.WriteFileAtomic(cfg.AdminKubeconfigPath(), kubeconfig, 0o600); err != nil {
		return nil, fmt.Errorf("write admin kubeconfig: %w", err)
	}
	return &nodeCerts{caPEM: ca.CertPEM, servingCert: servingCert, servingKey: servingKey, adminKubeconfigPEM: kubeconfig}, nil
}

func servingTLS(c *nodeCerts) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(c.servingCert, c.servingKey)
	if err != nil {
		return nil, fmt.Errorf("load serving certificate: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(c.caPEM) {
		return nil, errors.New("cluster CA certificate does not parse")
	}
	return apiserver.TLSConfig(cert, &tls.Config{ClientCAs: pool}), nil
}

// firstServiceIP is the service range's first address: the "kubernetes" service's cluster IP.
func firstServiceIP(cidr string) (net.IP, error) {
	_, ipnet, err := net.ParseCIDR(cidr)
	if err != nil {
		return nil, err
	}
	ip := make(net.IP, len(ipnet.IP))
	copy(ip, ipnet.IP)
	ip[len(ip)-1]++
	return ip, nil
}
