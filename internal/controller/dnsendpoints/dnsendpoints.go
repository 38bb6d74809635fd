package dnsendpoints

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/internal/controller/ctrlutil"
)

// Name is the controller's name in --controllers and in metrics.
const Name = "dns-endpoints"

// The Service whose slices this controller keeps, and the managed-by label of those slices.
const (
	ServiceNamespace = "kube-system"
	ServiceName      = "kube-dns"
	ManagedBy        = "dns-endpoints.skiff.sh"
	key              = ServiceNamespace + "/" + ServiceName
	roleLabelPrefix  = "node-role.kubernetes.io/"
)

// Controller keeps the kube-dns EndpointSlices.
type Controller struct {
	client      kubernetes.Interface
	nodeLister  corelisters.NodeLister
	svcLister   corelisters.ServiceLister
	sliceLister discoverylisters.EndpointSliceLister
	loop        *ctrlutil.Loop
	synced      []cache.InformerSynced
}

// New builds the controller.
func New(deps ctrlutil.Deps) (*Controller, error) {
	nodes := deps.Informers.Core().V1().Nodes()
	svcs := deps.Informers.Core().V1().Services()
	slicesInf := deps.Informers.Discovery().V1().EndpointSlices()
	c := &Controller{
		client: deps.Client, nodeLister: nodes.Lister(), svcLister: svcs.Lister(), sliceLister: slicesInf.Lister(),
	}
	c.loop = ctrlutil.NewLoop(Name, deps, c.Sync)
	always := func(any) { c.loop.Queue.Add(key) }
	ours := func(o any) {
		if m, ok := ctrlutil.Unwrap[metav1.Object](o); ok && m.GetNamespace() == ServiceNamespace &&
			(m.GetName() == ServiceName || m.GetLabels()[discoveryv1.LabelServiceName] == ServiceName) {
			c.loop.Queue.Add(key)
		}
	}
	var err error
	c.synced, err = ctrlutil.NewWiring(Name).
		Watch(nodes.Informer(), cache.ResourceEventHandlerFuncs{AddFunc: always, UpdateFunc: ctrlutil.OnNodeUpdate(slicesInputsChanged, always), DeleteFunc: always}).
		Watch(svcs.Informer(), ctrlutil.On(ctrlutil.OnAll, ours)).
		Watch(slicesInf.Informer(), ctrlutil.On(ctrlutil.OnAll, ours)).
		Done()
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Run runs workers until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) { c.loop.Run(ctx, workers, c.synced...) }

// Sync makes the kube-dns slices match the nodes (the key is always kube-system/kube-dns).
func (c *Controller) Sync(ctx context.Context, _ string) error {
	svc, err := c.svcLister.Services(ServiceNamespace).Get(ServiceName)
	if apierrors.IsNotFound(err) {
		return nil // the slices go with the Service (owner references)
	}
	if err != nil {
		return fmt.Errorf("get service %s: %w", key, err)
	}
	nodes, err := c.nodeLister.List(labels.Everything())
	if err != nil {
		return fmt.Errorf("list nodes: %w", err)
	}
	existing, err := c.sliceLister.EndpointSlices(ServiceNamespace).List(labels.SelectorFromSet(labels.Set{
		discoveryv1.LabelServiceName: ServiceName, discoveryv1.LabelManagedBy: ManagedBy}))
	if err != nil {
		return fmt.Errorf("list endpointslices of %s: %w", key, err)
	}
	plan := Plan(Desired(svc, nodes, existing), existing)
	slicesAPI := c.client.DiscoveryV1().EndpointSlices(ServiceNamespace)
	for _, s := range plan.Create {
		if _, err := slicesAPI.Create(ctx, s, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create endpointslice %s/%s: %w", ServiceNamespace, s.Name, err)
		}
	}
	for _, s := range plan.Update {
		if _, err := slicesAPI.Update(ctx, s, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("update endpointslice %s/%s: %w", ServiceNamespace, s.Name, err)
		}
	}
	for _, name := range plan.Delete {
		if err := slicesAPI.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete endpointslice %s/%s: %w", ServiceNamespace, name, err)
		}
	}
	return nil
}

// slicesInputsChanged reports whether a node update can change the slices: not a heartbeat, which
// every node writes every few seconds (at 5,000 nodes each one recomputed every slice).
func slicesInputsChanged(o, n *corev1.Node) bool {
	return ServesDNS(o) != ServesDNS(n) || ctrlutil.IsNodeReady(o) != ctrlutil.IsNodeReady(n) ||
		(o.DeletionTimestamp == nil) != (n.DeletionTimestamp == nil) ||
		!apiequality.Semantic.DeepEqual(o.Status.Addresses, n.Status.Addresses)
}

// ServesDNS reports whether a node runs skiff's DNS: worker nodes, which is every node unless its
// role labels say it is only a control-plane or etcd node (or it carries the control-plane
// NoSchedule taint without a worker label).
func ServesDNS(node *corev1.Node) bool {
	if _, ok := node.Labels[roleLabelPrefix+"worker"]; ok {
		return true
	}
	for l := range node.Labels {
		if r, ok := strings.CutPrefix(l, roleLabelPrefix); ok && (r == "control-plane" || r == "controlplane" || r == "master" || r == "etcd") {
			return false
		}
	}
	for _, t := range node.Spec.Taints {
		if t.Key == roleLabelPrefix+"control-plane" && t.Effect == corev1.TaintEffectNoSchedule {
			return false
		}
	}
	return true
}

// MaxEndpointsPerSlice bounds the endpoints of one kube-dns slice, as Kubernetes' EndpointSlice
// controller does by default (the API refuses more than 1,000): with DNS on every node, a large
// cluster has more endpoints than one slice may hold, and a small slice keeps the write and the
// watch event of a node's change small.
const MaxEndpointsPerSlice = 100

// sliceName names a family's slices: kube-dns-ipv4 for the first, kube-dns-ipv4-2, -3, ... after.
func sliceName(t discoveryv1.AddressType, index int) string {
	name := ServiceName + "-" + strings.ToLower(string(t))
	if index > 1 {
		name += "-" + strconv.Itoa(index)
	}
	return name
}

// Desired are the slices the Service should have: per address family that has nodes, one endpoint
// per DNS node at its first InternalIP of that family, at most MaxEndpointsPerSlice per slice.
// A node stays in the existing slice that holds it (so a node joining or leaving rewrites one
// slice, not every slice after it); new nodes fill the slices with room, by node name, then new
// slices. Loopback and unspecified addresses are left out (the API refuses them and no pod can
// reach them).
func Desired(svc *corev1.Service, nodes []*corev1.Node, existing []*discoveryv1.EndpointSlice) []*discoveryv1.EndpointSlice {
	var ports []discoveryv1.EndpointPort
	for _, p := range svc.Spec.Ports {
		port := p.Port
		if p.TargetPort.IntVal != 0 {
			port = p.TargetPort.IntVal
		}
		ports = append(ports, discoveryv1.EndpointPort{Name: ptr.To(p.Name), Protocol: ptr.To(p.Protocol), Port: ptr.To(port)})
	}
	sorted := slices.Clone(nodes)
	slices.SortFunc(sorted, func(a, b *corev1.Node) int { return strings.Compare(a.Name, b.Name) })
	byFamily := map[discoveryv1.AddressType]*familyEndpoints{}
	for _, n := range sorted {
		if !ServesDNS(n) || n.DeletionTimestamp != nil {
			continue
		}
		seen := map[discoveryv1.AddressType]bool{}
		for _, a := range n.Status.Addresses {
			ip, err := netip.ParseAddr(a.Address)
			if a.Type != corev1.NodeInternalIP || err != nil || ip.IsLoopback() || ip.IsUnspecified() {
				continue
			}
			family := discoveryv1.AddressTypeIPv4
			if !ip.Unmap().Is4() {
				family = discoveryv1.AddressTypeIPv6
			}
			if seen[family] {
				continue
			}
			seen[family] = true
			ready := ctrlutil.IsNodeReady(n)
			fe := byFamily[family]
			if fe == nil {
				fe = &familyEndpoints{byNode: map[string]discoveryv1.Endpoint{}}
				byFamily[family] = fe
			}
			fe.order = append(fe.order, n.Name)
			fe.byNode[n.Name] = discoveryv1.Endpoint{
				Addresses:  []string{ip.Unmap().String()},
				Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(ready), Serving: ptr.To(ready), Terminating: ptr.To(false)},
				NodeName:   ptr.To(n.Name),
			}
		}
	}
	var out []*discoveryv1.EndpointSlice
	for _, family := range []discoveryv1.AddressType{discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6} {
		fe, ok := byFamily[family]
		if !ok {
			continue
		}
		for _, p := range pack(family, fe, existing) {
			out = append(out, &discoveryv1.EndpointSlice{
				ObjectMeta: metav1.ObjectMeta{
					Name: p.name, Namespace: svc.Namespace,
					Labels: map[string]string{discoveryv1.LabelServiceName: svc.Name, discoveryv1.LabelManagedBy: ManagedBy},
					OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: svc.Name, UID: svc.UID,
						Controller: ptr.To(true)}},
				},
				AddressType: family,
				Endpoints:   p.endpoints,
				Ports:       ports,
			})
		}
	}
	return out
}

// familyEndpoints are one address family's endpoints by node, and the nodes in name order.
type familyEndpoints struct {
	order  []string
	byNode map[string]discoveryv1.Endpoint
}

type packedSlice struct {
	name      string
	endpoints []discoveryv1.Endpoint
}

// pack places a family's endpoints into slices: each node where an existing slice of the family
// (by name, in name order) already has it, the rest into those with room, then into new slices
// named by the lowest free index. Slices left empty are not returned.
func pack(family discoveryv1.AddressType, fe *familyEndpoints, existing []*discoveryv1.EndpointSlice) []packedSlice {
	var mine []*discoveryv1.EndpointSlice
	for _, s := range existing {
		if s.AddressType == family {
			mine = append(mine, s)
		}
	}
	slices.SortFunc(mine, func(a, b *discoveryv1.EndpointSlice) int { return strings.Compare(a.Name, b.Name) })
	placed := map[string]bool{}
	var out []packedSlice
	taken := map[string]bool{}
	for _, s := range mine {
		p := packedSlice{name: s.Name}
		taken[s.Name] = true
		for _, ep := range s.Endpoints {
			if ep.NodeName == nil || placed[*ep.NodeName] || len(p.endpoints) >= MaxEndpointsPerSlice {
				continue
			}
			if want, ok := fe.byNode[*ep.NodeName]; ok {
				placed[*ep.NodeName] = true
				p.endpoints = append(p.endpoints, want)
			}
		}
		out = append(out, p)
	}
	next := 1
	for _, node := range fe.order {
		if placed[node] {
			continue
		}
		i := slices.IndexFunc(out, func(p packedSlice) bool { return len(p.endpoints) < MaxEndpointsPerSlice })
		if i < 0 {
			for taken[sliceName(family, next)] {
				next++
			}
			taken[sliceName(family, next)] = true
			out = append(out, packedSlice{name: sliceName(family, next)})
			i = len(out) - 1
		}
		out[i].endpoints = append(out[i].endpoints, fe.byNode[node])
		placed[node] = true
	}
	return slices.DeleteFunc(out, func(p packedSlice) bool { return len(p.endpoints) == 0 })
}

// Changes are the writes that turn the existing slices into the desired ones.
type Changes struct {
	Create, Update []*discoveryv1.EndpointSlice
	Delete         []string
}

// Plan compares desired with existing slices by name: missing ones are created, differing ones
// updated (on a copy of the existing object, so the update carries its resourceVersion), and
// existing ones no longer desired deleted.
func Plan(desired, existing []*discoveryv1.EndpointSlice) Changes {
	var ch Changes
	have := map[string]*discoveryv1.EndpointSlice{}
	for _, s := range existing {
		have[s.Name] = s
	}
	want := map[string]bool{}
	for _, d := range desired {
		want[d.Name] = true
		cur, ok := have[d.Name]
		switch {
		case !ok:
			ch.Create = append(ch.Create, d)
		case cur.AddressType != d.AddressType:
			// The address type is immutable: replace the slice.
			ch.Delete = append(ch.Delete, cur.Name)
			ch.Create = append(ch.Create, d)
		case !apiequality.Semantic.DeepEqual(cur.Endpoints, d.Endpoints) || !apiequality.Semantic.DeepEqual(cur.Ports, d.Ports) ||
			!labelsHave(cur.Labels, d.Labels) || !apiequality.Semantic.DeepEqual(cur.OwnerReferences, d.OwnerReferences):
			next := cur.DeepCopy()
			next.Endpoints, next.Ports, next.OwnerReferences = d.Endpoints, d.Ports, d.OwnerReferences
			if next.Labels == nil {
				next.Labels = map[string]string{}
			}
			for k, v := range d.Labels {
				next.Labels[k] = v
			}
			ch.Update = append(ch.Update, next)
		}
	}
	for _, s := range existing {
		if !want[s.Name] {
			ch.Delete = append(ch.Delete, s.Name)
		}
	}
	slices.Sort(ch.Delete)
	return ch
}

func labelsHave(have, want map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}
