package cluster

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	gatewayclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"github.com/skiff-sh/skiff/internal/apiserver/inprocess"
	"github.com/skiff-sh/skiff/internal/apiserver/local"
	"github.com/skiff-sh/skiff/internal/controller/manager"
	"github.com/skiff-sh/skiff/internal/leader"
	"github.com/skiff-sh/skiff/internal/pki"
	"github.com/skiff-sh/skiff/internal/scheduler"
	"github.com/skiff-sh/skiff/internal/scheduler/framework"
)

// componentRESTConfig issues (once) a client certificate for a control-plane component and returns
// a client-go configuration that reaches the local API server with it. Components talk to the
// cluster only through this, never through storage.
func componentRESTConfig(cfg *Config, user string, groups []string, now time.Time) (*rest.Config, error) {
	dir := filepath.Join(cfg.DataDir, "pki")
	ca, err := pki.LoadOrCreateCA(dir, "ca", "skiff-ca", now)
	if err != nil {
		return nil, err
	}
	name := filepath.Base(user)
	certPath, keyPath, err := ca.EnsureLeaf(dir, "client-"+sanitize(name), pki.Leaf{CommonName: user, Organization: groups, Client: true}, now)
	if err != nil {
		return nil, fmt.Errorf("certificate for %s: %w", user, err)
	}
	certPEM, err := os.ReadFile(certPath)
	if err != nil {
		return nil, err
	}
	keyPEM, err := os.ReadFile(keyPath)
	if err != nil {
		return nil, err
	}
	holder, err := pki.NewKeyPairHolder([]pki.KeyPairFiles{{CertFile: certPath, KeyFile: keyPath}})
	if err != nil {
		return nil, fmt.Errorf("certificate for %s: %w", user, err)
	}
	roots, err := pki.NewPoolHolder(filepath.Join(dir, "ca.crt"))
	if err != nil {
		return nil, fmt.Errorf("cluster CA for %s: %w", user, err)
	}
	return withRenewedClientCert(preferProtobuf(&rest.Config{
		Host:            cfg.LocalURL(),
		TLSClientConfig: rest.TLSClientConfig{CAData: ca.CertPEM, CertData: certPEM, KeyData: keyPEM},
		// Components share the process with (or sit next to) their API server; a low client-side
		// limit would cap the scheduler at a fraction of what it binds (measured: 129 vs 708 pods/s
		// on 5,000 nodes), so the limit only guards against runaway loops.
		QPS:       5000,
		Burst:     5000,
		UserAgent: name,
	}), holder, roots)
}

// inProcessRESTConfig is restCfg (from componentRESTConfig) carried to api, the API server of this
// process, by a direct call instead of a loopback connection (package inprocess): the same
// identity, the same authorization and admission, without TLS and HTTP/2 on both ends. Used by
// the components that talk only to their own node's API server (the controller manager and the
// scheduler); the kubelet keeps going through the node-local load balancer, which fails over.
func inProcessRESTConfig(restCfg *rest.Config, api http.Handler) (*rest.Config, error) {
	if api == nil {
		return restCfg, nil
	}
	// The identity is the certificate on disk at each request, not the one of restCfg's CertData
	// (as it was at start): a CA rotation re-issues it, and then retires the CA that signed the
	// first one.
	var rt *renewingTransport
	if restCfg.WrapTransport != nil {
		rt, _ = restCfg.WrapTransport(nil).(*renewingTransport)
	}
	if rt == nil {
		return nil, fmt.Errorf("in-process client %s: not a component's configuration (componentRESTConfig)", restCfg.UserAgent)
	}
	tr, err := inprocess.New(api, rt.chain)
	if err != nil {
		return nil, fmt.Errorf("in-process client %s: %w", restCfg.UserAgent, err)
	}
	out := rest.CopyConfig(restCfg)
	// client-go refuses a custom transport beside TLS options; the transport is the identity now.
	out.TLSClientConfig = rest.TLSClientConfig{}
	out.Transport, out.WrapTransport = tr, nil
	return out, nil
}

func sanitize(s string) string {
	out := []rune{}
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-':
			out = append(out, r)
		default:
			out = append(out, '-')
		}
	}
	return string(out)
}

// runControllerManager runs the controller manager until ctx ends, re-entering leader election
// whenever the Lease is lost, as a restarted kube-controller-manager would.
func runControllerManager(ctx context.Context, cfg *Config, metrics *componentMetrics, now time.Time, inProcess *local.Informers, api http.Handler) error {
	networkCfg, err := componentRESTConfig(cfg, "system:kube-controller-manager", nil, now)
	if err != nil {
		return err
	}
	restCfg, err := inProcessRESTConfig(networkCfg, api)
	if err != nil {
		return err
	}
	// Every client below writes only while this instance's lead is confirmed (fenced).
	fence := fenced(restCfg)
	// The cluster CA signs approved CertificateSigningRequests, as kube-controller-manager's
	// --cluster-signing-cert-file and --cluster-signing-key-file point at the cluster CA in kubeadm.
	signingCA, err := pki.LoadOrCreateCA(filepath.Join(cfg.DataDir, "pki"), "ca", "skiff-ca", now)
	if err != nil {
		return fmt.Errorf("cluster signing CA: %w", err)
	}
	client, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(restCfg)
	if err != nil {
		return err
	}
	// Custom resources have no protobuf form: the components' configuration asks for protobuf.
	gatewayCfg := rest.CopyConfig(restCfg)
	gatewayCfg.ContentType, gatewayCfg.AcceptContentTypes = "application/json", "application/json"
	gatewayAPI, err := gatewayclient.NewForConfig(gatewayCfg)
	if err != nil {
		return fmt.Errorf("gateway api client: %w", err)
	}
	for {
		err := manager.Run(ctx, manager.Config{
			Client: client, Dynamic: dyn, GatewayAPI: gatewayAPI, RootCA: networkCfg.TLSClientConfig.CAData,
			RootCAFile: filepath.Join(cfg.DataDir, "pki", "ca.crt"), Registerer: metrics.fresh("controller-manager"),
			ClusterSigningCA: signingCA, ClusterSigningDuration: cfg.ClusterSigningDuration,
			LeaderElection:         manager.LeaderElection{LeaseDuration: cfg.LeaseDuration, RenewDeadline: cfg.RenewDeadline, RetryPeriod: cfg.RetryPeriod, Fence: fence},
			Identity:               cfg.NodeName + "_" + fmt.Sprint(os.Getpid()),
			Controllers:            cfg.Controllers,
			ClusterCIDR:            cfg.ClusterCIDR,
			NodeMonitorGracePeriod: cfg.NodeMonitorGracePeriod,
			Logger:                 cfg.Logger.With("component", "controller-manager"),
			LocalPathDir:           cfg.LocalPathDir,
			LocalPathHelperImage:   cfg.LocalPathHelperImage,
			PrepareInformers:       inProcess.Register,
			HPA: manager.HPAConfig{RESTConfig: restCfg, SyncPeriod: cfg.HPASyncPeriod, Tolerance: cfg.HPATolerance,
				DownscaleStabilization: cfg.HPADownscaleStabilization},
		})
		if ctx.Err() != nil {
			return nil
		}
		if err != nil && !errors.Is(err, manager.ErrLeaderElectionLost) {
			return fmt.Errorf("controller manager: %w", err)
		}
		cfg.Logger.Warn("controller manager lost its lease; campaigning again")
	}
}

// runScheduler runs the scheduler under leader election until ctx ends, campaigning again whenever
// the Lease is lost.
func runScheduler(ctx context.Context, cfg *Config, metrics *componentMetrics, now time.Time, inProcess *local.Informers, api http.Handler) error {
	networkCfg, err := componentRESTConfig(cfg, "system:kube-scheduler", nil, now)
	if err != nil {
		return err
	}
	restCfg, err := inProcessRESTConfig(networkCfg, api)
	if err != nil {
		return err
	}
	// Bindings and events go out only while this instance's lead is confirmed (fenced), as the
	// controller manager's writes do.
	fence := fenced(restCfg)
	var conf *framework.Configuration
	if cfg.SchedulerConfig != "" {
		if conf, err = framework.LoadConfig(cfg.SchedulerConfig); err != nil {
			return fmt.Errorf("scheduler config: %w", err)
		}
	}
	client, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return err
	}
	// Events go through a client of their own, so that they never take the rate limiter's tokens
	// from bindings.
	events, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return err
	}
	for {
		err := scheduler.Run(ctx, scheduler.Config{
			Client: client, EventClient: events, Configuration: conf, LeaderElect: true, Registerer: metrics.fresh("scheduler"),
			LeaseDuration: cfg.LeaseDuration, RenewDeadline: cfg.RenewDeadline, RetryPeriod: cfg.RetryPeriod,
			Identity: cfg.NodeName + "_" + fmt.Sprint(os.Getpid()), Logger: cfg.Logger,
			PrepareInformers: inProcess.Register, Fence: fence,
		})
		if ctx.Err() != nil {
			return nil
		}
		if err != nil && !errors.Is(err, scheduler.ErrLeadershipLost) {
			return fmt.Errorf("scheduler: %w", err)
		}
		cfg.Logger.Warn("scheduler lost its lease; campaigning again")
	}
}

// fenced wraps restCfg's transport in a new leader.Fence and returns it, for a leader-elected
// component to give its Campaign: every client made from restCfg then writes only while this
// instance's lead is confirmed. A control plane that resumes after a pause longer than the Lease
// must not act on its stale caches before it learns another instance leads (the robustness
// suite's ha-pause and workers-pause scenarios).
func fenced(restCfg *rest.Config) *leader.Fence {
	fence := leader.NewFence()
	restCfg.Wrap(fence.Wrap)
	return fence
}
