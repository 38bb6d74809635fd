package cloudprovider

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
)

// Interface is a cloud provider. A provider returns false from an accessor it does not support.
type Interface interface {
	// ProviderName is the name the provider is registered under.
	ProviderName() string
	// LoadBalancer manages external load balancers for type LoadBalancer Services.
	LoadBalancer() (LoadBalancer, bool)
	// Instances reports nodes' addresses and existence.
	Instances() (Instances, bool)
	// Routes manages the routes to nodes' podCIDRs.
	Routes() (Routes, bool)
}

// LoadBalancer is upstream's LoadBalancer interface, less the name helper.
type LoadBalancer interface {
	// GetLoadBalancer returns the balancer's status and whether it exists.
	GetLoadBalancer(ctx context.Context, clusterName string, svc *corev1.Service) (*corev1.LoadBalancerStatus, bool, error)
	// EnsureLoadBalancer creates or updates the balancer for svc over nodes and returns its status.
	EnsureLoadBalancer(ctx context.Context, clusterName string, svc *corev1.Service, nodes []*corev1.Node) (*corev1.LoadBalancerStatus, error)
	// UpdateLoadBalancer changes the nodes behind an existing balancer.
	UpdateLoadBalancer(ctx context.Context, clusterName string, svc *corev1.Service, nodes []*corev1.Node) error
	// EnsureLoadBalancerDeleted removes the balancer; one already gone is not an error.
	EnsureLoadBalancerDeleted(ctx context.Context, clusterName string, svc *corev1.Service) error
}

// Instances is upstream's InstancesV2, trimmed to what skiff uses.
type Instances interface {
	// InstanceExists reports whether the machine behind node still exists.
	InstanceExists(ctx context.Context, node *corev1.Node) (bool, error)
	// NodeAddresses are the node's addresses as the provider knows them.
	NodeAddresses(ctx context.Context, node *corev1.Node) ([]corev1.NodeAddress, error)
}

// Route is a route to one node's podCIDR.
type Route struct {
	Name            string
	TargetNode      string
	DestinationCIDR string
}

// Routes is upstream's Routes interface.
type Routes interface {
	ListRoutes(ctx context.Context, clusterName string) ([]*Route, error)
	CreateRoute(ctx context.Context, clusterName, nameHint string, route *Route) error
	DeleteRoute(ctx context.Context, clusterName string, route *Route) error
}

// InitContext is what a provider may use: a client and the cloud controller manager's shared
// informers (started after the provider is built).
type InitContext struct {
	Client    kubernetes.Interface
	Informers informers.SharedInformerFactory
	Logger    *slog.Logger
}

// Factory builds a provider.
type Factory func(InitContext) (Interface, error)

// ErrUnknown is returned for a provider name nobody registered.
var ErrUnknown = errors.New("unknown cloud provider")

// Registry maps provider names to factories. The zero value is empty; the caller registers the
// built-in providers (a second provider is one Register call away).
type Registry struct {
	factories map[string]Factory
}

// Register adds a provider; registering a name twice is an error.
func (r *Registry) Register(name string, f Factory) error {
	if r.factories == nil {
		r.factories = map[string]Factory{}
	}
	if _, ok := r.factories[name]; ok {
		return fmt.Errorf("cloud provider %q registered twice", name)
	}
	r.factories[name] = f
	return nil
}

// Names are the registered providers, sorted.
func (r *Registry) Names() []string {
	var out []string
	for n := range r.factories {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Has reports whether name is registered (or is "none").
func (r *Registry) Has(name string) bool {
	_, ok := r.factories[name]
	return ok || name == None
}

// None turns the cloud controller manager off.
const None = "none"

// New builds the provider called name; "none" gives (nil, nil).
func (r *Registry) New(name string, ic InitContext) (Interface, error) {
	if name == None || name == "" {
		return nil, nil
	}
	f, ok := r.factories[name]
	if !ok {
		return nil, fmt.Errorf("%w %q (known: %v)", ErrUnknown, name, append(r.Names(), None))
	}
	p, err := f(ic)
	if err != nil {
		return nil, fmt.Errorf("cloud provider %s: %w", name, err)
	}
	return p, nil
}

// LoadBalancerCleanupFinalizer keeps a Service until its balancer is gone (upstream's name).
const LoadBalancerCleanupFinalizer = "service.kubernetes.io/load-balancer-cleanup"

// WantsLoadBalancer reports whether svc should have a balancer from the default provider: type
// LoadBalancer, not being deleted, no loadBalancerClass (another implementation's).
func WantsLoadBalancer(svc *corev1.Service) bool {
	return svc.Spec.Type == corev1.ServiceTypeLoadBalancer && svc.DeletionTimestamp == nil && svc.Spec.LoadBalancerClass == nil
}

// HasCleanupFinalizer reports whether svc carries LoadBalancerCleanupFinalizer.
func HasCleanupFinalizer(svc *corev1.Service) bool {
	return slices.Contains(svc.Finalizers, LoadBalancerCleanupFinalizer)
}
