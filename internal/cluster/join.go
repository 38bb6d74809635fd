package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"github.com/prometheus/client_golang/prometheus"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/skiff-sh/skiff/internal/join"
	"github.com/skiff-sh/skiff/internal/nodelock"
	"github.com/skiff-sh/skiff/internal/pki"
)

// workerRoleLabel is how a joined worker says it has the worker role: a kubelet may set this label
// on its own Node (NodeRestriction forbids node-role.kubernetes.io/*), and the control plane turns
// it into node-role.kubernetes.io/worker (labelJoinedWorkers).
const workerRoleLabel = "node.skiff.sh/worker"

// validateJoin checks the join flags: a node without the controlplane role joins a cluster.
func (c *Config) validateJoin() []error {
	var errs []error
	if c.Server == "" {
		if c.HasRole(RoleWorker) && !c.HasRole(RoleControlPlane) {
			errs = append(errs, errors.New("a worker-only node joins a cluster: --server https://HOST:PORT and --token (skiff token create on a control-plane node)"))
		}
		if c.Token != "" {
			errs = append(errs, errors.New("--token needs --server"))
		}
		return errs
	}
	if u, err := url.Parse(c.Server); err != nil || u.Scheme != "https" || u.Host == "" {
		errs = append(errs, fmt.Errorf("--server %q must be https://HOST:PORT", c.Server))
	}
	if c.Token != "" {
		if _, err := join.ParseJoinToken(c.Token); err != nil {
			errs = append(errs, fmt.Errorf("--token: %w", err))
		}
	}
	return errs
}

// joinControlPlane prepares a joining control-plane node: unless it already has the cluster's keys
// (a restart), it fetches them with a control-plane token (after checking the CA pin) and stores
// them in its pki directory; the node then starts like the first one, on the shared etcd. A refused
// join removes a data dir it created.
func joinControlPlane(ctx context.Context, cfg *Config) error {
	dir := filepath.Join(cfg.DataDir, "pki")
	if _, err := os.Stat(filepath.Join(dir, "ca.crt")); err == nil {
		cfg.Logger.Info("control-plane node has the cluster's keys; rejoining without a token", "node", cfg.NodeName)
		return checkControlPlaneJoinSkew(ctx, cfg) // skew.go
	}
	if cfg.Token == "" {
		return fmt.Errorf("control-plane node %s has not joined yet (no %s): --token is required the first time", cfg.NodeName, filepath.Join(dir, "ca.crt"))
	}
	token, err := join.ParseJoinToken(cfg.Token)
	if err != nil {
		return fmt.Errorf("--token: %w", err)
	}
	_, statErr := os.Stat(cfg.DataDir)
	freshDir := errors.Is(statErr, os.ErrNotExist)
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	keys, err := join.FetchKeys(ctx, cfg.Server, token)
	if err == nil {
		err = keys.Write(dir)
	}
	if err == nil {
		err = checkControlPlaneJoinSkew(ctx, cfg)
	}
	if err != nil {
		if freshDir {
			os.RemoveAll(cfg.DataDir)
		}
		return err
	}
	cfg.Logger.Info("cluster keys fetched; starting the control plane", "node", cfg.NodeName, "server", cfg.Server)
	return nil
}

// runJoinedNode runs a worker-only node of an existing cluster: it joins first when it has no
// certificates yet (with the token), then runs its kubelet as system:node:<name> and keeps the
// node's certificates renewed.
func runJoinedNode(ctx context.Context, cfg Config) error {
	cfg.Default()
	if err := cfg.Validate(); err != nil {
		return err
	}
	_, statErr := os.Stat(cfg.DataDir)
	freshDir := errors.Is(statErr, os.ErrNotExist)
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return fmt.Errorf("create data dir: %w", err)
	}
	lock, err := nodelock.Acquire(cfg.DataDir)
	if err != nil {
		return err
	}
	defer lock.Release()
	id := join.Identity{Dir: filepath.Join(cfg.DataDir, "pki")}
	if !id.Joined() {
		if err := joinCluster(ctx, &cfg, id); err != nil {
			// Nothing half-joined: a data dir this attempt created goes again.
			lock.Release()
			if freshDir {
				os.RemoveAll(cfg.DataDir)
			}
			return err
		}
	} else {
		cfg.Logger.Info("node has its certificates; rejoining without a token", "node", cfg.NodeName, "server", cfg.Server)
	}
	// The skew policy (skew.go), once the node can ask the cluster and before it runs anything.
	rec, err := checkClusterSkew(ctx, cfg.DataDir, id.RESTConfig(cfg.Server, "skiff-version-skew"), cfg.NodeName, false, cfg.Logger)
	if err == nil {
		err = writeDataDirRecord(cfg.DataDir, rec)
	}
	if err != nil {
		lock.Release()
		if freshDir {
			os.RemoveAll(cfg.DataDir)
		}
		return err
	}
	serving := &servingCert{}
	if err := serving.load(id.Dir, clock.RealClock{}.Now()); err != nil {
		cfg.Logger.Info("kubelet serving certificate will be requested", "reason", err.Error())
	}
	// The cluster CA bundle as it is on disk, so a CA rotation's bundle is trusted without a
	// restart.
	clientCAs, err := pki.NewPoolHolder(id.CAPath())
	if err != nil {
		return fmt.Errorf("kubelet client CAs: %w", err)
	}
	serverTLS := joinedKubeletTLS(serving, clientCAs)
	tlsFiles, err := newNodeClientTLS(id)
	if err != nil {
		return err
	}
	// Every component reaches the API servers through the node-local balancer (joinlb.go); it
	// outlives the roles, so the kubelet's last status writes still go through.
	nodeLB, err := startJoinedLB(ctx, &cfg, id, tlsFiles)
	if err != nil {
		return fmt.Errorf("start load balancer: %w", err)
	}
	defer nodeLB.close()
	restCfg, err := joinedRESTConfig(&cfg, id, tlsFiles, "kubelet")
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return err
	}
	// asNode is a client config of the node for a component (its user agent).
	asNode := func(userAgent string, run func(*rest.Config) error) error {
		rc, err := joinedRESTConfig(&cfg, id, tlsFiles, userAgent)
		if err != nil {
			return err
		}
		return run(rc)
	}
	cfg.Logger.Info("skiff node joined", "node", cfg.NodeName, "roles", cfg.Roles, "server", cfg.Server, "api", cfg.LBURL())
	roles := []role{
		{name: "worker", run: func(ctx context.Context) error {
			return runKubelet(ctx, &cfg, kubeletIdentity{rest: restCfg, serverTLS: serverTLS, labels: map[string]string{workerRoleLabel: "true"}})
		}},
		{name: "certificates", run: func(ctx context.Context) error {
			return runCertificates(ctx, &cfg, id, client, serving, clock.RealClock{})
		}},
		{name: "dns", run: func(ctx context.Context) error {
			return asNode("dns", func(rc *rest.Config) error { return runDNSAs(ctx, &cfg, prometheus.NewRegistry(), rc, nil) })
		}},
		{name: "pod network", run: func(ctx context.Context) error {
			return asNode("podnet", func(rc *rest.Config) error { return runPodNetworkAs(ctx, &cfg, rc) })
		}},
	}
	if !cfg.DisableProxy {
		roles = append(roles, role{name: "service proxy", run: func(ctx context.Context) error {
			return asNode("proxy", func(rc *rest.Config) error { return runProxyAs(ctx, &cfg, prometheus.NewRegistry(), rc, nil) })
		}})
	}
	roles = append(roles, joinedIngressRoles(&cfg, id, tlsFiles, client)...)
	if !cfg.DisableNetworkPolicy {
		roles = append(roles, role{name: "network policy", run: func(ctx context.Context) error {
			return asNode("netpol", func(rc *rest.Config) error { return runNetworkPolicyAs(ctx, &cfg, prometheus.NewRegistry(), rc, nil) })
		}})
	}
	return runRoles(ctx, roles, roleStopGrace, cfg.Logger)
}

// joinCluster turns the join token into the node's client certificate.
func joinCluster(ctx context.Context, cfg *Config, id join.Identity) error {
	if cfg.Token == "" {
		return fmt.Errorf("node %s has not joined yet (no %s): --token is required the first time", cfg.NodeName, id.CertPath())
	}
	token, err := join.ParseJoinToken(cfg.Token)
	if err != nil {
		return fmt.Errorf("--token: %w", err)
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	if err := join.Bootstrap(ctx, id, cfg.Server, token, cfg.NodeName, cfg.Logger); err != nil {
		return err
	}
	cfg.Logger.Info("node client certificate issued", "node", cfg.NodeName, "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// servingCert is the kubelet's current serving certificates, in pki.ServingAlgorithms' order:
// ECDSA, and RSA beside it for clients that offer only RSA cipher suites.
type servingCert struct {
	certs atomic.Pointer[[]tls.Certificate]
}

func (s *servingCert) pairs(dir string) []pki.KeyPairFiles {
	return pki.ServingPairFiles(dir, join.KubeletServingCert)
}

// get is the kubelet server's GetCertificate: the first certificate the client supports.
func (s *servingCert) get(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	certs := s.certs.Load()
	if certs == nil {
		return nil, errors.New("kubelet serving certificate not issued yet")
	}
	return pki.PickServing(hello, *certs)
}

// joinedKubeletTLS is a joined node's kubelet TLS: the serving certificates of the moment
// (renewed while the node runs), and client certificates of the cluster CA verified when given;
// callers without one bring a bearer token, which the kubelet reviews (kubeletauth), as on every
// other node. The client CAs are read from their bundle at each handshake.
func joinedKubeletTLS(serving *servingCert, clientCAs *pki.PoolHolder) *tls.Config {
	cfg := &tls.Config{
		GetCertificate: serving.get,
		ClientCAs:      clientCAs.Pool(), ClientAuth: tls.VerifyClientCertIfGiven, MinVersion: tls.VersionTLS12,
	}
	return clientCAs.ServerTLS(pki.ServeStaticRSA(cfg, serving.rsa))
}

// rsa is the current RSA certificate, for the clients that need the static RSA key exchange
// (pki.ServeStaticRSA); nil until one is issued.
func (s *servingCert) rsa() *tls.Certificate {
	certs := s.certs.Load()
	if certs == nil {
		return nil
	}
	return pki.RSACertificate(*certs)
}

// due reports whether the serving certificates are to be requested: none is loaded, one of the
// keys is missing (a node that joined before skiff served RSA beside ECDSA has only the ECDSA
// pair), or one is due for renewal. They are requested together, so they renew together.
func (s *servingCert) due(now time.Time) bool {
	certs := s.certs.Load()
	if certs == nil || len(*certs) < len(pki.ServingAlgorithms()) {
		return true
	}
	for _, c := range *certs {
		if join.NeedsRenewal(c.Leaf, now) {
			return true
		}
	}
	return false
}

// load takes the serving certificates on disk when they are still good. The first (ECDSA) pair is
// required; a later one that is missing, damaged or expired is left out (the node serves with the
// others until due has them requested again).
func (s *servingCert) load(dir string, now time.Time) error {
	var certs []tls.Certificate
	for i, p := range s.pairs(dir) {
		c, err := pki.LoadServing([]pki.KeyPairFiles{p})
		if err == nil && now.After(c[0].Leaf.NotAfter) {
			err = fmt.Errorf("kubelet serving certificate %s has expired", p.CertFile)
		}
		switch {
		case err != nil && i == 0:
			return err
		case err == nil:
			certs = append(certs, c[0])
		}
	}
	s.certs.Store(&certs)
	return nil
}

// runCertificates obtains the kubelet serving certificate once the Node is registered (the approver
// checks its names against the Node's), then renews it and the client certificate when due; where
// the HTTP data plane runs, its client certificate too (joiningress.go).
func runCertificates(ctx context.Context, cfg *Config, id join.Identity, client kubernetes.Interface, serving *servingCert, clk clock.WithTicker) error {
	check := func() {
		now := clk.Now()
		// The cluster's CA bundle first (clusterinfo.go): after a CA rotation's sign phase the
		// certificates the old CA signed are re-issued now, not at their renewal time.
		renew, err := syncClusterCA(ctx, client, id, nodeLeaves(id, serving))
		if err != nil && ctx.Err() == nil {
			cfg.Logger.Warn("cluster CA bundle", "err", err)
		}
		if len(renew) > 0 {
			cfg.Logger.Info("certificates signed by a CA that no longer signs; requesting new ones", "node", cfg.NodeName, "certificates", renew)
		}
		if serving.due(now) || renewsServing(renew) {
			if err := requestServingCert(ctx, cfg, id, client, serving); err != nil && ctx.Err() == nil {
				cfg.Logger.Warn("kubelet serving certificate", "err", err)
			}
		}
		if err := renewClientCert(ctx, cfg, id, client, now, slices.Contains(renew, "client")); err != nil && ctx.Err() == nil {
			cfg.Logger.Warn("renew node client certificate", "err", err)
		}
		if cfg.runsIngress() {
			if err := renewIngressClientCert(ctx, cfg, id, client, now, slices.Contains(renew, ingressLeafName)); err != nil && ctx.Err() == nil {
				cfg.Logger.Warn("HTTP data plane client certificate", "err", err)
			}
		}
	}
	check()
	ticker := clk.NewTicker(time.Minute)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C():
			check()
		}
	}
}

func requestServingCert(ctx context.Context, cfg *Config, id join.Identity, client kubernetes.Interface, serving *servingCert) error {
	// The approver compares the names with the registered Node's: wait for the kubelet to register
	// and report its address.
	if err := wait.PollUntilContextCancel(ctx, 500*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		node, err := client.CoreV1().Nodes().Get(ctx, cfg.NodeName, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, a := range node.Status.Addresses {
			if a.Address == cfg.AdvertiseAddress {
				return true, nil
			}
		}
		return false, nil
	}); err != nil {
		return err
	}
	// Every pair is issued before any is written, so a request that fails leaves the pairs on
	// disk as they were, and the next check asks for all of them again.
	type issued struct{ cert, key []byte }
	var got []issued
	for _, alg := range pki.ServingAlgorithms() {
		certPEM, keyPEM, err := join.RequestCertificate(ctx, client, servingRequest(cfg, alg))
		if err != nil {
			return fmt.Errorf("%s: %w", alg, err)
		}
		got = append(got, issued{certPEM, keyPEM})
	}
	for i, p := range serving.pairs(id.Dir) {
		if err := pki.WriteFileAtomic(p.KeyFile, got[i].key, 0o600); err != nil {
			return err
		}
		if err := pki.WriteFileAtomic(p.CertFile, got[i].cert, 0o600); err != nil {
			return err
		}
	}
	if err := serving.load(id.Dir, time.Now()); err != nil {
		return err
	}
	cfg.Logger.Info("kubelet serving certificates issued", "node", cfg.NodeName, "keys", len(got))
	return nil
}

// servingRequest is the kubelet-serving request for a key of alg: the node's name and address,
// and the usages upstream's kubelet asks for (key encipherment only with an RSA key, which the
// TLS_RSA key exchange uses).
func servingRequest(cfg *Config, alg pki.KeyAlgorithm) join.CertificateRequest {
	usages := []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth}
	if alg == pki.RSA2048 {
		usages = append(usages, certificatesv1.UsageKeyEncipherment)
	}
	req := join.CertificateRequest{
		NodeName: cfg.NodeName, SignerName: certificatesv1.KubeletServingSignerName,
		Usages: usages, DNSNames: []string{cfg.NodeName}, Key: alg,
	}
	if ip := net.ParseIP(cfg.AdvertiseAddress); ip != nil {
		req.IPs = []net.IP{ip}
	}
	return req
}

// nodeLeaves are the joined node's certificates a CA rotation re-issues: its client certificate,
// its serving ones and its data plane's client certificate (those that load).
func nodeLeaves(id join.Identity, serving *servingCert) map[string]*x509.Certificate {
	out := map[string]*x509.Certificate{}
	for name, path := range map[string]string{"client": id.CertPath(), ingressLeafName: ingressClientFiles(id).CertFile} {
		if data, err := os.ReadFile(path); err == nil {
			if c, err := pki.ParseCertificate(data); err == nil {
				out[name] = c
			}
		}
	}
	if certs := serving.certs.Load(); certs != nil {
		for i, c := range *certs {
			if c.Leaf != nil {
				out[fmt.Sprintf("%s%d", servingLeafPrefix, i)] = c.Leaf
			}
		}
	}
	return out
}

// servingLeafPrefix names the serving pairs among nodeLeaves: they are requested together.
const servingLeafPrefix = "serving-"

func renewsServing(names []string) bool {
	return slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, servingLeafPrefix) })
}

// renewClientCert asks for a new client certificate with the node's current one (selfnodeclient,
// approved automatically) once the current one is due, or at once when force (a CA rotation).
func renewClientCert(ctx context.Context, cfg *Config, id join.Identity, client kubernetes.Interface, now time.Time, force bool) error {
	data, err := os.ReadFile(id.CertPath())
	if err != nil {
		return err
	}
	cert, err := pki.ParseCertificate(data)
	if err != nil {
		return err
	}
	if !force && !join.NeedsRenewal(cert, now) {
		return nil
	}
	certPEM, keyPEM, err := join.RequestCertificate(ctx, client, join.CertificateRequest{
		NodeName: cfg.NodeName, SignerName: certificatesv1.KubeAPIServerClientKubeletSignerName,
		Usages: []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
	})
	if err != nil {
		return err
	}
	if err := pki.WriteFileAtomic(id.KeyPath(), keyPEM, 0o600); err != nil {
		return err
	}
	if err := pki.WriteFileAtomic(id.CertPath(), certPEM, 0o600); err != nil {
		return err
	}
	cfg.Logger.Info("node client certificate renewed", "node", cfg.NodeName, "was valid until", cert.NotAfter)
	return nil
}

// labelJoinedWorkers gives every Node that says it has the worker role (workerRoleLabel, which
// its kubelet may set) the node-role.kubernetes.io/worker label. Only the worker role is taken on
// a node's word: control-plane and etcd nodes label themselves with the admin's credentials. It
// watches only the Nodes with workerRoleLabel; a failed patch is retried at the next resync.
func labelJoinedWorkers(ctx context.Context, client kubernetes.Interface, log *slog.Logger) {
	patch := []byte(`{"metadata":{"labels":{"node-role.kubernetes.io/worker":""}}}`)
	factory := informers.NewSharedInformerFactoryWithOptions(client, 30*time.Second, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.LabelSelector = workerRoleLabel + "=true"
	}))
	label := func(obj any) {
		n, ok := obj.(*corev1.Node)
		if !ok {
			return
		}
		if _, done := n.Labels["node-role.kubernetes.io/worker"]; done {
			return
		}
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if _, err := client.CoreV1().Nodes().Patch(pctx, n.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
			log.Debug("label joined worker", "node", n.Name, "err", err)
			return
		}
		log.Info("labelled joined worker", "node", n.Name)
	}
	if _, err := factory.Core().V1().Nodes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: label, UpdateFunc: func(_, o any) { label(o) },
	}); err != nil {
		log.Error("joined worker labels", "err", err)
		return
	}
	factory.Start(ctx.Done())
	<-ctx.Done()
	factory.Shutdown()
}

// nodeTaints are the taints a node registers with: a node without the worker role keeps ordinary
// pods off (control-plane:NoSchedule; an etcd-only node etcd:NoExecute).
func nodeTaints(roles []Role) []corev1.Taint {
	has := func(r Role) bool {
		for _, x := range roles {
			if x == r {
				return true
			}
		}
		return false
	}
	switch {
	case has(RoleWorker):
		return nil
	case has(RoleControlPlane):
		return []corev1.Taint{{Key: "node-role.kubernetes.io/control-plane", Effect: corev1.TaintEffectNoSchedule}}
	case has(RoleEtcd):
		return []corev1.Taint{{Key: "node-role.kubernetes.io/etcd", Effect: corev1.TaintEffectNoExecute}}
	}
	return nil
}
