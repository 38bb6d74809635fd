package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
	gatewayclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"
	gatewayinformers "sigs.k8s.io/gateway-api/pkg/client/informers/externalversions"

	"github.com/skiff-sh/skiff/internal/controller/ctrlutil"
	"github.com/skiff-sh/skiff/internal/ingress/routes"
)

// TableOptions configure RunTable.
type TableOptions struct {
	Client  kubernetes.Interface
	Gateway gatewayclient.Interface
	// Set hands the Gateway table to the node's composition, which merges it with the Ingress
	// table (routes.Merge) before the data plane serves it.
	Set func(routes.Table) error
	// NodeName is this node's: it serves the Gateways' own addresses Holder elects it for.
	NodeName string
	// Hold, when set, is handed the Gateways' own addresses this node holds before each Set
	// (the node puts them on its interface and drops those it no longer holds).
	Hold   func(context.Context, []netip.Addr) error
	Clock  clock.Clock
	Logger *slog.Logger
	// RetryPeriod is the wait before a table Set refused is handed over again; 5 s when zero.
	RetryPeriod time.Duration
}

// RunTable is the node's side of the Gateway API: it watches the Gateway API objects, Services,
// EndpointSlices, TLS Secrets and Nodes, and after every change decides (Decide, as the
// controller does: both read the same objects, the Gateways' own addresses as the controller
// wrote them), elects the holder of each own address (Holder), hands Hold this node's and Set
// the table (Translate), until ctx ends. Changes that arrive while a table is built fold into
// the next one. It writes nothing to the cluster.
func RunTable(ctx context.Context, o TableOptions) error {
	if o.Client == nil || o.Gateway == nil || o.Set == nil {
		return errors.New("gateway table: Client, Gateway and Set are required")
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.RetryPeriod == 0 {
		o.RetryPeriod = 5 * time.Second
	}
	if err := waitForDefinitions(ctx, o.Gateway.Discovery(), o.Clock, time.Second); err != nil {
		return nil // stopped before the definitions were served
	}
	core := informers.NewSharedInformerFactory(o.Client, 0)
	// Only TLS Secrets: the data plane never holds the cluster's other Secrets.
	tlsOnly := informers.NewSharedInformerFactoryWithOptions(o.Client, 0, informers.WithTweakListOptions(func(lo *metav1.ListOptions) {
		lo.FieldSelector = fields.OneTermEqualSelector("type", string(corev1.SecretTypeTLS)).String()
	}))
	gw := gatewayinformers.NewSharedInformerFactory(o.Gateway, 0)
	v1 := gw.Gateway().V1()
	classes, gateways, httpRoutes, grants := v1.GatewayClasses(), v1.Gateways(), v1.HTTPRoutes(), v1.ReferenceGrants()
	grpcRoutes := v1.GRPCRoutes()
	namespaces, services, endpointSlices := core.Core().V1().Namespaces(), core.Core().V1().Services(), core.Discovery().V1().EndpointSlices()
	nodes := core.Core().V1().Nodes()
	secrets := tlsOnly.Core().V1().Secrets()
	// Shutdown waits for the informers' goroutines.
	defer gw.Shutdown()
	defer tlsOnly.Shutdown()
	defer core.Shutdown()
	dirty, err := ctrlutil.WatchLevel(ctx, []ctrlutil.InformerFactory{core, tlsOnly, gw},
		classes.Informer(), gateways.Informer(), httpRoutes.Informer(), grpcRoutes.Informer(), grants.Informer(),
		namespaces.Informer(), services.Informer(), endpointSlices.Informer(), secrets.Informer(), nodes.Informer())
	if err != nil {
		if ctx.Err() != nil {
			return nil // stopped before the caches synced
		}
		return fmt.Errorf("gateway table: %w", err)
	}
	return ctrlutil.RunLevel(ctx, dirty, o.Clock, o.RetryPeriod, func() error {
		all := labels.Everything()
		s := Snapshot{}
		s.Classes, _ = classes.Lister().List(all)
		s.Gateways, _ = gateways.Lister().List(all)
		s.Routes, _ = httpRoutes.Lister().List(all)
		s.GRPCRoutes, _ = grpcRoutes.Lister().List(all)
		s.Grants, _ = grants.Lister().List(all)
		s.Namespaces, _ = namespaces.Lister().List(all)
		s.Services, _ = services.Lister().List(all)
		s.Secrets, _ = secrets.Lister().List(all)
		s.Nodes, _ = nodes.Lister().List(all)
		s.Pools = FollowedPools(s.Classes)
		eps, _ := endpointSlices.Lister().List(all)
		plan := Decide(s)
		held := HeldAddresses(plan, s.Nodes, o.NodeName)
		var holdErr error
		if o.Hold != nil {
			// The table is set all the same: the other listeners serve, and a listener whose
			// address is missing fails to bind, reported with the rest.
			if err := o.Hold(ctx, held); err != nil {
				holdErr = fmt.Errorf("hold the Gateways' addresses: %w", err)
			}
		}
		t := Translate(TranslateInput{Plan: plan, Routes: s.Routes, GRPCRoutes: s.GRPCRoutes, Grants: s.Grants, Services: s.Services, Slices: eps, Secrets: s.Secrets,
			Holds: func(a string) bool { return slices.Contains(held, netip.MustParseAddr(a)) }})
		if err := o.Set(t); err != nil {
			return errors.Join(holdErr, fmt.Errorf("the data plane refused part of the gateway table: %w", err))
		}
		return holdErr
	}, o.Logger)
}

// HeldAddresses are the Gateways' own addresses (of the plan's programmed listeners) that
// Holder elects node for, sorted.
func HeldAddresses(plan Plan, nodes []*corev1.Node, node string) []netip.Addr {
	var out []netip.Addr
	for _, l := range plan.Listeners {
		a, err := netip.ParseAddr(l.Address)
		if err != nil || slices.Contains(out, a) || Holder(l.Address, nodes) != node {
			continue
		}
		out = append(out, a)
	}
	slices.SortFunc(out, netip.Addr.Compare)
	return out
}
