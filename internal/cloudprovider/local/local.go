package local

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"

	"github.com/skiff-sh/skiff/internal/cloudprovider"
	"github.com/skiff-sh/skiff/internal/controller/ctrlutil"
)

// Name is the provider's registered name.
const Name = "local"

// EnableLBLabel, set to "true" on any node, limits load-balancer addresses to the nodes that carry
// it (k3s's svccontroller.k3s.cattle.io/enablelb); without it every eligible node serves.
const EnableLBLabel = "svccontroller.skiff.sh/enablelb"

// ExcludeLabel keeps a node out of every load balancer (upstream's label).
const ExcludeLabel = "node.kubernetes.io/exclude-from-external-load-balancers"

// Provider is the local provider.
type Provider struct {
	services corelisters.ServiceLister
	nodes    corelisters.NodeLister
}

var (
	_ cloudprovider.Interface    = &Provider{}
	_ cloudprovider.LoadBalancer = &Provider{}
	_ cloudprovider.Instances    = &Provider{}
	_ cloudprovider.Routes       = &Provider{}
)

// New is the provider's cloudprovider.Factory.
func New(ic cloudprovider.InitContext) (cloudprovider.Interface, error) {
	if ic.Informers == nil {
		return nil, fmt.Errorf("local provider needs informers")
	}
	return &Provider{services: ic.Informers.Core().V1().Services().Lister(), nodes: ic.Informers.Core().V1().Nodes().Lister()}, nil
}

// Register adds the local provider to r.
func Register(r *cloudprovider.Registry) error { return r.Register(Name, New) }

func (p *Provider) ProviderName() string                             { return Name }
func (p *Provider) LoadBalancer() (cloudprovider.LoadBalancer, bool) { return p, true }
func (p *Provider) Instances() (cloudprovider.Instances, bool)       { return p, true }
func (p *Provider) Routes() (cloudprovider.Routes, bool)             { return p, true }

// GetLoadBalancer: the balancer is the Service's own status (the addresses are the nodes').
func (p *Provider) GetLoadBalancer(_ context.Context, _ string, svc *corev1.Service) (*corev1.LoadBalancerStatus, bool, error) {
	st := svc.Status.LoadBalancer.DeepCopy()
	return st, len(st.Ingress) > 0, nil
}

// EnsureLoadBalancer picks the nodes (Assign) with the other Services as they are now.
func (p *Provider) EnsureLoadBalancer(_ context.Context, _ string, svc *corev1.Service, nodes []*corev1.Node) (*corev1.LoadBalancerStatus, error) {
	others, err := p.services.List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("list services: %w", err)
	}
	ingress, err := Assign(svc, nodes, others)
	if err != nil {
		return nil, err
	}
	return &corev1.LoadBalancerStatus{Ingress: ingress}, nil
}

// UpdateLoadBalancer has nothing to do beyond what EnsureLoadBalancer returns.
func (p *Provider) UpdateLoadBalancer(ctx context.Context, cluster string, svc *corev1.Service, nodes []*corev1.Node) error {
	_, err := p.EnsureLoadBalancer(ctx, cluster, svc, nodes)
	return err
}

// EnsureLoadBalancerDeleted: nothing outside the cluster to remove; the proxies drop the rules
// once the status is cleared.
func (p *Provider) EnsureLoadBalancerDeleted(context.Context, string, *corev1.Service) error {
	return nil
}

// InstanceExists: a local machine exists as long as its Node does.
func (p *Provider) InstanceExists(context.Context, *corev1.Node) (bool, error) { return true, nil }

// NodeAddresses are the ones the node's kubelet reports.
func (p *Provider) NodeAddresses(_ context.Context, node *corev1.Node) ([]corev1.NodeAddress, error) {
	return slices.Clone(node.Status.Addresses), nil
}

// ListRoutes are the routes every worker holds: one per node with a podCIDR and an InternalIP
// (internal/podnet programs exactly these from the Node objects, on every other node).
func (p *Provider) ListRoutes(context.Context, string) ([]*cloudprovider.Route, error) {
	nodes, err := p.nodes.List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	var out []*cloudprovider.Route
	for _, n := range nodes {
		if r := nodeRoute(n); r != nil {
			out = append(out, r)
		}
	}
	return out, nil
}

func nodeRoute(n *corev1.Node) *cloudprovider.Route {
	if n.Spec.PodCIDR == "" || n.DeletionTimestamp != nil || nodeAddress(n, corev1.NodeInternalIP) == "" {
		return nil
	}
	return &cloudprovider.Route{Name: n.Name, TargetNode: n.Name, DestinationCIDR: n.Spec.PodCIDR}
}

// CreateRoute accepts a route its target node's Node object already implies (the workers
// program it); any other is refused, since this provider has no route table of its own.
func (p *Provider) CreateRoute(_ context.Context, _, _ string, route *cloudprovider.Route) error {
	n, err := p.nodes.Get(route.TargetNode)
	if err != nil {
		return fmt.Errorf("route to %s: %w", route.TargetNode, err)
	}
	if r := nodeRoute(n); r == nil || r.DestinationCIDR != route.DestinationCIDR {
		return fmt.Errorf("route %s to %s: the local provider only routes a node's own podCIDR (%q) via its InternalIP", route.DestinationCIDR, route.TargetNode, n.Spec.PodCIDR)
	}
	return nil
}

// DeleteRoute: a route goes with its Node.
func (p *Provider) DeleteRoute(context.Context, string, *cloudprovider.Route) error { return nil }

func nodeAddress(n *corev1.Node, t corev1.NodeAddressType) string {
	for _, a := range n.Status.Addresses {
		if a.Type == t {
			if ip, err := netip.ParseAddr(a.Address); err == nil && ip.Is4() && !ip.IsLoopback() {
				return a.Address
			}
		}
	}
	return ""
}

func hasLabel(n *corev1.Node, key string) bool {
	_, ok := n.Labels[key]
	return ok
}

type portKey struct {
	proto corev1.Protocol
	port  int32
}

func ports(svc *corev1.Service) []portKey {
	var out []portKey
	for _, p := range svc.Spec.Ports {
		proto := p.Protocol
		if proto == "" {
			proto = corev1.ProtocolTCP
		}
		out = append(out, portKey{proto, p.Port})
	}
	return out
}

// older orders Services by creation, then namespace/name: the older one keeps a contested port.
func older(a, b *corev1.Service) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return a.Namespace+"/"+a.Name < b.Namespace+"/"+b.Name
}

// Assign decides the addresses of svc: the ExternalIP (else InternalIP) of every Ready node not
// being deleted and not labelled ExcludeLabel (only nodes labelled EnableLBLabel=true when any
// is), minus the nodes where an older load-balancer Service already answers on one of svc's
// ports (as ServiceLB leaves a port conflict pending). No node left is an error that says why.
func Assign(svc *corev1.Service, nodes []*corev1.Node, services []*corev1.Service) ([]corev1.LoadBalancerIngress, error) {
	want := ports(svc)
	if len(want) == 0 {
		return nil, fmt.Errorf("service has no ports")
	}
	labelled := slices.ContainsFunc(nodes, func(n *corev1.Node) bool { return n.Labels[EnableLBLabel] == "true" })
	taken := map[string][]string{} // address -> services holding one of svc's ports there
	for _, o := range services {
		if o.UID == svc.UID && o.Namespace == svc.Namespace && o.Name == svc.Name {
			continue
		}
		if !cloudprovider.WantsLoadBalancer(o) || !older(o, svc) {
			continue
		}
		clash := slices.ContainsFunc(ports(o), func(k portKey) bool { return slices.Contains(want, k) })
		if !clash {
			continue
		}
		for _, in := range o.Status.LoadBalancer.Ingress {
			taken[in.IP] = append(taken[in.IP], o.Namespace+"/"+o.Name)
		}
	}
	var ingress []corev1.LoadBalancerIngress
	var why []string
	vip := corev1.LoadBalancerIPModeVIP
	for _, n := range nodes {
		addr := nodeAddress(n, corev1.NodeExternalIP)
		if addr == "" {
			addr = nodeAddress(n, corev1.NodeInternalIP)
		}
		switch {
		case n.DeletionTimestamp != nil, !ctrlutil.IsNodeReady(n):
			why = append(why, n.Name+": not ready")
		case hasLabel(n, ExcludeLabel): // its presence excludes, whatever the value (as upstream)
			why = append(why, n.Name+": excluded")
		case labelled && n.Labels[EnableLBLabel] != "true":
			why = append(why, n.Name+": not labelled "+EnableLBLabel+"=true")
		case addr == "":
			why = append(why, n.Name+": no usable IPv4 address")
		case len(taken[addr]) > 0:
			why = append(why, fmt.Sprintf("%s: port in use by %s", n.Name, strings.Join(taken[addr], ",")))
		default:
			ingress = append(ingress, corev1.LoadBalancerIngress{IP: addr, IPMode: &vip})
		}
	}
	if len(ingress) == 0 {
		if len(why) == 0 {
			why = []string{"no nodes"}
		}
		return nil, fmt.Errorf("no node can take the service's ports: %s", strings.Join(why, "; "))
	}
	slices.SortFunc(ingress, func(a, b corev1.LoadBalancerIngress) int {
		return netip.MustParseAddr(a.IP).Compare(netip.MustParseAddr(b.IP))
	})
	return ingress, nil
}
