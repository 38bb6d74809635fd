package netpol

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	cnpv1 "sigs.k8s.io/network-policy-api/apis/v1beta1"
)

// ClusterNetworkPolicies is the resource the agent enforces beside NetworkPolicy.
var clusterNetworkPolicies = schema.GroupVersionResource{Group: "policy.networking.k8s.io", Version: "v1beta1", Resource: "clusternetworkpolicies"}

// clusterPolicies watches ClusterNetworkPolicies once their CRD is served: the CRD is optional
// (an operator installs it from network-policy-api), and an informer on a resource that is not
// served would never sync.
type clusterPolicies struct {
	opts    Options
	client  kubernetes.Interface
	handler cache.ResourceEventHandler

	mu     sync.Mutex
	lister cache.GenericLister // nil until the informer has synced
}

func newClusterPolicies(opts Options, client kubernetes.Interface, handler cache.ResourceEventHandler) *clusterPolicies {
	return &clusterPolicies{opts: opts, client: client, handler: handler}
}

// run looks for the resource every DiscoveryPeriod until it is served, then watches it until
// ctx ends.
func (c *clusterPolicies) run(ctx context.Context) {
	tick := c.opts.Clock.NewTicker(c.opts.DiscoveryPeriod)
	defer tick.Stop()
	for !c.served() {
		select {
		case <-ctx.Done():
			return
		case <-tick.C():
		}
	}
	factory := dynamicinformer.NewDynamicSharedInformerFactory(c.opts.Dynamic, 0)
	inf := factory.ForResource(clusterNetworkPolicies)
	if _, err := inf.Informer().AddEventHandler(c.handler); err != nil {
		c.opts.Logger.Error("cluster network policy informer", "err", err)
		return
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	if !cache.WaitFor(ctx, "", inf.Informer().HasSyncedChecker()) {
		return
	}
	c.mu.Lock()
	c.lister = inf.Lister()
	c.mu.Unlock()
	c.opts.Logger.Info("enforcing ClusterNetworkPolicy", "resource", clusterNetworkPolicies.String())
	c.handler.OnAdd(nil, false) // a sync with them
	<-ctx.Done()
}

func (c *clusterPolicies) served() bool {
	list, err := c.client.Discovery().ServerResourcesForGroupVersion(clusterNetworkPolicies.GroupVersion().String())
	if err != nil {
		return false
	}
	for _, r := range list.APIResources {
		if r.Name == clusterNetworkPolicies.Resource {
			return true
		}
	}
	return false
}

// list is every ClusterNetworkPolicy, typed; none while the resource is not watched.
func (c *clusterPolicies) list() ([]*cnpv1.ClusterNetworkPolicy, error) {
	c.mu.Lock()
	lister := c.lister
	c.mu.Unlock()
	if lister == nil {
		return nil, nil
	}
	objs, err := lister.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	out := make([]*cnpv1.ClusterNetworkPolicy, 0, len(objs))
	for _, o := range objs {
		u, ok := o.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		p := &cnpv1.ClusterNetworkPolicy{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, p); err != nil {
			// The CRD's schema makes this rare; one unreadable policy must not stop the others.
			c.opts.Logger.Warn("cluster network policy not enforced", "name", u.GetName(), "err", err)
			continue
		}
		out = append(out, p)
	}
	return out, nil
}
