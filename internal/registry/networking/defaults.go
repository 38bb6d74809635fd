package networking

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

// RegisterDefaults registers the networking.k8s.io/v1 defaulting functions on s.
func RegisterDefaults(s *runtime.Scheme) error {
	if s == nil {
		return fmt.Errorf("register networking.k8s.io/v1 defaults: nil scheme")
	}
	s.AddTypeDefaultingFunc(&networkingv1.NetworkPolicy{}, func(o any) { DefaultNetworkPolicy(o.(*networkingv1.NetworkPolicy)) })
	s.AddTypeDefaultingFunc(&networkingv1.NetworkPolicyList{}, func(o any) {
		l := o.(*networkingv1.NetworkPolicyList)
		for i := range l.Items {
			DefaultNetworkPolicy(&l.Items[i])
		}
	})
	s.AddTypeDefaultingFunc(&networkingv1.IngressClass{}, func(o any) { DefaultIngressClass(o.(*networkingv1.IngressClass)) })
	s.AddTypeDefaultingFunc(&networkingv1.IngressClassList{}, func(o any) {
		l := o.(*networkingv1.IngressClassList)
		for i := range l.Items {
			DefaultIngressClass(&l.Items[i])
		}
	})
	return nil
}

// DefaultNetworkPolicy sets TCP on ports without a protocol and, without policyTypes, Ingress
// always and Egress when egress rules are given, as Kubernetes does.
func DefaultNetworkPolicy(np *networkingv1.NetworkPolicy) {
	for i := range np.Spec.Ingress {
		defaultPorts(np.Spec.Ingress[i].Ports)
	}
	for i := range np.Spec.Egress {
		defaultPorts(np.Spec.Egress[i].Ports)
	}
	if len(np.Spec.PolicyTypes) == 0 {
		np.Spec.PolicyTypes = []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}
		if len(np.Spec.Egress) != 0 {
			np.Spec.PolicyTypes = append(np.Spec.PolicyTypes, networkingv1.PolicyTypeEgress)
		}
	}
}

func defaultPorts(ports []networkingv1.NetworkPolicyPort) {
	for i := range ports {
		if ports[i].Protocol == nil {
			ports[i].Protocol = ptr.To(corev1.ProtocolTCP)
		}
	}
}

// DefaultIngressClass scopes parameters without a scope to the cluster.
func DefaultIngressClass(ic *networkingv1.IngressClass) {
	if ic.Spec.Parameters != nil && ic.Spec.Parameters.Scope == nil {
		ic.Spec.Parameters.Scope = ptr.To(networkingv1.IngressClassParametersReferenceScopeCluster)
	}
}
