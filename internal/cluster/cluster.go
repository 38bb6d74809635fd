package cluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	clientv3 "go.etcd.io/etcd/client/v3"
	"golang.org/x/sync/errgroup"
	"k8s.io/utils/clock"

	"github.com/skiff-sh/skiff/internal/apiserver"
	"github.com/skiff-sh/skiff/internal/apiserver/local"
	"github.com/skiff-sh/skiff/internal/etcd"
	"github.com/skiff-sh/skiff/internal/kubelet"
	"github.com/skiff-sh/skiff/internal/metricsserver"
	"github.com/skiff-sh/skiff/internal/nodelock"
	"github.com/skiff-sh/skiff/internal/pki"
	"github.com/skiff-sh/skiff/internal/storage/etcd3"
)

// Node is a running skiff node.
type Node struct {
	cfg Config
	// certs logs certificate expiries and renewals (certcheck.go).
	certs      *certChecker
	etcdMember *etcd.Member
	// etcdClient reaches etcd's client URLs: membership, health, leases, snapshots.
	etcdClient *clientv3.Client
	// etcdStorage is the client every resource's store and watch cache use: in process to an
	// embedded member (etcd.Member.InProcessClient), else etcdClient itself.
	etcdStorage *clientv3.Client
	api         *apiserver.Server
	authz       *authorization
	httpServer  *http.Server
	listener    net.Listener
	// metrics gathers every component's metrics for the API server's /metrics.
	metrics *componentMetrics
	// stopSpaceGuard ends the embedded member's disk watch; spaceCheck is its part of /readyz
	// (nil for an external etcd).
	stopSpaceGuard context.CancelFunc
	spaceCheck     func() error
	// stopCompaction ends the periodic etcd compaction loop.
	stopCompaction context.CancelFunc
	// caches are the API server's watch caches, stopped before the etcd client closes.
	caches cacheSet
	// lock keeps a second skiff off this node's data dir until Stop.
	lock *nodelock.Lock
	// stopAdmission ends the admission plugins' informers (webhook configurations, policies).
	stopAdmission context.CancelFunc
	// lb is the node-local API load balancer (lb.go).
	lb *nodeLB
	// encryption is the encryption at rest in force (nil when off; encryption.go).
	encryption *atRest
	// resourceMetrics scrapes kubelets and serves metrics.k8s.io (resourcemetrics.go).
	resourceMetrics *metricsserver.Server
	// explainer answers PodSchedulingExplanations (explain.go).
	explainer explainerSlot
	// background holds the node's own loops beside its roles (etcd compaction, the custom
	// resources' and APIServices' sync, the encryption reloader, the etcd space guard): Stop
	// cancels them and waits for them before it closes the etcd client they use.
	background sync.WaitGroup
	// runtime is the kubelet's supervised containerd, started at the beginning of Start (nil
	// when the node runs no kubelet or another runtime); Stop stops it.
	runtime *kubelet.Runtime
}

// goBackground runs f in the node's background group; f must return once the context it
// watches (one that Stop cancels) ends.
func (n *Node) goBackground(f func()) { n.background.Go(f) }

// backgroundStopGrace bounds Stop's wait for the background loops; past it the node says so
// and goes on stopping rather than never exiting.
const backgroundStopGrace = 10 * time.Second

// waitBackground waits for the background group, at most backgroundStopGrace.
func (n *Node) waitBackground() {
	done := make(chan struct{})
	go func() {
		n.background.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(backgroundStopGrace):
		n.cfg.Logger.Warn("node stopping with background loops still running", "waited", backgroundStopGrace)
	}
}

// Run starts every component of the node's roles and blocks until ctx ends or one fails. Shutdown
// is ordered: the kubelet, controllers and scheduler return first, then the API server stops
// serving, and etcd stops last.
func Run(ctx context.Context, cfg Config) error {
	if cfg.Server != "" && cfg.HasRole(RoleEtcd) && !cfg.HasRole(RoleControlPlane) {
		return runEtcdNode(ctx, cfg) // etcdonly.go
	}
	if cfg.Server != "" && !cfg.HasRole(RoleControlPlane) {
		return runJoinedNode(ctx, cfg)
	}
	if cfg.Server != "" {
		cfg.Default()
		if err := cfg.Validate(); err != nil {
			return err
		}
		if err := joinControlPlane(ctx, &cfg); err != nil {
			return err
		}
	}
	node, err := Start(ctx, cfg)
	if err != nil {
		return err
	}
	cfg.Logger.Info("skiff node ready", "roles", cfg.Roles, "api", node.URL(), "kubeconfig", cfg.AdminKubeconfigPath())
	err = node.runRoles(ctx)
	// The load balancer, the API server, then etcd go last: every role that talks to them has
	// stopped by now.
	node.stopLB()
	node.Stop()
	return err
}

// roleStopGrace bounds how long a stopping node waits for its roles to return; past it the node
// stops its API server and etcd anyway and says which role hung, rather than never exiting.
const roleStopGrace = 30 * time.Second

// role is one long-running part of a node; run returns when ctx ends (nil) or when it fails.
type role struct {
	name string
	run  func(ctx context.Context) error
}

// runRoles runs the node's roles under one errgroup.
func (n *Node) runRoles(ctx context.Context) error {
	serveErr := make(chan error, 1)
	go func() { serveErr <- n.serve() }()
	// Components start once the authorizer's caches hold the policy, so none meets a 403 that
	// only says the caches were empty.
	if err := n.authz.start(ctx, n.cfg.Logger); err != nil {
		return fmt.Errorf("start authorization: %w", err)
	}
	// The node-local load balancer comes first: the kubelet and local kubeconfigs go through it.
	if err := n.startLB(ctx); err != nil {
		return fmt.Errorf("start load balancer: %w", err)
	}
	var etcdFailed <-chan struct{}
	if n.etcdMember != nil {
		etcdFailed = n.etcdMember.Failed()
	}
	roles := []role{{name: "api server", run: func(ctx context.Context) error {
		select {
		case <-ctx.Done():
			return nil
		case err := <-serveErr:
			if err == nil {
				err = errors.New("stopped serving")
			}
			return err
		case <-etcdFailed:
			return fmt.Errorf("embedded etcd failed: %w", n.etcdMember.Err())
		}
	}}}
	roles = append(roles, n.endpointReconcilerRole())
	if n.encryption != nil && n.encryption.managed {
		roles = append(roles, n.encryptionSyncRole())
	}
	roles = append(roles, n.caSyncRole())
	roles = append(roles, n.resourceMetricsRole())
	roles = append(roles, n.schedulingExplainerRole())
	roles = append(roles, role{name: "certificate check", run: n.certs.run})
	roles = append(roles, role{name: "certificate renewal", run: n.certRenewer().run})
	if n.cfg.HasRole(RoleControlPlane) {
		inProcess, err := n.caches.localInformers(&n.cfg)
		if err != nil {
			return err
		}
		if !n.cfg.DisableControllerManager {
			roles = append(roles, role{name: "controller manager", run: func(ctx context.Context) error {
				return runControllerManager(ctx, &n.cfg, n.metrics, clock.RealClock{}.Now(), inProcess.Only(controllerManagerResources()...), n.api)
			}})
		}
		if !n.cfg.DisableScheduler {
			roles = append(roles, role{name: "scheduler", run: func(ctx context.Context) error {
				return runScheduler(ctx, &n.cfg, n.metrics, clock.RealClock{}.Now(), inProcess.Only(schedulerResources()...), n.api)
			}})
		}
		roles = append(roles, n.etcdSnapshotRole())
		roles = append(roles,
			role{name: "cloud controller manager", run: func(ctx context.Context) error {
				return runCloudControllerManager(ctx, &n.cfg, clock.RealClock{}.Now())
			}},
			role{name: "joined worker labels", run: func(ctx context.Context) error {
				labelJoinedWorkers(ctx, n.authz.client, n.cfg.Logger)
				return nil
			}})
		roles = append(roles, n.manifestsRole())
		roles = append(roles, n.ingressStatusRole())
	}
	if n.cfg.runsKubelet() {
		// A worker that also runs the API server gives the kubelet, service proxy and DNS informers
		// on its watch cache (one copy of each pod, Service and EndpointSlice in the process), as
		// the controller manager and scheduler get.
		var inProcess *local.Informers
		if n.cfg.HasRole(RoleControlPlane) {
			var err error
			if inProcess, err = n.caches.localInformers(&n.cfg); err != nil {
				return err
			}
		}
		roles = append(roles,
			role{name: "node role labels", run: func(ctx context.Context) error {
				n.authz.labelNodeRoles(ctx, n.cfg.NodeName, kubeletRoles(n.cfg.Roles), n.cfg.Logger)
				return nil
			}},
			role{name: "worker", run: func(ctx context.Context) error {
				return runWorker(ctx, &n.cfg, clock.RealClock{}.Now(), inProcess, n.runtime)
			}},
			role{name: "dns", run: func(ctx context.Context) error {
				return runDNS(ctx, &n.cfg, n.metrics, clock.RealClock{}.Now(), inProcess.Only(dnsResources()...))
			}},
			role{name: "pod network", run: func(ctx context.Context) error { return runPodNetwork(ctx, &n.cfg, clock.RealClock{}.Now()) }})
		if !n.cfg.DisableProxy {
			roles = append(roles, role{name: "service proxy", run: func(ctx context.Context) error {
				return runProxy(ctx, &n.cfg, n.metrics, clock.RealClock{}.Now(), inProcess.Only(proxyResources()...))
			}})
		}
		roles = append(roles, n.ingressRoles()...)
		if !n.cfg.DisableNetworkPolicy {
			roles = append(roles, role{name: "network policy", run: func(ctx context.Context) error {
				return runNetworkPolicy(ctx, &n.cfg, n.metrics, clock.RealClock{}.Now(), inProcess.Only(netpolResources()...))
			}})
		}
	}
	return runRoles(ctx, roles, roleStopGrace, n.cfg.Logger)
}

// runRoles runs roles under one errgroup until ctx ends or one of them fails: the first failure
// cancels the others and is returned with the role's name. It returns once every role has returned,
// or grace after the stop began if some role hangs (naming it), so the caller can stop the API
// server and etcd after them.
func runRoles(ctx context.Context, roles []role, grace time.Duration, log *slog.Logger) error {
	g, gctx := errgroup.WithContext(ctx)
	running := newRoleSet()
	for _, r := range roles {
		running.add(r.name)
		g.Go(func() error {
			defer running.done(r.name)
			err := r.run(gctx)
			if err != nil && gctx.Err() == nil {
				return fmt.Errorf("%s: %w", r.name, err)
			}
			return nil
		})
	}
	done := make(chan error, 1)
	go func() { done <- g.Wait() }()
	select {
	case err := <-done:
		return err
	case <-gctx.Done():
	}
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case err := <-done:
		return err
	case <-timer.C:
		hung := running.names()
		log.Error("roles did not stop in time; stopping the API server and etcd under them", "roles", hung, "grace", grace)
		return fmt.Errorf("roles %v did not stop within %s", hung, grace)
	}
}

// roleSet tracks which roles are still running, for the message when a stop hangs.
type roleSet struct {
	mu      sync.Mutex
	running map[string]bool
}

func newRoleSet() *roleSet { return &roleSet{running: map[string]bool{}} }

func (s *roleSet) add(name string)  { s.mu.Lock(); s.running[name] = true; s.mu.Unlock() }
func (s *roleSet) done(name string) { s.mu.Lock(); delete(s.running, name); s.mu.Unlock() }

func (s *roleSet) names() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(maps.Keys(s.running))
}

// Start brings the node up (certificates, etcd, API server) without serving yet.
func Start(ctx context.Context, cfg Config) (*Node, error) {
	cfg.Default()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	applyMemoryLimit(planMemoryLimit(cfg.MemoryLimit, os.Getenv("GOMEMLIMIT")), setProcessMemoryLimit, cfg.Logger)
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("create data dir: %w", err)
	}
	lock, err := nodelock.Acquire(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	n := &Node{cfg: cfg, lock: lock}
	ok := false
	defer func() {
		if !ok {
			n.Stop()
		}
	}()
	// The skew policy (skew.go): a data dir last written by a newer binary is refused before
	// anything in it is touched; a joining node checked the cluster's versions in joinControlPlane.
	rec, err := checkDataDir(cfg.DataDir, cfg.HasRole(RoleControlPlane) || cfg.HasRole(RoleEtcd))
	if err == nil {
		err = writeDataDirRecord(cfg.DataDir, rec)
	}
	if err != nil {
		return nil, err
	}
	phases := newStartPhases(cfg.Logger)
	if n.runtime, err = startKubeletRuntime(&cfg); err != nil { // worker.go
		return nil, err
	}
	phases.done("data dir and container runtime started")
	n.certs = newCertChecker(&cfg, clock.RealClock{})
	certs, err := ensureCertificates(&cfg, clock.RealClock{}.Now())
	if err != nil {
		return nil, err
	}
	// etcd lives until Stop, not until ctx ends: a stopping node's roles still need the API server
	// (to release their leader Leases) after the signal that cancelled ctx.
	phases.done("certificates")
	if err := n.startStorage(context.WithoutCancel(ctx)); err != nil {
		return nil, err
	}
	phases.done("storage")
	base := prometheus.NewRegistry()
	base.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	n.metrics = newComponentMetrics(base)
	admission, err := newAdmission(&cfg)
	if err != nil {
		return nil, err
	}
	// The admission caches outlive start-up: they follow the configurations for the node's life.
	admissionCtx, cancelAdmission := context.WithCancel(context.Background())
	n.stopAdmission = cancelAdmission
	// The encryption configuration is followed for the node's life, like the admission caches.
	n.encryption, err = encryptionAtRest(admissionCtx, &cfg, base, n.goBackground)
	if err != nil {
		return nil, err
	}
	if n.resourceMetrics, err = newResourceMetrics(&cfg, n.metrics.fresh("resource-metrics"), clock.RealClock{}.Now()); err != nil {
		return nil, err
	}
	phases.done("admission, encryption and metrics")
	api, authz, err := newAPIServer(ctx, admissionCtx, apiServerDeps{
		cfg: &cfg, client: n.etcdClient, storage: n.etcdStorage, spaceCheck: n.spaceCheck, metrics: n.metrics, caches: &n.caches,
		admission: admission, encryption: n.encryption, resourceMetrics: n.resourceMetrics, explainer: &n.explainer,
	})
	if err != nil {
		return nil, err
	}
	n.api, n.authz = api, authz
	phases.done("API server")
	compactCtx, cancelCompaction := context.WithCancel(context.Background())
	n.stopCompaction = cancelCompaction
	compactor := etcd3.NewCompactor(n.etcdStorage, etcd3.DefaultCompactionInterval, clock.RealClock{}, cfg.Logger)
	n.goBackground(func() { compactor.Run(compactCtx) })
	// Custom resources are served before the first request, then kept up to date in the background
	// like compaction, and stop with it.
	if err := api.SyncCustomResources(ctx); err != nil {
		return nil, err
	}
	api.StartStepDone(apiserver.StepAPIExtensionsInformers, apiserver.StepAPIExtensionsCtrls, apiserver.StepCRDInformerSynced)
	phases.done("custom resources served")
	n.goBackground(func() {
		if err := api.RunCustomResources(compactCtx); err != nil {
			cfg.Logger.Error("custom resources", "err", err)
		}
	})
	// The Gateway API's definitions (gatewayapi.go) are created after the start, not in bootstrap:
	// validating ten large schemas took 10 to 20 s before the API server listened; the
	// custom-resource loop serves each once it is established.
	n.goBackground(func() { ensureGatewayAPIDefinitions(compactCtx, api, cfg.Logger) })
	// Service cluster IPs and node ports leaked by a stop between allocation and write go back.
	n.goBackground(func() { api.RunServiceRepair(compactCtx, serviceRepairPeriod) })
	// APIServices: availability and proxying to extension API servers (aggregation.go).
	n.goBackground(func() {
		if err := api.RunAggregation(compactCtx); err != nil {
			cfg.Logger.Error("API aggregation", "err", err)
		}
	})
	tlsCfg, err := servingTLS(certs, requestHeaderCAFile(&cfg))
	if err != nil {
		return nil, err
	}
	addr := net.JoinHostPort(cfg.BindAddress, strconv.Itoa(cfg.HTTPSPort))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	limits := connLimits(cfg.MaxConnectionsPerClient)
	cfg.Logger.Debug("API server connection limits", "perClient", limits.PerClient, "total", limits.Total,
		"requestTimeout", cfg.RequestTimeout, "idleTimeout", cfg.IdleConnectionTimeout)
	n.listener = apiserver.LimitListener(ln, limits, n.metrics.connectionRejected)
	n.httpServer = apiServerHTTP(api, tlsCfg, cfg.IdleConnectionTimeout, cfg.ReadHeaderTimeout)
	phases.done("listening")
	ok = true
	return n, nil
}

// serviceRepairPeriod is how often the service allocation bitmaps are repaired against the
// Services (Kubernetes' repair controllers run every 3 minutes too).
const serviceRepairPeriod = 3 * time.Minute

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
	if n.runtime != nil {
		// The kubelet (a role) has stopped: containerd goes first, it needs nothing below.
		if err := n.runtime.Close(); err != nil {
			n.cfg.Logger.Error("containerd", "err", err)
		}
	}
	if n.stopAdmission != nil {
		n.stopAdmission()
	}
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
	n.caches.stop()
	if n.stopSpaceGuard != nil {
		n.stopSpaceGuard()
	}
	n.waitBackground()
	if n.etcdStorage != nil && n.etcdStorage != n.etcdClient {
		n.etcdStorage.Close()
	}
	if n.etcdClient != nil {
		n.etcdClient.Close()
	}
	if n.etcdMember != nil {
		n.etcdMember.Stop()
	}
	n.lock.Release()
}

type nodeCerts struct {
	// caFile is the cluster CA bundle, caPEM the CA that signs this node's certificates.
	caFile             string
	caPEM              []byte
	adminKubeconfigPEM []byte
	// serving are the API server's serving pairs, ECDSA first and RSA beside it.
	serving []pki.KeyPairFiles
}

// ensureCertificates creates (once) the cluster CA, the API server's serving certificate and the
// admin kubeconfig.
func ensureCertificates(cfg *Config, now time.Time) (*nodeCerts, error) {
	dir := filepath.Join(cfg.DataDir, "pki")
	_, statErr := os.Stat(filepath.Join(dir, "ca.crt"))
	newCluster := errors.Is(statErr, os.ErrNotExist)
	ca, err := pki.LoadOrCreateCA(dir, "ca", "skiff-ca", now)
	if err != nil {
		return nil, err
	}
	// The service-account signing key is born with the CA; afterwards it must be there (the API
	// server refuses to start without it rather than invalidate every token with a new one).
	if newCluster {
		if _, err := pki.LoadOrCreateKey(filepath.Join(dir, "sa.key")); err != nil {
			return nil, fmt.Errorf("service account key: %w", err)
		}
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
	serving, err := ca.EnsureServing(dir, "apiserver", pki.Leaf{CommonName: "kube-apiserver", DNSNames: dns, IPs: ips, Server: true}, now)
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
	kubeconfig, err := localKubeconfig(cfg, ca.CertPEM, certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	if err := pki.WriteFileAtomic(cfg.AdminKubeconfigPath(), kubeconfig, 0o600); err != nil {
		return nil, fmt.Errorf("write admin kubeconfig: %w", err)
	}
	return &nodeCerts{caFile: filepath.Join(dir, "ca.crt"), caPEM: ca.CertPEM, serving: serving, adminKubeconfigPEM: kubeconfig}, nil
}

// servingTLS is the API server's TLS: its serving certificates (ECDSA, and RSA for clients that
// offer only RSA suites or need the static RSA key exchange, pki.ServeStaticRSA), and client
// certificates of the cluster CA or of the front proxy's (clientCAFiles; the authenticators tell
// the two apart), read from their bundle files at each handshake so that a CA rotation's new CA is
// trusted, and its old one refused, without a restart.
func servingTLS(c *nodeCerts, clientCAFiles ...string) (*tls.Config, error) {
	// The chain ends with the CA bundle, so a joining node can check it against the pin in its
	// join token before it trusts the server or sends its token (internal/join). Served from a
	// holder: the renewal loop's (or `skiff certificate rotate`'s) new pairs serve from the next
	// handshake, and a CA rotation's bundle (the new CA beside the old) from the one after it is
	// written.
	holder, err := pki.NewKeyPairHolderWithBundle(c.serving, c.caFile)
	if err != nil {
		return nil, err
	}
	clientCAs, err := pki.NewPoolHolder(append([]string{c.caFile}, clientCAFiles...)...)
	if err != nil {
		return nil, fmt.Errorf("API server client CAs: %w", err)
	}
	return clientCAs.ServerTLS(holder.ServerTLS(apiserver.TLSConfig(nil, &tls.Config{ClientCAs: clientCAs.Pool()}))), nil
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
