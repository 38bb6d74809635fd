package netpol

import (
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// podBuilder makes test pods: MakePod("ns", "name").Node("n1").IP("10.0.0.1").Labels(...).Obj().
type podBuilder struct{ p *corev1.Pod }

func MakePod(ns, name string) *podBuilder {
	return &podBuilder{p: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}}
}

func (b *podBuilder) Node(n string) *podBuilder { b.p.Spec.NodeName = n; return b }
func (b *podBuilder) IP(ip string) *podBuilder {
	b.p.Status.PodIP = ip
	b.p.Status.PodIPs = []corev1.PodIP{{IP: ip}}
	return b
}
func (b *podBuilder) Label(k, v string) *podBuilder { b.p.Labels[k] = v; return b }
func (b *podBuilder) HostNetwork() *podBuilder      { b.p.Spec.HostNetwork = true; return b }
func (b *podBuilder) Phase(p corev1.PodPhase) *podBuilder {
	b.p.Status.Phase = p
	return b
}
func (b *podBuilder) Port(name string, port int32, proto corev1.Protocol) *podBuilder {
	if len(b.p.Spec.Containers) == 0 {
		b.p.Spec.Containers = []corev1.Container{{Name: "c"}}
	}
	b.p.Spec.Containers[0].Ports = append(b.p.Spec.Containers[0].Ports, corev1.ContainerPort{Name: name, ContainerPort: port, Protocol: proto})
	return b
}
func (b *podBuilder) SidecarPort(name string, port int32) *podBuilder {
	b.p.Spec.InitContainers = append(b.p.Spec.InitContainers, corev1.Container{Name: "side", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways),
		Ports: []corev1.ContainerPort{{Name: name, ContainerPort: port}}})
	return b
}
func (b *podBuilder) Obj() *corev1.Pod { return b.p }

func ns(name string, labels map[string]string) *corev1.Namespace {
	if labels == nil {
		labels = map[string]string{}
	}
	labels["kubernetes.io/metadata.name"] = name
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

// policyBuilder makes test policies.
type policyBuilder struct{ np *networkingv1.NetworkPolicy }

func MakePolicy(ns, name string) *policyBuilder {
	return &policyBuilder{np: &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}}
}

func (b *policyBuilder) Select(k, v string) *policyBuilder {
	b.np.Spec.PodSelector = metav1.LabelSelector{MatchLabels: map[string]string{k: v}}
	return b
}
func (b *policyBuilder) Types(ts ...networkingv1.PolicyType) *policyBuilder {
	b.np.Spec.PolicyTypes = ts
	return b
}
func (b *policyBuilder) Ingress(peers []networkingv1.NetworkPolicyPeer, ports ...networkingv1.NetworkPolicyPort) *policyBuilder {
	b.np.Spec.Ingress = append(b.np.Spec.Ingress, networkingv1.NetworkPolicyIngressRule{From: peers, Ports: ports})
	return b
}
func (b *policyBuilder) Egress(peers []networkingv1.NetworkPolicyPeer, ports ...networkingv1.NetworkPolicyPort) *policyBuilder {
	b.np.Spec.Egress = append(b.np.Spec.Egress, networkingv1.NetworkPolicyEgressRule{To: peers, Ports: ports})
	return b
}
func (b *policyBuilder) Obj() *networkingv1.NetworkPolicy { return b.np }

func podPeer(k, v string) networkingv1.NetworkPolicyPeer {
	return networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{k: v}}}
}
func nsPeer(k, v string) networkingv1.NetworkPolicyPeer {
	return networkingv1.NetworkPolicyPeer{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{k: v}}}
}
func ipPeer(cidr string, except ...string) networkingv1.NetworkPolicyPeer {
	return networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: cidr, Except: except}}
}
func tcp(port int) networkingv1.NetworkPolicyPort {
	return networkingv1.NetworkPolicyPort{Port: ptr.To(intstr.FromInt32(int32(port)))}
}
func portOf(proto corev1.Protocol, port intstr.IntOrString, end int32) networkingv1.NetworkPolicyPort {
	p := networkingv1.NetworkPolicyPort{Protocol: &proto, Port: &port}
	if end != 0 {
		p.EndPort = &end
	}
	return p
}
func named(name string) networkingv1.NetworkPolicyPort {
	return networkingv1.NetworkPolicyPort{Port: ptr.To(intstr.FromString(name))}
}
