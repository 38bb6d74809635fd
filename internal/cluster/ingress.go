package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	gatewayclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"github.com/skiff-sh/skiff/internal/authz/bootstrappolicy"
	"github.com/skiff-sh/skiff/internal/controller/gateway"
	"github.com/skiff-sh/skiff/internal/ingress"
	"github.com/skiff-sh/skiff/internal/ingress/addresses"
	"github.com/skiff-sh/skiff/internal/ingress/dataplane"
)

// ingressRoles are a worker's Ingress roles: the node label that tells the status controller
// this node serves Ingresses (removed when both ports are off), and, unless they are, the
// built-in HTTP data plane with the controller that feeds it the Ingresses' routes, as
// system:skiff:ingress, on the node's bind address. The data plane reaches pods by their IPs,
// which a worker routes (internal/podnet).
func (n *Node) ingressRoles() []role {
	cfg := &n.cfg
	label := ingressLabelRole(cfg, n.authz.client)
	if !cfg.runsIngress() {
		return []role{label}
	}
	return []role{label, {name: "ingress", run: func(ctx context.Context) error {
		restCfg, err := componentRESTConfig(cfg, bootstrappolicy.SkiffIngress, nil, clock.RealClock{}.Now())
		if err != nil {
			return err
		}
		return runIngressDataPlane(ctx, cfg, restCfg, n.metrics.fresh("ingress"))
	}}}
}

// runsIngress reports whether the node serves the HTTP data plane: a port of it is on.
func (c *Config) runsIngress() bool { return c.IngressHTTPPort != 0 || c.IngressHTTPSPort != 0 }

// ingressLabelRole sets the node's ingress label, or removes it when the data plane is off, as
// client (the node's own on a joined worker: the label is outside the prefixes node
// restriction guards).
func ingressLabelRole(cfg *Config, client kubernetes.Interface) role {
	return role{name: "ingress node label", run: func(ctx context.Context) error {
		var v any // nil removes it
		if cfg.runsIngress() {
			v = "true"
		}
		patchNodeLabels(ctx, client, cfg.NodeName, map[string]any{ingress.NodeLabel: v}, cfg.Logger)
		return nil
	}}
}

// runIngressDataPlane serves the HTTP data plane on the node's bind address with the routes of
// the Ingresses and the Gateway API, read with restCfg (an identity bound to the
// system:skiff:ingress ClusterRole), until ctx ends.
func runIngressDataPlane(ctx context.Context, cfg *Config, restCfg *rest.Config, reg prometheus.Registerer) error {
	client, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return fmt.Errorf("ingress client: %w", err)
	}
	// Custom resources have no protobuf form: the Gateway API client speaks JSON.
	gatewayCfg := rest.CopyConfig(restCfg)
	gatewayCfg.ContentType, gatewayCfg.AcceptContentTypes = "application/json", "application/json"
	gatewayAPI, err := gatewayclient.NewForConfig(gatewayCfg)
	if err != nil {
		return fmt.Errorf("gateway api client: %w", err)
	}
	log := cfg.Logger.With("component", "ingress")
	srv := dataplane.New(dataplane.Options{
		Address: cfg.BindAddress,
		Logger:  log,
		Metrics: dataplane.NewMetrics(reg),
	})
	// The Ingress controller's table is one source, the Gateway API's (the same Decide as the
	// control plane's gateway controller, then Translate) the other; Sources merges them.
	sources := dataplane.NewSources(srv)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return srv.Run(gctx) })
	g.Go(func() error {
		return ingress.RunNode(gctx, ingress.NodeOptions{
			Client: client, HTTPPort: int32(cfg.IngressHTTPPort), HTTPSPort: int32(cfg.IngressHTTPSPort),
			Set: sources.Setter("ingress"), Logger: log,
		})
	})
	hold, release := gatewayAddressHolder(cfg, log)
	g.Go(func() error {
		defer release()
		return gateway.RunTable(gctx, gateway.TableOptions{
			Client: client, Gateway: gatewayAPI, Set: sources.Setter("gateway"), NodeName: cfg.NodeName, Hold: hold,
			Logger: cfg.Logger.With("component", "gateway-table"),
		})
	})
	return g.Wait()
}

// gatewayAddressHolder puts the Gateways' own addresses this node holds on the interface of its
// advertise address, and releases them when the data plane stops, so another node takes them
// over at once rather than after this one is found gone. Without a usable advertise address the
// node holds none (Hold reports why at each try).
func gatewayAddressHolder(cfg *Config, log *slog.Logger) (hold func(context.Context, []netip.Addr) error, release func()) {
	ip, err := netip.ParseAddr(cfg.AdvertiseAddress)
	if err != nil {
		msg := fmt.Errorf("the advertise address %q is not an IP: this node holds no Gateway address", cfg.AdvertiseAddress)
		return func(_ context.Context, want []netip.Addr) error {
			if len(want) > 0 {
				return msg
			}
			return nil
		}, func() {}
	}
	h := addresses.New(ip, filepath.Join(cfg.DataDir, "ingress", "held-addresses"), log)
	return h.Hold, func() {
		// The table's context has ended: a short one of its own for the netlink calls.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := h.Release(ctx); err != nil {
			log.Warn("gateway addresses not released", "err", err)
		}
	}
}

// ingressStatusRole runs the Ingress status controller on a control-plane node, leader-elected
// among them: it creates the IngressClass skiff and writes the served Ingresses' status.
func (n *Node) ingressStatusRole() role {
	return role{name: "ingress status", run: func(ctx context.Context) error {
		restCfg, err := n.inProcessConfig(bootstrappolicy.SkiffIngressStatus, nil)
		if err != nil {
			return err
		}
		fence := fenced(restCfg)
		client, err := kubernetes.NewForConfig(restCfg)
		if err != nil {
			return fmt.Errorf("ingress status client: %w", err)
		}
		return ingress.RunStatus(ctx, ingress.StatusOptions{
			Client: client, Identity: n.cfg.NodeName + "_" + fmt.Sprint(os.Getpid()), Fence: fence,
			LeaseDuration: n.cfg.LeaseDuration, RenewDeadline: n.cfg.RenewDeadline, RetryPeriod: n.cfg.RetryPeriod,
			Logger: n.cfg.Logger.With("component", "ingress-status"),
		})
	}}
}
