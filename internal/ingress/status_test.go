package ingress

import (
	"log/slog"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func node(name string, worker bool, addrs ...corev1.NodeAddress) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}}, Status: corev1.NodeStatus{Addresses: addrs}}
	if worker {
		n.Labels[NodeLabel] = "true"
	}
	return n
}

func internal(ip string) corev1.NodeAddress {
	return corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: ip}
}

func TestLoadBalancerStatus(t *testing.T) {
	deleted := node("gone", true, internal("10.0.0.9"))
	deleted.DeletionTimestamp = ptr.To(metav1.Now())
	nodes := []*corev1.Node{
		node("b", true, internal("10.0.0.2"), corev1.NodeAddress{Type: corev1.NodeHostName, Address: "b"}),
		node("a", true, internal("10.0.0.1")),
		node("cp", false, internal("10.0.0.3")),
		node("ext", true, internal("10.0.0.4"), corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: "192.0.2.4"}),
		deleted,
	}
	got := LoadBalancerStatus(nodes)
	var ips []string
	for _, i := range got.Ingress {
		ips = append(ips, i.IP)
	}
	if want := []string{"10.0.0.1", "10.0.0.2", "192.0.2.4"}; !reflect.DeepEqual(ips, want) {
		t.Fatalf("addresses = %v, want %v", ips, want)
	}
}

func TestPlanStatus(t *testing.T) {
	classes := []*networkingv1.IngressClass{class(ClassName, ControllerName, true), class("nginx", "k8s.io/ingress-nginx", false)}
	nodes := []*corev1.Node{node("a", true, internal("10.0.0.1"))}
	current := newIngress("current").Obj()
	current.Status.LoadBalancer.Ingress = []networkingv1.IngressLoadBalancerIngress{{IP: "10.0.0.1"}}
	stale := newIngress("stale").Obj()
	stale.Status.LoadBalancer.Ingress = []networkingv1.IngressLoadBalancerIngress{{IP: "10.9.9.9"}}
	plan := PlanStatus([]*networkingv1.Ingress{newIngress("new").Obj(), current, stale, newIngress("nginx").Class("nginx").Obj()}, classes, nodes)
	var names []string
	for _, u := range plan {
		names = append(names, u.Ingress.Name)
		if len(u.Status.Ingress) != 1 || u.Status.Ingress[0].IP != "10.0.0.1" {
			t.Errorf("%s: status %v", u.Ingress.Name, u.Status)
		}
	}
	if want := []string{"new", "stale"}; !reflect.DeepEqual(names, want) {
		t.Fatalf("updates = %v, want %v", names, want)
	}
}

func TestPlanClass(t *testing.T) {
	if c := PlanClass(nil); c == nil || c.Name != ClassName || c.Spec.Controller != ControllerName || c.Annotations[DefaultClassAnnotation] != "true" {
		t.Fatalf("no classes: %+v, want the default class skiff", c)
	}
	if c := PlanClass([]*networkingv1.IngressClass{class("nginx", "k8s.io/ingress-nginx", false)}); c == nil || c.Annotations[DefaultClassAnnotation] != "true" {
		t.Fatalf("another class, not default: %+v, want skiff as the default", c)
	}
	if c := PlanClass([]*networkingv1.IngressClass{class("nginx", "k8s.io/ingress-nginx", true)}); c == nil || c.Annotations[DefaultClassAnnotation] == "true" {
		t.Fatalf("another default class: %+v, want skiff not default", c)
	}
	if c := PlanClass([]*networkingv1.IngressClass{class(ClassName, "someone/else", false)}); c != nil {
		t.Fatalf("skiff exists: %+v, want nothing created", c)
	}
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }
