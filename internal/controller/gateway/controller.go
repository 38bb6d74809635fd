package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	gatewayclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"
	gatewayinformers "sigs.k8s.io/gateway-api/pkg/client/informers/externalversions"
	gatewaylisters "sigs.k8s.io/gateway-api/pkg/client/listers/apis/v1"

	"github.com/skiff-sh/skiff/internal/controller/ctrlutil"
)

// Name is the controller's name in --controllers and in metrics.
const Name = "gateway"

// key is the one work-queue key: a decision reads every object (a Secret, a Namespace's labels
// or a Service can change any Gateway's or route's status), so every event asks for one whole
// reconcile and the queue folds a burst of events into one.
const key = "gateway-api"

// Controller writes the status of skiff's GatewayClasses, their Gateways and the HTTPRoutes
// attached to them.
type Controller struct {
	gw       gatewayclient.Interface
	factory  gatewayinformers.SharedInformerFactory
	classes  gatewaylisters.GatewayClassLister
	gateways gatewaylisters.GatewayLister
	routes   gatewaylisters.HTTPRouteLister
	grpc     gatewaylisters.GRPCRouteLister
	grants   gatewaylisters.ReferenceGrantLister
	nsLister corelisters.NamespaceLister
	services corelisters.ServiceLister
	secrets  corelisters.SecretLister
	nodes    corelisters.NodeLister
	// configMaps hold the classes' address pools (parametersRef).
	configMaps corelisters.ConfigMapLister
	clock      clock.WithTicker
	loop       *ctrlutil.Loop
	synced     []cache.InformerSynced
	log        *slog.Logger
	published  func(Plan)
}

// Options are what New needs beside the shared dependencies.
type Options struct {
	// Client reaches the Gateway API resources. Required.
	Client gatewayclient.Interface
	// ResyncPeriod is the Gateway API informers' resync period.
	ResyncPeriod time.Duration
	// Published, when set, is handed each reconcile's Plan after its status writes (the data
	// plane's table is built from its Attachments).
	Published func(Plan)
}

// New builds the controller and registers its informer handlers.
func New(deps ctrlutil.Deps, opts Options) (*Controller, error) {
	if opts.Client == nil {
		return nil, errors.New("gateway controller: no Gateway API client")
	}
	f := gatewayinformers.NewSharedInformerFactory(opts.Client, opts.ResyncPeriod)
	v1 := f.Gateway().V1()
	core := deps.Informers.Core().V1()
	c := &Controller{
		gw: opts.Client, factory: f,
		classes: v1.GatewayClasses().Lister(), gateways: v1.Gateways().Lister(), routes: v1.HTTPRoutes().Lister(), grpc: v1.GRPCRoutes().Lister(),
		grants: v1.ReferenceGrants().Lister(), nsLister: core.Namespaces().Lister(), services: core.Services().Lister(),
		secrets: core.Secrets().Lister(), nodes: core.Nodes().Lister(), configMaps: core.ConfigMaps().Lister(),
		clock: deps.Clock, log: deps.Log(), published: opts.Published,
	}
	c.loop = ctrlutil.NewLoop(Name, deps, c.Sync)
	all := ctrlutil.On(ctrlutil.OnAll, func(any) { c.loop.Queue.Add(key) })
	synced, err := ctrlutil.NewWiring(Name).
		Watch(v1.GatewayClasses().Informer(), all).Watch(v1.Gateways().Informer(), all).
		Watch(v1.HTTPRoutes().Informer(), all).Watch(v1.GRPCRoutes().Informer(), all).Watch(v1.ReferenceGrants().Informer(), all).
		Watch(core.Namespaces().Informer(), all).Watch(core.Services().Informer(), all).
		Watch(core.Secrets().Informer(), all).Watch(core.Nodes().Informer(), all).
		Watch(core.ConfigMaps().Informer(), ctrlutil.On(ctrlutil.OnAll, c.onConfigMap)).Done()
	if err != nil {
		return nil, err
	}
	c.synced = synced
	return c, nil
}

// onConfigMap queues a reconcile for a ConfigMap a class reads its pool from, and for no other:
// the cluster's ConfigMaps change often (a burst of creates reconciled every class, Gateway and
// route once per ConfigMap, a third of the API server's CPU). A class's own change queues one,
// so a ConfigMap written before the class that names it is read then.
func (c *Controller) onConfigMap(obj any) {
	cm, ok := ctrlutil.Unwrap[*corev1.ConfigMap](obj)
	if !ok {
		return
	}
	classes, err := c.classes.List(labels.Everything())
	if err != nil || ReferencesConfigMap(classes, nn(cm.Namespace, cm.Name)) {
		c.loop.Queue.Add(key)
	}
}

// Run starts the Gateway API informers (the manager's shared factory starts the core ones) and
// reconciles until ctx is done; it returns once the informers' goroutines have ended.
func (c *Controller) Run(ctx context.Context, _ int) {
	if err := waitForDefinitions(ctx, c.gw.Discovery(), c.clock, time.Second); err != nil {
		return // stopped before the definitions were served
	}
	c.factory.Start(ctx.Done())
	defer c.factory.Shutdown() // waits for the informers' goroutines
	// One worker whatever the manager asks: there is one key, and each reconcile writes the
	// statuses of every object from one snapshot.
	c.loop.Run(ctx, 1, c.synced...)
}

// Sync decides the statuses from the informers' objects and writes those that differ.
func (c *Controller) Sync(ctx context.Context, _ string) error {
	s, err := c.snapshot()
	if err != nil {
		return err
	}
	plan := Decide(s)
	var errs []error
	for _, gc := range s.Classes {
		if st, ok := plan.Classes[gc.Name]; ok && !equality.Semantic.DeepEqual(gc.Status, st) {
			obj := gc.DeepCopy()
			obj.Status = st
			errs = append(errs, writeStatus(ctx, "gatewayclass "+gc.Name, obj, c.gw.GatewayV1().GatewayClasses().UpdateStatus))
		}
	}
	for _, g := range s.Gateways {
		if st, ok := plan.Gateways[nn(g.Namespace, g.Name)]; ok && !equality.Semantic.DeepEqual(g.Status, st) {
			obj := g.DeepCopy()
			obj.Status = st
			errs = append(errs, writeStatus(ctx, "gateway "+g.Namespace+"/"+g.Name, obj, c.gw.GatewayV1().Gateways(g.Namespace).UpdateStatus))
		}
	}
	for _, r := range s.Routes {
		if st, ok := plan.Routes[nn(r.Namespace, r.Name)]; ok && !equality.Semantic.DeepEqual(r.Status, st) {
			obj := r.DeepCopy()
			obj.Status = st
			errs = append(errs, writeStatus(ctx, "httproute "+r.Namespace+"/"+r.Name, obj, c.gw.GatewayV1().HTTPRoutes(r.Namespace).UpdateStatus))
		}
	}
	for _, r := range s.GRPCRoutes {
		if st, ok := plan.GRPCRoutes[nn(r.Namespace, r.Name)]; ok && !equality.Semantic.DeepEqual(r.Status, st) {
			obj := r.DeepCopy()
			obj.Status = st
			errs = append(errs, writeStatus(ctx, "grpcroute "+r.Namespace+"/"+r.Name, obj, c.gw.GatewayV1().GRPCRoutes(r.Namespace).UpdateStatus))
		}
	}
	if c.published != nil {
		c.published(plan)
	}
	return errors.Join(errs...)
}

// writeStatus writes obj's status; an object deleted since the snapshot is no error.
func writeStatus[T any](ctx context.Context, what string, obj T, update func(context.Context, T, metav1.UpdateOptions) (T, error)) error {
	if _, err := update(ctx, obj, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("update %s status: %w", what, err)
	}
	return nil
}

func (c *Controller) snapshot() (Snapshot, error) {
	s := Snapshot{Now: metav1.NewTime(c.clock.Now().Truncate(time.Second))}
	var err error
	everything := labels.Everything()
	if s.Classes, err = c.classes.List(everything); err != nil {
		return s, fmt.Errorf("list gatewayclasses: %w", err)
	}
	if s.Gateways, err = c.gateways.List(everything); err != nil {
		return s, fmt.Errorf("list gateways: %w", err)
	}
	if s.Routes, err = c.routes.List(everything); err != nil {
		return s, fmt.Errorf("list httproutes: %w", err)
	}
	if s.GRPCRoutes, err = c.grpc.List(everything); err != nil {
		return s, fmt.Errorf("list grpcroutes: %w", err)
	}
	if s.Grants, err = c.grants.List(everything); err != nil {
		return s, fmt.Errorf("list referencegrants: %w", err)
	}
	if s.Namespaces, err = c.nsLister.List(everything); err != nil {
		return s, fmt.Errorf("list namespaces: %w", err)
	}
	if s.Services, err = c.services.List(everything); err != nil {
		return s, fmt.Errorf("list services: %w", err)
	}
	if s.Secrets, err = c.secrets.List(everything); err != nil {
		return s, fmt.Errorf("list secrets: %w", err)
	}
	if s.Nodes, err = c.nodes.List(everything); err != nil {
		return s, fmt.Errorf("list nodes: %w", err)
	}
	s.Pools = ClassPools(s.Classes, func(k types.NamespacedName) *corev1.ConfigMap {
		cm, err := c.configMaps.ConfigMaps(k.Namespace).Get(k.Name)
		if err != nil {
			return nil // not found: the class says so
		}
		return cm
	})
	return s, nil
}
