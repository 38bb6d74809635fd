package cluster

import (
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/skiff-sh/skiff/internal/apiserver/local"
	"github.com/skiff-sh/skiff/internal/registry"
	"github.com/skiff-sh/skiff/internal/storage/watchcache"
)

// inProcessResources are the resources whose informers, in a process that also runs the API
// server, read its watch cache instead of a client: those with many or large objects (pods, nodes
// and their Leases, workloads, endpoints) that several components cache, and RBAC's, which the
// authorizer must hold before the node's components start.
func inProcessResources() []schema.GroupResource {
	return append(sharedResources(), rbacResources()...)
}

// controllerManagerResources: the controller manager's (of RBAC's, only the cluster roles that
// the aggregation controller reads: a factory starts every informer registered on it).
func controllerManagerResources() []schema.GroupResource {
	return append(sharedResources(), schema.GroupResource{Group: "rbac.authorization.k8s.io", Resource: "clusterroles"})
}

// sharedResources are the resources of many or large objects that several components cache.
func sharedResources() []schema.GroupResource {
	return []schema.GroupResource{
		{Resource: "pods"}, {Resource: "nodes"}, {Resource: "services"}, {Resource: "namespaces"},
		{Resource: "persistentvolumeclaims"}, {Resource: "persistentvolumes"},
		{Group: "apps", Resource: "replicasets"}, {Group: "apps", Resource: "deployments"},
		{Group: "apps", Resource: "statefulsets"}, {Group: "apps", Resource: "daemonsets"},
		{Group: "batch", Resource: "jobs"},
		{Group: "discovery.k8s.io", Resource: "endpointslices"},
		{Group: "coordination.k8s.io", Resource: "leases"},
	}
}

// What each in-process component other than the controller manager (which reads nearly every
// resource above) reads: a factory starts every informer registered on it, read or not (see
// local.Informers.Only), and an unread one would still map every object and handle every change.
// schedulerResources: the scheduler's and the scheduling explainer's informers.
func schedulerResources() []schema.GroupResource {
	return []schema.GroupResource{{Resource: "pods"}, {Resource: "nodes"},
		{Resource: "persistentvolumeclaims"}, {Resource: "persistentvolumes"}, {Resource: "namespaces"}}
}

// proxyResources: the service proxy's.
func proxyResources() []schema.GroupResource {
	return []schema.GroupResource{{Resource: "services"}, {Group: "discovery.k8s.io", Resource: "endpointslices"}}
}

// nodeAuthorizerResources: the Node authorizer's.
func nodeAuthorizerResources() []schema.GroupResource {
	return []schema.GroupResource{{Resource: "pods"}, {Resource: "persistentvolumeclaims"}, {Resource: "persistentvolumes"}}
}

// rbacResources: RBAC's four, the authorizer's (their informers are built before the watch caches
// exist: registerRBACInformers).
func rbacResources() []schema.GroupResource {
	g := "rbac.authorization.k8s.io"
	return []schema.GroupResource{{Group: g, Resource: "clusterroles"}, {Group: g, Resource: "clusterrolebindings"},
		{Group: g, Resource: "roles"}, {Group: g, Resource: "rolebindings"}}
}

// dnsResources: cluster DNS's.
func dnsResources() []schema.GroupResource {
	return append(proxyResources(), schema.GroupResource{Resource: "namespaces"})
}

// cachedResource is a resource and the watch cache its storage sits on.
type cachedResource struct {
	res   *registry.Resource
	cache *watchcache.Cache
}

// addResource records c as res's watch cache (and stops it with the others).
func (s *cacheSet) addResource(res *registry.Resource, c *watchcache.Cache) {
	s.add(c)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byResource == nil {
		s.byResource = map[schema.GroupResource]cachedResource{}
	}
	s.byResource[res.GroupResource()] = cachedResource{res: res, cache: c}
}

// localInformers are in-process informers for this node's controller manager, scheduler, service
// proxy and DNS (each caller gets its own set, over the same watch caches):
// nil (every informer through client-go) when turned off or when the API server has no watch
// cache for a resource yet.
func (s *cacheSet) localInformers(cfg *Config) (*local.Informers, error) {
	if cfg.DisableLocalInformers {
		return nil, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	in := &local.Informers{}
	for _, gr := range inProcessResources() {
		cr, ok := s.byResource[gr]
		if !ok || cr.res.GroupVersion.Version != "v1" {
			continue
		}
		if err := in.Add(cr.res, cr.cache); err != nil {
			return nil, err
		}
	}
	if in.Len() == 0 {
		return nil, nil
	}
	cfg.Logger.Info("informers read the API server's watch cache in process", "resources", in.Len())
	return in, nil
}
