package cloudroutes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/skiff-sh/skiff/internal/cloudprovider"
	"github.com/skiff-sh/skiff/internal/controller/ctrlutil"
)

// Plan compares the nodes' podCIDRs with the provider's routes: the routes to create, those to
// delete (no node, or a node whose podCIDR changed), and the nodes whose route is in place.
func Plan(nodes []*corev1.Node, routes []*cloudprovider.Route) (create, del []*cloudprovider.Route, routed []string) {
	want := map[string]string{}
	for _, n := range nodes {
		if n.Spec.PodCIDR != "" && n.DeletionTimestamp == nil {
			want[n.Name] = n.Spec.PodCIDR
		}
	}
	have := map[string]bool{}
	for _, r := range routes {
		if cidr, ok := want[r.TargetNode]; ok && cidr == r.DestinationCIDR {
			have[r.TargetNode] = true
			continue
		}
		del = append(del, r)
	}
	for node, cidr := range want {
		if have[node] {
			routed = append(routed, node)
			continue
		}
		create = append(create, &cloudprovider.Route{Name: node, TargetNode: node, DestinationCIDR: cidr})
	}
	sort.Strings(routed)
	sort.Slice(create, func(i, j int) bool { return create[i].TargetNode < create[j].TargetNode })
	sort.Slice(del, func(i, j int) bool { return del[i].TargetNode < del[j].TargetNode })
	return create, del, routed
}

// Controller is the route controller.
type Controller struct {
	deps        ctrlutil.Deps
	routes      cloudprovider.Routes
	clusterName string
	nodes       corelisters.NodeLister
	loop        *ctrlutil.Loop
	synced      cache.InformerSynced
}

const key = "routes"

// routeBatchDelay is how long node changes gather before the route table is reconciled.
const routeBatchDelay = time.Second

// New builds the controller on the provider's Routes.
func New(deps ctrlutil.Deps, routes cloudprovider.Routes, clusterName string) (*Controller, error) {
	inf := deps.Informers.Core().V1().Nodes()
	c := &Controller{deps: deps, routes: routes, clusterName: clusterName, nodes: inf.Lister(), synced: inf.Informer().HasSynced}
	c.loop = ctrlutil.NewLoop("cloud-node-routes", deps, c.reconcile)
	// The whole table is one key, so changes are gathered for a second before a reconcile: node
	// IPAM giving 5,000 new nodes their podCIDRs one by one would otherwise run 5,000 reconciles of
	// the whole table (Kubernetes' route controller reconciles on a 10 s period instead).
	kick := func(any) { c.loop.Queue.AddAfter(key, routeBatchDelay) }
	// A node's status is written every few seconds (heartbeats, images, volumes); only what a
	// route depends on starts a reconcile of the whole table. A failed reconcile comes back with
	// the loop's backoff, not with the next heartbeat.
	update := ctrlutil.OnNodeUpdate(routeInputsChanged, kick)
	if _, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: kick, UpdateFunc: update, DeleteFunc: kick}); err != nil {
		return nil, fmt.Errorf("route controller: node handler: %w", err)
	}
	return c, nil
}

// Run runs the controller until ctx ends (one worker: the whole table is one key).
func (c *Controller) Run(ctx context.Context, _ int) { c.loop.Run(ctx, 1, c.synced) }

func (c *Controller) reconcile(ctx context.Context, _ string) error {
	nodes, err := c.nodes.List(labels.Everything())
	if err != nil {
		return err
	}
	routes, err := c.routes.ListRoutes(ctx, c.clusterName)
	if err != nil {
		return fmt.Errorf("list routes: %w", err)
	}
	create, del, routed := Plan(nodes, routes)
	var errs []error
	for _, r := range create {
		if err := c.routes.CreateRoute(ctx, c.clusterName, r.Name, r); err != nil {
			errs = append(errs, fmt.Errorf("create route %s to %s: %w", r.DestinationCIDR, r.TargetNode, err))
			continue
		}
		routed = append(routed, r.TargetNode)
	}
	for _, r := range del {
		if err := c.routes.DeleteRoute(ctx, c.clusterName, r); err != nil {
			errs = append(errs, fmt.Errorf("delete route %s to %s: %w", r.DestinationCIDR, r.TargetNode, err))
		}
	}
	for _, name := range routed {
		n, err := c.nodes.Get(name)
		if err != nil || !needsCondition(n) {
			continue
		}
		if err := c.setNetworkAvailable(ctx, name); err != nil {
			errs = append(errs, err)
		}
	}
	return joinErrors(errs)
}

// routeInputsChanged reports whether a node update can change the route plan or the node's
// NetworkUnavailable condition: its podCIDR, addresses, deletion or that condition.
func routeInputsChanged(o, n *corev1.Node) bool {
	return o.Spec.PodCIDR != n.Spec.PodCIDR || !apiequality.Semantic.DeepEqual(o.Status.Addresses, n.Status.Addresses) ||
		(o.DeletionTimestamp == nil) != (n.DeletionTimestamp == nil) || needsCondition(o) != needsCondition(n)
}

// maxReportedErrors bounds the errors one failed reconcile reports: with thousands of nodes a
// provider that refuses every route would otherwise log thousands of errors per attempt.
const maxReportedErrors = 5

func joinErrors(errs []error) error {
	if len(errs) <= maxReportedErrors {
		return errors.Join(errs...)
	}
	return errors.Join(append(errs[:maxReportedErrors:maxReportedErrors], fmt.Errorf("and %d more", len(errs)-maxReportedErrors))...)
}

func needsCondition(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeNetworkUnavailable {
			return c.Status != corev1.ConditionFalse
		}
	}
	return true
}

// setNetworkAvailable patches the node's NetworkUnavailable condition to False (a strategic merge
// on conditions, keyed by type, leaves the kubelet's conditions alone).
func (c *Controller) setNetworkAvailable(ctx context.Context, node string) error {
	now := metav1.NewTime(c.deps.Clock.Now().Truncate(time.Second))
	cond := corev1.NodeCondition{Type: corev1.NodeNetworkUnavailable, Status: corev1.ConditionFalse, Reason: "RouteCreated",
		Message: "RouteController created a route", LastTransitionTime: now, LastHeartbeatTime: now}
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": []corev1.NodeCondition{cond}}})
	if err != nil {
		return err
	}
	if _, err := c.deps.Client.CoreV1().Nodes().Patch(ctx, node, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		return fmt.Errorf("NetworkUnavailable of %s: %w", node, err)
	}
	return nil
}
