package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/client-go/rest"

	"github.com/skiff-sh/skiff/internal/etcd"
	"github.com/skiff-sh/skiff/internal/etcdapi"
	"github.com/skiff-sh/skiff/internal/nodelock"
	"github.com/skiff-sh/skiff/internal/pki"
)

// Etcd-only nodes, and control-plane nodes on the cluster's own etcd.
//
// `skiff server --roles etcd --server URL --token T` (a --control-plane token: the node needs the
// etcd CA) checks the CA pin, fetches the cluster's keys, mints its etcd peer and server
// certificates from the etcd CA, is added as a learner through the membership API and promoted,
// and then runs its member, its node-local balancer and an admin kubeconfig through it; no API
// server. A restart finds its keys and its member's data and needs no token.
//
// `skiff server --roles controlplane --server URL --token T` without --etcd-servers joins the
// cluster's etcd as a client: its endpoints are the voting members' client URLs from the
// membership API, and the client re-reads the member list every etcdEndpointSyncInterval, so the
// API server learns members (etcd-only ones included) added later and forgets removed ones.

// etcdEndpointSyncInterval is how often an API server on the cluster's etcd re-reads the members.
const etcdEndpointSyncInterval = 30 * time.Second

// validateEtcdOnly checks the roles that need a running cluster: an etcd-only node, and a
// control-plane node without etcd and without --etcd-servers, both join with --server.
func (c *Config) validateEtcdOnly() []error {
	var errs []error
	etcdOnly := c.HasRole(RoleEtcd) && !c.HasRole(RoleControlPlane)
	if etcdOnly && c.HasRole(RoleWorker) {
		errs = append(errs, errors.New("--roles etcd,worker is not supported: run etcd alone, or with controlplane"))
	}
	if etcdOnly && c.Server == "" {
		errs = append(errs, errors.New("an etcd-only node joins a cluster: --server https://HOST:PORT and --token (skiff token create --control-plane)"))
	}
	if c.HasRole(RoleControlPlane) && !c.HasRole(RoleEtcd) && len(c.EtcdServers) == 0 && c.Server == "" {
		errs = append(errs, errors.New("a controlplane node without the etcd role needs --etcd-servers, or --server and --token to use the cluster's etcd"))
	}
	return errs
}

// onClusterEtcd: a control-plane node without a member of its own and without --etcd-servers uses
// the cluster's embedded etcd members.
func (c *Config) onClusterEtcd() bool {
	return c.HasRole(RoleControlPlane) && !c.HasRole(RoleEtcd) && len(c.EtcdServers) == 0 && c.Server != ""
}

// votingClientURLs are the client URLs of the voting members, sorted (learners serve no clients).
func votingClientURLs(members []etcdapi.Member) []string {
	var urls []string
	for _, m := range members {
		if m.IsLearner {
			continue
		}
		for _, u := range m.ClientURLs {
			if !slices.Contains(urls, u) {
				urls = append(urls, u)
			}
		}
	}
	slices.Sort(urls)
	return urls
}

// startClusterEtcdClient connects a control-plane node to the cluster's embedded etcd members
// with a client certificate from the etcd CA (fetched with the cluster's keys).
func (n *Node) startClusterEtcdClient(ctx context.Context) error {
	cfg := &n.cfg
	pkiDir := filepath.Join(cfg.DataDir, "pki")
	dir := filepath.Join(pkiDir, etcdPKIDir)
	if _, err := os.Stat(filepath.Join(dir, "ca.key")); err != nil {
		return fmt.Errorf("the cluster's keys have no etcd CA (%w): its etcd is external, so give --etcd-servers", err)
	}
	ca, err := pki.LoadOrCreateCA(dir, "ca", "etcd-ca", time.Now())
	if err != nil {
		return fmt.Errorf("etcd CA: %w", err)
	}
	cert, key, err := ca.EnsureLeaf(pkiDir, etcdClientCertName, pki.Leaf{CommonName: "kube-apiserver-etcd-client", Client: true}, time.Now())
	if err != nil {
		return fmt.Errorf("API server etcd client certificate: %w", err)
	}
	files := etcdClientFiles{CAFile: filepath.Join(dir, "ca.crt"), CertFile: cert, KeyFile: key}
	endpoints, err := n.clusterEtcdEndpoints(ctx)
	if err != nil {
		return err
	}
	client, err := etcd.NewClientWithFiles(endpoints, etcd.ClientFiles(files), cfg.Logger)
	if err != nil {
		return fmt.Errorf("connect to the cluster's etcd %v: %w", endpoints, err)
	}
	go syncEtcdEndpoints(client, cfg)
	n.etcdClient = etcd.BoundKV(client, etcd.DefaultRequestTimeout)
	n.etcdStorage = n.etcdClient
	if err := recordEtcdClientTLS(cfg.DataDir, files); err != nil {
		return err
	}
	cfg.Logger.Info("API server uses the cluster's etcd members", "endpoints", endpoints)
	return recordEtcdEndpoints(cfg.DataDir, endpoints)
}

// clusterEtcdEndpoints are the members a joining control plane starts from: those it recorded
// before (a restart needs no token), else the voting members the membership API lists.
func (n *Node) clusterEtcdEndpoints(ctx context.Context) ([]string, error) {
	data, err := os.ReadFile(filepath.Join(n.cfg.DataDir, etcdEndpointsFile))
	if err == nil && len(strings.Fields(string(data))) > 0 {
		return strings.Fields(string(data)), nil
	}
	restCfg, err := n.etcdJoinCredentials()
	if err != nil {
		return nil, err
	}
	api, err := etcdapi.NewClient(restCfg)
	if err != nil {
		return nil, err
	}
	lctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	list, err := api.List(lctx)
	if err != nil {
		return nil, fmt.Errorf("list the cluster's etcd members through %s: %w", restCfg.Host, err)
	}
	urls := votingClientURLs(list.Members)
	if len(urls) == 0 {
		return nil, errors.New("the cluster's etcd has no voting member with a client URL: its etcd is external, so give --etcd-servers")
	}
	return urls, nil
}

// syncEtcdEndpoints re-reads the member list (the client's Sync keeps the voting members' client
// URLs) until the client closes, and records the endpoints for a restart.
func syncEtcdEndpoints(client *clientv3.Client, cfg *Config) {
	ticker := time.NewTicker(etcdEndpointSyncInterval)
	defer ticker.Stop()
	last := slices.Clone(client.Endpoints())
	for {
		select {
		case <-client.Ctx().Done():
			return
		case <-ticker.C:
		}
		ctx, cancel := context.WithTimeout(client.Ctx(), 10*time.Second)
		err := client.Sync(ctx)
		cancel()
		if err != nil {
			cfg.Logger.Debug("etcd endpoint sync", "err", err)
			continue
		}
		now := slices.Sorted(slices.Values(client.Endpoints()))
		if slices.Equal(now, last) {
			continue
		}
		last = now
		cfg.Logger.Info("etcd members changed; API server endpoints updated", "endpoints", now)
		if err := recordEtcdEndpoints(cfg.DataDir, now); err != nil {
			cfg.Logger.Warn("record etcd endpoints", "err", err)
		}
	}
}

// runEtcdNode runs an etcd-only node: the member (joined with the token the first time), the
// node-local balancer and an admin kubeconfig through it.
func runEtcdNode(ctx context.Context, cfg Config) error {
	cfg.Default()
	if err := cfg.Validate(); err != nil {
		return err
	}
	_, statErr := os.Stat(cfg.DataDir)
	freshDir := errors.Is(statErr, os.ErrNotExist)
	if err := joinControlPlane(ctx, &cfg); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(cfg.DataDir, "pki", etcdPKIDir, "ca.key")); err != nil {
		if freshDir {
			os.RemoveAll(cfg.DataDir)
		}
		return errors.New("the cluster has no etcd CA (its etcd is external): an etcd-only node cannot join it")
	}
	lock, err := nodelock.Acquire(cfg.DataDir)
	if err != nil {
		return err
	}
	n := &Node{cfg: cfg, lock: lock}
	defer n.Stop()
	began := time.Now()
	// The member lives until Stop, like a control-plane node's.
	if err := n.startStorage(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	cfg.Logger.Info("etcd-only node's member serving", "node", cfg.NodeName, "took", time.Since(began).Round(time.Millisecond))
	// The balancer (seeded with --server and what it learned) and an admin kubeconfig through it,
	// as on every node; its identity is minted from the cluster CA the keys brought.
	rc, err := componentRESTConfig(&n.cfg, "system:kube-proxy", nil, time.Now())
	if err != nil {
		return err
	}
	if n.lb, err = startEtcdNodeLB(ctx, &n.cfg, rc); err != nil {
		return fmt.Errorf("start load balancer: %w", err)
	}
	defer n.stopLB()
	if err := writeAdminKubeconfig(&n.cfg, time.Now()); err != nil {
		return err
	}
	cfg.Logger.Info("skiff etcd node ready", "node", cfg.NodeName, "api", cfg.LBURL(), "kubeconfig", cfg.AdminKubeconfigPath())
	failed := n.etcdMember.Failed()
	roles := []role{{name: "etcd", run: func(ctx context.Context) error {
		select {
		case <-ctx.Done():
			return nil
		case <-failed:
			return fmt.Errorf("embedded etcd failed: %w", n.etcdMember.Err())
		}
	}}, etcdCASyncRole(&n.cfg)}
	if cfg.runsKubelet() {
		extra, err := etcdNodeKubeletRoles(&n.cfg, time.Now()) // etcdonly_kubelet.go
		if err != nil {
			return err
		}
		roles = append(roles, extra...)
	}
	return runRoles(ctx, roles, roleStopGrace, cfg.Logger)
}

// startEtcdNodeLB starts an etcd-only node's balancer with the identity rc carries.
func startEtcdNodeLB(ctx context.Context, cfg *Config, rc *rest.Config) (*nodeLB, error) {
	seeds, err := joinedLBSeeds(cfg)
	if err != nil {
		return nil, err
	}
	rc = throughLB(cfg, rc)
	probeTLS, err := probeTLSConfig(rc)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(cfg.DataDir, learnedBackendsFile)
	return launchLB(ctx, cfg, seeds, probeTLS, rc, nil, func(addrs []string) {
		if err := pki.WriteFileAtomic(path, []byte(strings.Join(addrs, "\n")+"\n"), 0o600); err != nil {
			cfg.Logger.Warn("load balancer: record learned API servers", "path", path, "err", err)
		}
	})
}

// writeAdminKubeconfig writes the admin kubeconfig (through the balancer) from the cluster CA.
func writeAdminKubeconfig(cfg *Config, now time.Time) error {
	dir := filepath.Join(cfg.DataDir, "pki")
	ca, err := pki.LoadOrCreateCA(dir, "ca", "skiff-ca", now)
	if err != nil {
		return err
	}
	certPath, keyPath, err := ca.EnsureLeaf(dir, "admin", pki.Leaf{CommonName: "kubernetes-admin", Organization: []string{"system:masters"}, Client: true}, now)
	if err != nil {
		return fmt.Errorf("admin certificate: %w", err)
	}
	certPEM, err := os.ReadFile(certPath)
	if err != nil {
		return err
	}
	keyPEM, err := os.ReadFile(keyPath)
	if err != nil {
		return err
	}
	kubeconfig, err := localKubeconfig(cfg, ca.CertPEM, certPEM, keyPEM)
	if err != nil {
		return err
	}
	if err := pki.WriteFileAtomic(cfg.AdminKubeconfigPath(), kubeconfig, 0o600); err != nil {
		return fmt.Errorf("write admin kubeconfig: %w", err)
	}
	return nil
}
