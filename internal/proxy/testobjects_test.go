package proxy

import (
	"fmt"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// svcBuilder builds test Services: makeSvc("web", "10.96.0.10").port("http", 80, tcp).obj().
type svcBuilder struct{ s *corev1.Service }

func makeSvc(name, clusterIP string) svcBuilder {
	return svcBuilder{&corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: clusterIP},
	}}
}

func (b svcBuilder) port(name string, port int32, proto corev1.Protocol) svcBuilder {
	b.s.Spec.Ports = append(b.s.Spec.Ports, corev1.ServicePort{Name: name, Port: port, Protocol: proto, TargetPort: intstr.FromInt32(8080)})
	return b
}

func (b svcBuilder) nodePort(np int32) svcBuilder {
	b.s.Spec.Type = corev1.ServiceTypeNodePort
	b.s.Spec.Ports[len(b.s.Spec.Ports)-1].NodePort = np
	return b
}

func (b svcBuilder) affinity() svcBuilder {
	b.s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
	return b
}

func (b svcBuilder) itpLocal() svcBuilder {
	b.s.Spec.InternalTrafficPolicy = ptr.To(corev1.ServiceInternalTrafficPolicyLocal)
	return b
}

func (b svcBuilder) etpLocal() svcBuilder {
	b.s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
	return b
}

func (b svcBuilder) externalIP(ip string) svcBuilder {
	b.s.Spec.ExternalIPs = append(b.s.Spec.ExternalIPs, ip)
	return b
}

func (b svcBuilder) lbIngress(ip string) svcBuilder {
	b.s.Spec.Type = corev1.ServiceTypeLoadBalancer
	b.s.Status.LoadBalancer.Ingress = append(b.s.Status.LoadBalancer.Ingress, corev1.LoadBalancerIngress{IP: ip})
	return b
}

func (b svcBuilder) sourceRanges(r ...string) svcBuilder {
	b.s.Spec.LoadBalancerSourceRanges = append(b.s.Spec.LoadBalancerSourceRanges, r...)
	return b
}

func (b svcBuilder) annotateSourceRanges(v string) svcBuilder {
	b.s.Annotations = map[string]string{corev1.AnnotationLoadBalancerSourceRangesKey: v}
	return b
}

func (b svcBuilder) obj() *corev1.Service { return b.s }

// ep is one test endpoint: address, node, and conditions.
type ep struct {
	ip, node                    string
	ready, serving, terminating bool
}

func readyEp(ip, node string) ep { return ep{ip: ip, node: node, ready: true, serving: true} }

func makeSlice(svc, name string, port int32, proto corev1.Protocol, eps ...ep) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: fmt.Sprintf("%s-%s", svc, name), Namespace: "ns", Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To(name), Port: ptr.To(port), Protocol: ptr.To(proto)}},
	}
	for _, e := range eps {
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{
			Addresses: []string{e.ip}, NodeName: ptr.To(e.node),
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(e.ready), Serving: ptr.To(e.serving), Terminating: ptr.To(e.terminating)},
		})
	}
	return s
}

func testConfig() Config {
	return Config{
		Prefix: "SKTEST01", NodeName: "node-a",
		ClusterCIDR: netip.MustParsePrefix("10.244.0.0/16"), ServiceCIDR: netip.MustParsePrefix("10.96.0.0/24"),
	}
}

func netipPrefix(s string) netip.Prefix { return netip.MustParsePrefix(s) }
