package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/clock"

	"github.com/skiff-sh/skiff/internal/apiserver"
	"github.com/skiff-sh/skiff/internal/etcd"
	"github.com/skiff-sh/skiff/internal/etcd/membershipapi"
	"github.com/skiff-sh/skiff/internal/etcdapi"
	"github.com/skiff-sh/skiff/internal/join"
)

// startStorage connects the node to etcd: an external cluster (--etcd-servers, with TLS when
// --etcd-cafile/--etcd-certfile/--etcd-keyfile are given), or an embedded member whose peer and
// client listeners are TLS only, bound to --bind-address, with client certificates required.
func (n *Node) startStorage(ctx context.Context) error {
	if len(n.cfg.EtcdServers) > 0 {
		files := etcdClientFiles{CAFile: n.cfg.EtcdCAFile, CertFile: n.cfg.EtcdCertFile, KeyFile: n.cfg.EtcdKeyFile}
		client, err := etcd.NewClientWithFiles(n.cfg.EtcdServers, etcd.ClientFiles(files), n.cfg.Logger)
		if err != nil {
			return fmt.Errorf("connect to external etcd %v: %w", n.cfg.EtcdServers, err)
		}
		n.etcdClient = etcd.BoundKV(client, etcd.DefaultRequestTimeout)
		n.etcdStorage = n.etcdClient
		if err := recordEtcdClientTLS(n.cfg.DataDir, files); err != nil {
			return err
		}
		return recordEtcdEndpoints(n.cfg.DataDir, n.cfg.EtcdServers)
	}
	if n.cfg.onClusterEtcd() {
		return n.startClusterEtcdClient(ctx) // etcdonly.go
	}
	if n.cfg.Snapshots.ClusterReset {
		if err := resetEtcdCluster(n.cfg, time.Now()); err != nil {
			return err
		}
	}
	certs, err := ensureEtcdCertificates(&n.cfg, time.Now())
	if err != nil {
		return err
	}
	ecfg := etcd.Config{
		Name:                 etcdMemberName(n.cfg),
		DataDir:              filepath.Join(n.cfg.DataDir, "etcd"),
		ListenClientURLs:     []string{etcdURL(etcdListenHost(n.cfg), n.cfg.EtcdClientPort)},
		ListenClientHTTPURLs: etcdHTTPURLs(n.cfg),
		AdvertiseClientURLs:  []string{etcdURL(n.cfg.AdvertiseAddress, n.cfg.EtcdClientPort)},
		ListenPeerURLs:       []string{etcdURL(etcdListenHost(n.cfg), n.cfg.EtcdPeerPort)},
		AdvertisePeerURLs:    []string{etcdPeerURL(n.cfg)},
		ClientTLS:            certs.server,
		PeerTLS:              certs.peer,
		QuotaBackendBytes:    n.cfg.EtcdQuotaBackendBytes,
		Logger:               n.cfg.Logger,
	}
	join, err := n.joinEtcd(ctx, &ecfg)
	if err != nil {
		return err
	}
	member, err := etcd.Start(ctx, ecfg)
	if err != nil {
		return fmt.Errorf("start embedded etcd: %w", err)
	}
	n.etcdMember = member
	local := []string{etcdURL(etcdLocalHost(n.cfg), n.cfg.EtcdClientPort)}
	client, err := etcd.NewClientWithFiles(local, etcd.ClientFiles(certs.client), n.cfg.Logger)
	if err != nil {
		return fmt.Errorf("etcd client: %w", err)
	}
	if join != nil {
		if err := join.promote(ctx, member, client, local[0]); err != nil {
			client.Close()
			return err
		}
	}
	// The disk under the member is watched: writes are refused before it is full (etcd exits when
	// a WAL write or a commit fails), a reserve in the data dir is released for etcd's own
	// commits when someone else takes the space, and etcd's own NOSPACE alarm is cleared once the
	// data fits again.
	guard := &etcd.SpaceGuard{
		Dir: ecfg.DataDir, Client: client, Endpoint: local[0], Quota: member.QuotaBackendBytes(),
		Threshold: uint64(n.cfg.EtcdDiskReserveBytes), Clock: clock.RealClock{}, Log: n.cfg.Logger.With("component", "etcd-space"),
	}
	guardCtx, stopGuard := context.WithCancel(context.WithoutCancel(ctx))
	n.stopSpaceGuard, n.spaceCheck = stopGuard, guard.Check
	n.goBackground(func() { guard.Run(guardCtx, spaceGuardInterval) })
	trust, err := newEtcdTrustFollower(member, client, n.cfg.DataDir, n.cfg.Logger.With("component", "etcd-trust"))
	if err != nil {
		return fmt.Errorf("etcd CA bundle: %w", err)
	}
	n.goBackground(func() { trust.run(guardCtx, clock.RealClock{}) })
	n.etcdClient = etcd.FenceWrites(etcd.BoundKV(client, etcd.DefaultRequestTimeout), guard.FenceError)
	// The stores talk to the member in process: etcd's own gRPC server and interceptors without
	// TLS and TCP between them (etcd/inprocess.go; about 4 % less server CPU per create measured,
	// docs/bench/apiserver.md).
	inProcess, err := member.InProcessClient(n.cfg.Logger)
	if err != nil {
		return fmt.Errorf("etcd in-process client: %w", err)
	}
	n.etcdStorage = etcd.FenceWrites(etcd.BoundKV(inProcess, etcd.DefaultRequestTimeout), guard.FenceError)
	if err := recordEtcdClientTLS(n.cfg.DataDir, certs.client); err != nil {
		return err
	}
	return recordEtcdEndpoints(n.cfg.DataDir, local)
}

// etcdMembershipHandlers serve etcd membership through the API server (/skiff/v1/etcd/members),
// for cluster admins (RBAC non-resource URLs; cluster-admin and system:masters have them).
func etcdMembershipHandlers(client *clientv3.Client, localAlarm func() error, log *slog.Logger) []apiserver.NonResourceHandler {
	return []apiserver.NonResourceHandler{{
		Prefix:  etcdapi.MembersPath,
		Handler: &membershipapi.Handler{Client: client, Clock: clock.RealClock{}, Log: log.With("component", "etcd-membership"), LocalAlarm: localAlarm},
	}}
}

// etcdJoin is a learner this node added to a running cluster, to promote once it started.
type etcdJoin struct {
	api *etcdapi.Client
	id  string
	log *slog.Logger
}

// joinEtcdTimeout bounds the add and the promotion of a joining member.
const joinEtcdTimeout = 3 * time.Minute

// joinEtcd adds this node's member as a learner to the cluster behind --etcd-join-kubeconfig when
// the member has no data yet (a restarted member rejoins from its own data), and points ecfg at
// that cluster. It answers nil when there is nothing to join.
func (n *Node) joinEtcd(ctx context.Context, ecfg *etcd.Config) (*etcdJoin, error) {
	if n.cfg.EtcdJoinKubeconfig == "" && n.cfg.Server == "" {
		return nil, nil
	}
	if _, err := os.Stat(filepath.Join(ecfg.DataDir, "member")); err == nil && !n.rejoinIfRemoved(ctx, ecfg, n.cfg.Logger.With("component", "etcd-join")) {
		return nil, nil
	}
	restCfg, err := n.etcdJoinCredentials()
	if err != nil {
		return nil, err
	}
	api, err := etcdapi.NewClient(restCfg)
	if err != nil {
		return nil, fmt.Errorf("etcd join: %w", err)
	}
	actx, cancel := context.WithTimeout(ctx, joinEtcdTimeout)
	defer cancel()
	log := n.cfg.Logger.With("component", "etcd-join")
	req := etcdapi.AddMemberRequest{Name: ecfg.Name, PeerURLs: ecfg.AdvertisePeerURLs}
	added, err := addLearnerRetrying(actx, api.AddLearner, req, clock.RealClock{}, joinRetryPause, log)
	if err != nil {
		return nil, fmt.Errorf("etcd join through %s: %w", restCfg.Host, err)
	}
	ecfg.InitialCluster, ecfg.ClusterState = added.InitialCluster, etcd.ClusterStateExisting
	log.Info("etcd member added as a learner", "member", ecfg.Name, "id", added.Member.ID, "initialCluster", added.InitialCluster)
	return &etcdJoin{api: api, id: added.Member.ID, log: log}, nil
}

// joinRetryPause is the pause between two requests to add this node's learner.
const joinRetryPause = 2 * time.Second

// addLearnerRetrying asks for this node's learner until an answer is final or ctx ends. The API
// server retries a busy etcd itself within its request timeout; a 504 when that runs out (seen
// with three control planes rejoining a reset cluster on a loaded machine: one exited on it), a
// 5xx or no answer at all is worth sending again. Sending it again is safe: a learner added but
// never started is answered again rather than added twice.
func addLearnerRetrying(ctx context.Context, add func(context.Context, etcdapi.AddMemberRequest) (*etcdapi.AddMemberResponse, error),
	req etcdapi.AddMemberRequest, clk clock.Clock, pause time.Duration, log *slog.Logger) (*etcdapi.AddMemberResponse, error) {
	for {
		added, err := add(ctx, req)
		if err == nil || !retryableJoinError(err) || ctx.Err() != nil {
			return added, err
		}
		log.Warn("adding this node's etcd learner failed; asking again", "member", req.Name, "pause", pause, "err", err)
		select {
		case <-ctx.Done():
			return nil, err
		case <-clk.After(pause):
		}
	}
}

// retryableJoinError says whether a join request may succeed when sent again: the API server
// answered with a 5xx, or nobody answered; a 4xx is final.
func retryableJoinError(err error) bool {
	var se *etcdapi.StatusError
	if errors.As(err, &se) {
		return se.Code >= 500
	}
	return !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

// promote waits for the new member to serve, has it promoted (the API server retries while the
// learner catches up with the leader), and waits until the member itself sees the promotion.
func (j *etcdJoin) promote(ctx context.Context, member *etcd.Member, local *clientv3.Client, localURL string) error {
	ctx, cancel := context.WithTimeout(ctx, joinEtcdTimeout)
	defer cancel()
	select {
	case <-member.Ready():
	case <-member.Failed():
		return fmt.Errorf("etcd join: learner %s failed: %w", j.id, member.Err())
	case <-ctx.Done():
		return fmt.Errorf("etcd join: learner %s not ready: %w", j.id, ctx.Err())
	}
	if _, err := j.api.Promote(ctx, j.id); err != nil {
		return fmt.Errorf("etcd join: %w", err)
	}
	// The API server about to start here reads through this member: wait until it applied its
	// own promotion.
	if err := etcd.WaitVoter(ctx, local, localURL, clock.RealClock{}, 0); err != nil {
		return fmt.Errorf("etcd join: %w", err)
	}
	j.log.Info("etcd learner promoted to a voting member", "id", j.id)
	return nil
}

// validateEtcdTLS checks the external etcd's client TLS flags.
func (c *Config) validateEtcdTLS() []error {
	var errs []error
	if c.EtcdJoinKubeconfig != "" && !c.HasRole(RoleEtcd) {
		errs = append(errs, errors.New("--etcd-join-kubeconfig joins this node's etcd member: it needs the etcd role"))
	}
	anyTLS := c.EtcdCAFile != "" || c.EtcdCertFile != "" || c.EtcdKeyFile != ""
	if anyTLS && len(c.EtcdServers) == 0 {
		errs = append(errs, errors.New("--etcd-cafile, --etcd-certfile and --etcd-keyfile go with --etcd-servers"))
	}
	if (c.EtcdCertFile == "") != (c.EtcdKeyFile == "") {
		errs = append(errs, errors.New("--etcd-certfile and --etcd-keyfile go together"))
	}
	for flag, f := range map[string]string{"--etcd-cafile": c.EtcdCAFile, "--etcd-certfile": c.EtcdCertFile, "--etcd-keyfile": c.EtcdKeyFile} {
		if f == "" {
			continue
		}
		if _, err := os.Stat(f); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", flag, err))
		}
	}
	return errs
}

// etcdJoinCredentials are how a joining member reaches the membership API: --etcd-join-kubeconfig,
// or the control-plane join token (its group is bound to skiff:etcd-join) against --server,
// trusting the cluster CA the join stored after checking the token's pin.
func (n *Node) etcdJoinCredentials() (*rest.Config, error) {
	if n.cfg.EtcdJoinKubeconfig != "" {
		restCfg, err := clientcmd.BuildConfigFromFlags("", n.cfg.EtcdJoinKubeconfig)
		if err != nil {
			return nil, fmt.Errorf("etcd join: kubeconfig %s: %w", n.cfg.EtcdJoinKubeconfig, err)
		}
		return restCfg, nil
	}
	if n.cfg.Token == "" {
		// A control plane that was a member before (its data moved aside, or lost) has the
		// cluster's CA and its admin credentials.
		if restCfg, err := adminAt(&n.cfg); err == nil {
			return restCfg, nil
		}
		return nil, fmt.Errorf("etcd join: this node's etcd member has no data in %s and was never added: --token is needed to add it", filepath.Join(n.cfg.DataDir, "etcd"))
	}
	return tokenRESTConfig(&n.cfg, "skiff-etcd-join")
}

// tokenRESTConfig is a client of --server as the control-plane join token, trusting the cluster
// CA the join stored after checking the token's pin.
func tokenRESTConfig(cfg *Config, userAgent string) (*rest.Config, error) {
	token, err := join.ParseJoinToken(cfg.Token)
	if err != nil {
		return nil, fmt.Errorf("--token: %w", err)
	}
	return &rest.Config{
		Host:            cfg.Server,
		TLSClientConfig: rest.TLSClientConfig{CAFile: filepath.Join(cfg.DataDir, "pki", "ca.crt")},
		BearerToken:     token.Token.String(),
		UserAgent:       userAgent,
	}, nil
}

// spaceGuardInterval is how often the embedded member's free disk space is looked at (a statfs,
// a few microseconds): another process can fill hundreds of MiB in well under a second, and
// until the guard looks, API writes still reach etcd and its disk reserve is not yet released.
const spaceGuardInterval = 200 * time.Millisecond
