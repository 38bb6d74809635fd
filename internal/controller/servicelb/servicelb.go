package servicelb

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/skiff-sh/skiff/internal/cloudprovider"
	"github.com/skiff-sh/skiff/internal/controller/ctrlutil"
)

// Action is what a Service needs.
type Action int

const (
	// Nothing: not a load balancer and nothing left to clean up.
	Nothing Action = iota
	// Ensure the balancer (and the finalizer) and write its status.
	Ensure
	// Cleanup: delete the balancer, clear the status, drop the finalizer.
	Cleanup
)

// Decide is the Service's action: Ensure while it wants a balancer, Cleanup while it carries the
// finalizer or ingress addresses but no longer wants one (deleted, type changed, another class).
func Decide(svc *corev1.Service) Action {
	if cloudprovider.WantsLoadBalancer(svc) {
		return Ensure
	}
	if cloudprovider.HasCleanupFinalizer(svc) || (svc.Spec.LoadBalancerClass == nil && len(svc.Status.LoadBalancer.Ingress) > 0) {
		return Cleanup
	}
	return Nothing
}

// Controller is the service controller.
type Controller struct {
	deps        ctrlutil.Deps
	lb          cloudprovider.LoadBalancer
	clusterName string
	services    corelisters.ServiceLister
	nodes       corelisters.NodeLister
	loop        *ctrlutil.Loop
	synced      []cache.InformerSynced
}

// New builds the controller on the provider's LoadBalancer.
func New(deps ctrlutil.Deps, lb cloudprovider.LoadBalancer, clusterName string) (*Controller, error) {
	svcInf := deps.Informers.Core().V1().Services()
	nodeInf := deps.Informers.Core().V1().Nodes()
	c := &Controller{deps: deps, lb: lb, clusterName: clusterName, services: svcInf.Lister(), nodes: nodeInf.Lister()}
	c.loop = ctrlutil.NewLoop("service-lb", deps, c.reconcile)
	// A balancer that changes or goes may free a port a pending one waits for.
	changed := func(obj any) {
		c.loop.Enqueue(obj)
		list, err := c.services.List(labels.Everything())
		if err != nil {
			return
		}
		for _, s := range list {
			if Decide(s) == Ensure && len(s.Status.LoadBalancer.Ingress) == 0 {
				c.loop.Enqueue(s)
			}
		}
	}
	if _, err := svcInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.loop.Enqueue,
		UpdateFunc: func(_, n any) { changed(n) },
		DeleteFunc: changed,
	}); err != nil {
		return nil, fmt.Errorf("service-lb: service handler: %w", err)
	}
	// A node change may change every balancer's addresses.
	all := func(any) {
		list, err := c.services.List(labels.Everything())
		if err != nil {
			return
		}
		for _, s := range list {
			if Decide(s) != Nothing {
				c.loop.Enqueue(s)
			}
		}
	}
	if _, err := nodeInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: all, UpdateFunc: ctrlutil.OnNodeUpdate(nodeChanged, all), DeleteFunc: all,
	}); err != nil {
		return nil, fmt.Errorf("service-lb: node handler: %w", err)
	}
	c.synced = []cache.InformerSynced{svcInf.Informer().HasSynced, nodeInf.Informer().HasSynced}
	return c, nil
}

// nodeChanged: only what Assign looks at (readiness, labels, addresses, deletion).
func nodeChanged(o, n *corev1.Node) bool {
	return !apiequality.Semantic.DeepEqual(o.Labels, n.Labels) || !apiequality.Semantic.DeepEqual(o.Status.Addresses, n.Status.Addresses) ||
		ctrlutil.IsNodeReady(o) != ctrlutil.IsNodeReady(n) || (o.DeletionTimestamp == nil) != (n.DeletionTimestamp == nil)
}

// Run runs the controller until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) { c.loop.Run(ctx, workers, c.synced...) }

func (c *Controller) reconcile(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	cached, err := c.services.Services(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil // the finalizer means a balancer's Service is seen before it goes
	}
	if err != nil {
		return err
	}
	svc := cached.DeepCopy()
	log := c.deps.Log().With("service", key)
	switch Decide(svc) {
	case Ensure:
		if !cloudprovider.HasCleanupFinalizer(svc) {
			if err := c.patchFinalizers(ctx, svc, append(slices.Clone(svc.Finalizers), cloudprovider.LoadBalancerCleanupFinalizer)); err != nil {
				return err
			}
		}
		nodes, err := c.nodes.List(labels.Everything())
		if err != nil {
			return err
		}
		if len(svc.Status.LoadBalancer.Ingress) == 0 {
			c.deps.Recorder.Event(svc, corev1.EventTypeNormal, "EnsuringLoadBalancer", "Ensuring load balancer")
		}
		st, err := c.lb.EnsureLoadBalancer(ctx, c.clusterName, svc, nodes)
		if err != nil {
			c.deps.Recorder.Eventf(svc, corev1.EventTypeWarning, "SyncLoadBalancerFailed", "Error syncing load balancer: %v", err)
			return fmt.Errorf("ensure load balancer for %s: %w", key, err)
		}
		if apiequality.Semantic.DeepEqual(*st, svc.Status.LoadBalancer) {
			return nil
		}
		if err := c.patchStatus(ctx, svc, *st); err != nil {
			return err
		}
		log.Info("load balancer ensured", "ingress", ingressIPs(*st))
		c.deps.Recorder.Event(svc, corev1.EventTypeNormal, "EnsuredLoadBalancer", "Ensured load balancer")
	case Cleanup:
		c.deps.Recorder.Event(svc, corev1.EventTypeNormal, "DeletingLoadBalancer", "Deleting load balancer")
		if err := c.lb.EnsureLoadBalancerDeleted(ctx, c.clusterName, svc); err != nil {
			c.deps.Recorder.Eventf(svc, corev1.EventTypeWarning, "SyncLoadBalancerFailed", "Error deleting load balancer: %v", err)
			return fmt.Errorf("delete load balancer of %s: %w", key, err)
		}
		if len(svc.Status.LoadBalancer.Ingress) > 0 && svc.Spec.LoadBalancerClass == nil {
			if err := c.patchStatus(ctx, svc, corev1.LoadBalancerStatus{}); err != nil && !apierrors.IsNotFound(err) {
				return err
			}
		}
		if cloudprovider.HasCleanupFinalizer(svc) {
			rest := slices.DeleteFunc(slices.Clone(svc.Finalizers), func(f string) bool { return f == cloudprovider.LoadBalancerCleanupFinalizer })
			if err := c.patchFinalizers(ctx, svc, rest); err != nil && !apierrors.IsNotFound(err) {
				return err
			}
		}
		log.Info("load balancer deleted")
		c.deps.Recorder.Event(svc, corev1.EventTypeNormal, "DeletedLoadBalancer", "Deleted load balancer")
	}
	return nil
}

func ingressIPs(st corev1.LoadBalancerStatus) []string {
	var out []string
	for _, in := range st.Ingress {
		out = append(out, in.IP)
	}
	return out
}

// patchFinalizers sets the finalizers with the resourceVersion as precondition (a merge patch on
// a list replaces it whole).
func (c *Controller) patchFinalizers(ctx context.Context, svc *corev1.Service, finalizers []string) error {
	if finalizers == nil {
		finalizers = []string{}
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"finalizers": finalizers, "resourceVersion": svc.ResourceVersion}})
	if err != nil {
		return err
	}
	out, err := c.deps.Client.CoreV1().Services(svc.Namespace).Patch(ctx, svc.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("finalizers of %s/%s: %w", svc.Namespace, svc.Name, err)
	}
	*svc = *out
	return nil
}

func (c *Controller) patchStatus(ctx context.Context, svc *corev1.Service, st corev1.LoadBalancerStatus) error {
	// ingress is omitempty: an empty list would vanish from the patch, null removes it.
	var ingress any
	if len(st.Ingress) > 0 {
		ingress = st.Ingress
	}
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"loadBalancer": map[string]any{"ingress": ingress}}})
	if err != nil {
		return err
	}
	out, err := c.deps.Client.CoreV1().Services(svc.Namespace).Patch(ctx, svc.Name, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
	if err != nil {
		return fmt.Errorf("status of %s/%s: %w", svc.Namespace, svc.Name, err)
	}
	*svc = *out
	return nil
}
