package podnet

import (
	"net/netip"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

type nodeBuilder struct{ n *corev1.Node }

func node(name string) nodeBuilder {
	return nodeBuilder{&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}}
}

func (b nodeBuilder) cidr(c ...string) nodeBuilder {
	b.n.Spec.PodCIDR = c[0]
	b.n.Spec.PodCIDRs = c
	return b
}

func (b nodeBuilder) ip(a string) nodeBuilder {
	b.n.Status.Addresses = append(b.n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: a})
	return b
}

func (b nodeBuilder) deleting() nodeBuilder {
	b.n.DeletionTimestamp = &metav1.Time{}
	return b
}

func (b nodeBuilder) obj() *corev1.Node { return b.n }

func p(s string) netip.Prefix { return netip.MustParsePrefix(s) }
func a(s string) netip.Addr   { return netip.MustParseAddr(s) }

func TestDesire(t *testing.T) {
	lan := []netip.Prefix{p("172.31.5.0/24")}
	tests := []struct {
		name    string
		nodes   []*corev1.Node
		onLink  []netip.Prefix
		routes  []Route
		own     []netip.Prefix
		skipped []string
	}{
		{name: "alone: nothing to route", nodes: []*corev1.Node{node("a").cidr("10.42.0.0/24").ip("172.31.5.2").obj()}, onLink: lan,
			own: []netip.Prefix{p("10.42.0.0/24")}},
		{name: "every other node via its address, sorted by node",
			nodes: []*corev1.Node{
				node("c").cidr("10.42.2.0/24").ip("172.31.5.4").obj(),
				node("a").cidr("10.42.0.0/24").ip("172.31.5.2").obj(),
				node("b").cidr("10.42.1.0/24").ip("172.31.5.3").obj(),
			}, onLink: lan,
			routes: []Route{{p("10.42.1.0/24"), a("172.31.5.3"), "b"}, {p("10.42.2.0/24"), a("172.31.5.4"), "c"}},
			own:    []netip.Prefix{p("10.42.0.0/24")}},
		{name: "a node without podCIDR yet is waited for, silently",
			nodes: []*corev1.Node{node("a").cidr("10.42.0.0/24").ip("172.31.5.2").obj(), node("b").ip("172.31.5.3").obj()}, onLink: lan,
			own: []netip.Prefix{p("10.42.0.0/24")}},
		{name: "a deleting node loses its route",
			nodes: []*corev1.Node{node("a").cidr("10.42.0.0/24").ip("172.31.5.2").obj(), node("b").cidr("10.42.1.0/24").ip("172.31.5.3").deleting().obj()}, onLink: lan,
			own: []netip.Prefix{p("10.42.0.0/24")}},
		{name: "other L2 segment, loopback, no address: skipped",
			nodes: []*corev1.Node{
				node("a").cidr("10.42.0.0/24").ip("172.31.5.2").obj(),
				node("far").cidr("10.42.1.0/24").ip("192.168.77.3").obj(),
				node("lo").cidr("10.42.2.0/24").ip("127.0.0.2").obj(),
				node("none").cidr("10.42.3.0/24").obj(),
			}, onLink: lan,
			own: []netip.Prefix{p("10.42.0.0/24")}, skipped: []string{"far", "lo", "none"}},
		{name: "overlaps: own range, a host subnet, another node's",
			nodes: []*corev1.Node{
				node("a").cidr("10.42.0.0/24").ip("172.31.5.2").obj(),
				node("b").cidr("10.42.0.0/16").ip("172.31.5.3").obj(),
				node("c").cidr("172.31.5.0/25").ip("172.31.5.4").obj(),
				node("d").cidr("10.42.1.0/24").ip("172.31.5.5").obj(),
				node("e").cidr("10.42.1.128/25").ip("172.31.5.6").obj(),
			}, onLink: lan,
			routes: []Route{{p("10.42.1.0/24"), a("172.31.5.5"), "d"}},
			own:    []netip.Prefix{p("10.42.0.0/24")}, skipped: []string{"b", "c", "e"}},
		{name: "IPv6 ranges and addresses are ignored",
			nodes: []*corev1.Node{node("a").cidr("10.42.0.0/24", "fd00::/64").ip("172.31.5.2").obj(), node("b").cidr("fd00:1::/64").ip("fd00::3").obj()}, onLink: lan,
			own: []netip.Prefix{p("10.42.0.0/24")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Desire(Input{Self: "a", Nodes: tt.nodes, OnLink: tt.onLink})
			if !reflect.DeepEqual(d.Routes, tt.routes) {
				t.Errorf("routes = %v, want %v", d.Routes, tt.routes)
			}
			if !reflect.DeepEqual(d.OwnPods, tt.own) {
				t.Errorf("own = %v, want %v", d.OwnPods, tt.own)
			}
			var skipped []string
			for _, s := range d.Skipped {
				skipped = append(skipped, s.Node)
				if s.Reason == "" {
					t.Errorf("skipped %s without a reason", s.Node)
				}
			}
			if !reflect.DeepEqual(skipped, tt.skipped) {
				t.Errorf("skipped = %v, want %v", skipped, tt.skipped)
			}
		})
	}
}

func TestPlan(t *testing.T) {
	r := func(dst, gw string) Route { return Route{Dst: p(dst), Gw: a(gw)} }
	tests := []struct {
		name          string
		want, present []Route
		replace, del  []Route
	}{
		{name: "empty"},
		{name: "new routes", want: []Route{r("10.42.1.0/24", "172.31.5.3")}, replace: []Route{r("10.42.1.0/24", "172.31.5.3")}},
		{name: "in place: nothing", want: []Route{r("10.42.1.0/24", "172.31.5.3")}, present: []Route{r("10.42.1.0/24", "172.31.5.3")}},
		{name: "node moved: replaced, not deleted", want: []Route{r("10.42.1.0/24", "172.31.5.9")}, present: []Route{r("10.42.1.0/24", "172.31.5.3")},
			replace: []Route{r("10.42.1.0/24", "172.31.5.9")}},
		{name: "node gone: its route deleted", want: []Route{r("10.42.1.0/24", "172.31.5.3")},
			present: []Route{r("10.42.1.0/24", "172.31.5.3"), r("10.42.2.0/24", "172.31.5.4")}, del: []Route{r("10.42.2.0/24", "172.31.5.4")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			replace, del := Plan(tt.want, tt.present)
			if !reflect.DeepEqual(replace, tt.replace) || !reflect.DeepEqual(del, tt.del) {
				t.Errorf("Plan = %v, %v; want %v, %v", replace, del, tt.replace, tt.del)
			}
		})
	}
}

func TestMasqueradeRules(t *testing.T) {
	got := MasqueradeRules("SNabc", []netip.Prefix{p("10.42.1.0/24")}, p("10.42.0.0/16"))
	want := [][]string{
		{"-A", "SNabc", "-s", "10.42.1.0/24", "-d", "10.42.0.0/16", "-m", "comment", "--comment", "pod to pod: no NAT", "-j", "RETURN"},
		{"-A", "SNabc", "-s", "10.42.1.0/24", "-d", "10.42.1.0/24", "-j", "RETURN"},
		{"-A", "SNabc", "-s", "10.42.1.0/24", "-d", "224.0.0.0/4", "-j", "RETURN"},
		{"-A", "SNabc", "-s", "10.42.1.0/24", "-m", "comment", "--comment", "pods leaving the cluster", "-j", "MASQUERADE"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("rules:\n%v\nwant\n%v", got, want)
	}
	if got := MasqueradeRules("SNabc", nil, p("10.42.0.0/16")); len(got) != 0 {
		t.Errorf("no pod range yet: %v", got)
	}
}
