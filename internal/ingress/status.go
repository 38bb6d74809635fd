package ingress

import (
	"net/netip"
	"sort"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodeLabel, "true", marks the nodes that run the data plane; the node that runs it sets it
// (and removes it when its ports are turned off).
const NodeLabel = "node.skiff.sh/ingress"

// LoadBalancerStatus is the status.loadBalancer of every Ingress skiff serves: the addresses of
// the nodes that run the data plane (NodeLabel), as the local cloud provider gives
// LoadBalancer Services the nodes' addresses. A node's ExternalIPs are preferred to its
// InternalIPs; a node being deleted is left out.
func LoadBalancerStatus(nodes []*corev1.Node) networkingv1.IngressLoadBalancerStatus {
	seen := map[netip.Addr]bool{}
	var addrs []netip.Addr
	for _, n := range nodes {
		if n.Labels[NodeLabel] != "true" || n.DeletionTimestamp != nil {
			continue
		}
		for _, a := range nodeAddresses(n) {
			if !seen[a] {
				seen[a] = true
				addrs = append(addrs, a)
			}
		}
	}
	sort.Slice(addrs, func(i, j int) bool { return addrs[i].Less(addrs[j]) })
	var st networkingv1.IngressLoadBalancerStatus
	for _, a := range addrs {
		st.Ingress = append(st.Ingress, networkingv1.IngressLoadBalancerIngress{IP: a.String()})
	}
	return st
}

func nodeAddresses(n *corev1.Node) []netip.Addr {
	for _, t := range []corev1.NodeAddressType{corev1.NodeExternalIP, corev1.NodeInternalIP} {
		var out []netip.Addr
		for _, a := range n.Status.Addresses {
			if ip, err := netip.ParseAddr(a.Address); a.Type == t && err == nil {
				out = append(out, ip)
			}
		}
		if len(out) > 0 {
			return out
		}
	}
	return nil
}

// statusEqual compares load-balancer statuses as the list of addresses they give.
func statusEqual(a, b networkingv1.IngressLoadBalancerStatus) bool {
	if len(a.Ingress) != len(b.Ingress) {
		return false
	}
	for i := range a.Ingress {
		if a.Ingress[i].IP != b.Ingress[i].IP || a.Ingress[i].Hostname != b.Ingress[i].Hostname || len(a.Ingress[i].Ports) != len(b.Ingress[i].Ports) {
			return false
		}
	}
	return true
}

// StatusUpdate is one Ingress whose status.loadBalancer must change, and to what.
type StatusUpdate struct {
	Ingress *networkingv1.Ingress
	Status  networkingv1.IngressLoadBalancerStatus
}

// PlanStatus says which Ingresses' status.loadBalancer to write: the served ones whose status
// differs from the nodes' addresses. Ingresses skiff does not serve are left alone (another
// controller may own their status).
func PlanStatus(ings []*networkingv1.Ingress, classes []*networkingv1.IngressClass, nodes []*corev1.Node) []StatusUpdate {
	want := LoadBalancerStatus(nodes)
	var out []StatusUpdate
	for _, ing := range ings {
		if ing.DeletionTimestamp != nil || !Served(ing, classes) || statusEqual(ing.Status.LoadBalancer, want) {
			continue
		}
		out = append(out, StatusUpdate{Ingress: ing, Status: want})
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].Ingress.Namespace+"/"+out[i].Ingress.Name < out[j].Ingress.Namespace+"/"+out[j].Ingress.Name
	})
	return out
}

// PlanClass returns the IngressClass `skiff` to create, or nil when a class of that name exists
// (whatever an administrator made of it is kept). It is the cluster's default only when no other
// class is.
func PlanClass(classes []*networkingv1.IngressClass) *networkingv1.IngressClass {
	for _, c := range classes {
		if c.Name == ClassName {
			return nil
		}
	}
	c := &networkingv1.IngressClass{
		ObjectMeta: metav1.ObjectMeta{Name: ClassName, Labels: map[string]string{"app.kubernetes.io/managed-by": "skiff"}},
		Spec:       networkingv1.IngressClassSpec{Controller: ControllerName},
	}
	for _, o := range classes {
		if o.Annotations[DefaultClassAnnotation] == "true" {
			return c
		}
	}
	c.Annotations = map[string]string{DefaultClassAnnotation: "true"}
	return c
}
