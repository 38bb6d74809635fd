package gateway

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/skiff-sh/skiff/internal/cloudprovider/local"
	"github.com/skiff-sh/skiff/internal/ingress"
)

func TestParsePool(t *testing.T) {
	cases := []struct {
		in       string
		in4, out []string
		err      string
	}{
		{in: "10.0.0.64/30", in4: []string{"10.0.0.65", "10.0.0.66"}, out: []string{"10.0.0.64", "10.0.0.67", "10.0.0.68"}},
		{in: "10.0.0.7/31", in4: []string{"10.0.0.6", "10.0.0.7"}, out: []string{"10.0.0.5", "10.0.0.8"}},
		{in: "10.0.0.200-10.0.0.202, 10.0.1.9", in4: []string{"10.0.0.200", "10.0.0.202", "10.0.1.9"}, out: []string{"10.0.0.199", "10.0.0.203", "10.0.1.8"}},
		{in: "10.0.0.9\n10.0.0.11", in4: []string{"10.0.0.9", "10.0.0.11"}, out: []string{"10.0.0.10"}},
		{in: "", err: "no addresses"},
		{in: "10.0.0.9-10.0.0.1", err: "ends before it starts"},
		{in: "fd00::1-fd00::9", err: "only IPv4"},
		{in: "10.0.0.300", err: "10.0.0.300"},
		{in: "10.0.0.0/33", err: "10.0.0.0/33"},
	}
	for _, c := range cases {
		p, err := ParsePool(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("ParsePool(%q) error %v, want one naming %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParsePool(%q): %v", c.in, err)
			continue
		}
		for _, a := range c.in4 {
			if !p.Contains(netip.MustParseAddr(a)) {
				t.Errorf("ParsePool(%q) does not contain %s", c.in, a)
			}
		}
		for _, a := range c.out {
			if p.Contains(netip.MustParseAddr(a)) {
				t.Errorf("ParsePool(%q) contains %s", c.in, a)
			}
		}
	}
}

func pooled(ns, name string, age int, opts ...func(*gatewayv1.Gateway)) *gatewayv1.Gateway {
	gw := makeGateway(ns, name).listener("http", 80, gatewayv1.HTTPProtocolType).obj()
	gw.CreationTimestamp = metav1.NewTime(now.Add(time.Duration(age) * time.Minute))
	for _, o := range opts {
		o(gw)
	}
	return gw
}

func asks(value string, typ gatewayv1.AddressType) func(*gatewayv1.Gateway) {
	return func(gw *gatewayv1.Gateway) {
		gw.Spec.Addresses = append(gw.Spec.Addresses, gatewayv1.GatewaySpecAddress{Type: &typ, Value: value})
	}
}

func holds(value string) func(*gatewayv1.Gateway) {
	return func(gw *gatewayv1.Gateway) {
		gw.Status.Addresses = []gatewayv1.GatewayStatusAddress{{Type: ptrTo(gatewayv1.IPAddressType), Value: value}}
	}
}

func TestAssignAddresses(t *testing.T) {
	pool, err := ParsePool("10.0.0.10-10.0.0.12")
	if err != nil {
		t.Fatal(err)
	}
	ip := gatewayv1.IPAddressType
	type want struct{ addr, reason string }
	cases := []struct {
		name     string
		pools    map[string]PoolState
		gateways []*gatewayv1.Gateway
		want     map[string]want
	}{{
		name:     "the lowest free address, oldest first",
		pools:    map[string]PoolState{ClassName: {Pool: pool}},
		gateways: []*gatewayv1.Gateway{pooled("a", "young", 2), pooled("b", "old", 1)},
		want:     map[string]want{"b/old": {addr: "10.0.0.10"}, "a/young": {addr: "10.0.0.11"}},
	}, {
		name:     "an address in the status is kept, also by a younger Gateway",
		pools:    map[string]PoolState{ClassName: {Pool: pool}},
		gateways: []*gatewayv1.Gateway{pooled("a", "old", 1), pooled("a", "young", 2, holds("10.0.0.10"))},
		want:     map[string]want{"a/old": {addr: "10.0.0.11"}, "a/young": {addr: "10.0.0.10"}},
	}, {
		name:     "a status address outside the pool (a changed pool) is replaced",
		pools:    map[string]PoolState{ClassName: {Pool: pool}},
		gateways: []*gatewayv1.Gateway{pooled("a", "moved", 1, holds("10.0.9.9"))},
		want:     map[string]want{"a/moved": {addr: "10.0.0.10"}},
	}, {
		name:  "spec.addresses: asked for, taken by an older one, outside the pool, another type, two, any",
		pools: map[string]PoolState{ClassName: {Pool: pool}},
		gateways: []*gatewayv1.Gateway{
			pooled("a", "asks", 1, asks("10.0.0.12", ip)),
			pooled("a", "late", 2, asks("10.0.0.12", ip)),
			pooled("a", "outside", 3, asks("10.0.0.99", ip)),
			pooled("a", "hostname", 4, asks("gw.example.com", gatewayv1.HostnameAddressType)),
			pooled("a", "two", 5, asks("10.0.0.10", ip), asks("10.0.0.11", ip)),
			pooled("a", "any", 6, asks("", ip)),
		},
		want: map[string]want{
			"a/asks":     {addr: "10.0.0.12"},
			"a/late":     {reason: string(gatewayv1.GatewayReasonAddressNotUsable)},
			"a/outside":  {reason: string(gatewayv1.GatewayReasonAddressNotUsable)},
			"a/hostname": {reason: string(gatewayv1.GatewayReasonUnsupportedAddress)},
			"a/two":      {addr: "10.0.0.10,10.0.0.11"},
			"a/any":      {reason: string(gatewayv1.GatewayReasonAddressNotAssigned)},
		},
	}, {
		name:  "an unusable address among usable ones, and an unsupported type among IPs",
		pools: map[string]PoolState{ClassName: {Pool: pool}},
		gateways: []*gatewayv1.Gateway{
			pooled("a", "mixed", 1, asks("10.0.0.99", ip), asks("10.0.0.11", ip)),
			pooled("a", "typed", 2, asks("x", "test/fake-invalid-type"), asks("10.0.0.12", ip)),
			pooled("a", "any-and-one", 3, asks("", ip), asks("10.0.0.12", ip), holds("10.0.0.11")),
		},
		want: map[string]want{
			"a/mixed":       {reason: string(gatewayv1.GatewayReasonAddressNotUsable)},
			"a/typed":       {reason: string(gatewayv1.GatewayReasonUnsupportedAddress)},
			"a/any-and-one": {addr: "10.0.0.11,10.0.0.12"},
		},
	}, {
		name:     "an exhausted pool",
		pools:    map[string]PoolState{ClassName: {Pool: pool}},
		gateways: []*gatewayv1.Gateway{pooled("a", "1", 1), pooled("a", "2", 2), pooled("a", "3", 3), pooled("a", "4", 4)},
		want: map[string]want{"a/1": {addr: "10.0.0.10"}, "a/2": {addr: "10.0.0.11"}, "a/3": {addr: "10.0.0.12"},
			"a/4": {reason: string(gatewayv1.GatewayReasonAddressNotAssigned)}},
	}, {
		name:     "invalid parameters assign nothing",
		pools:    map[string]PoolState{ClassName: {Err: fmt.Errorf("ConfigMap x/y not found")}},
		gateways: []*gatewayv1.Gateway{pooled("a", "1", 1)},
		want:     map[string]want{"a/1": {reason: string(gatewayv1.GatewayReasonAddressNotAssigned)}},
	}, {
		name:     "a node follows the controller's status",
		pools:    map[string]PoolState{ClassName: {Follow: true}},
		gateways: []*gatewayv1.Gateway{pooled("a", "written", 1, holds("10.0.0.12")), pooled("a", "new", 2)},
		want:     map[string]want{"a/written": {addr: "10.0.0.12"}, "a/new": {reason: string(gatewayv1.GatewayReasonAddressNotAssigned)}},
	}, {
		name:     "a class without a pool",
		gateways: []*gatewayv1.Gateway{pooled("a", "1", 1)},
		want:     map[string]want{},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := assignAddresses(c.pools, c.gateways)
			if len(got) != len(c.want) {
				t.Errorf("%d decisions, want %d: %+v", len(got), len(c.want), got)
			}
			for key, w := range c.want {
				ns, name, _ := strings.Cut(key, "/")
				g, ok := got[types.NamespacedName{Namespace: ns, Name: name}]
				if !ok {
					t.Errorf("%s: no decision", key)
					continue
				}
				var got []string
				for _, a := range g.addrs {
					got = append(got, a.String())
				}
				gotAddr := strings.Join(got, ",")
				if gotAddr != w.addr || g.reason != w.reason {
					t.Errorf("%s: address %q reason %q (%v), want %q %q", key, gotAddr, g.reason, g.err, w.addr, w.reason)
				}
			}
		})
	}
}

func TestClassPools(t *testing.T) {
	withRef := func(name string, group gatewayv1.Group, kind gatewayv1.Kind, ns *gatewayv1.Namespace, ref string) *gatewayv1.GatewayClass {
		gc := class(name, ControllerName)
		gc.Spec.ParametersRef = &gatewayv1.ParametersReference{Group: group, Kind: kind, Name: ref, Namespace: ns}
		return gc
	}
	sys := ptrTo(gatewayv1.Namespace("kube-system"))
	cm := func(name, addresses string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: name}, Data: map[string]string{PoolKey: addresses}}
	}
	classes := []*gatewayv1.GatewayClass{
		withRef("good", "", "ConfigMap", sys, "pool"),
		withRef("missing", "", "ConfigMap", sys, "absent"),
		withRef("bad", "", "ConfigMap", sys, "bad"),
		withRef("kind", "example.com", "Params", sys, "pool"),
		withRef("nons", "", "ConfigMap", nil, "pool"),
		class("plain", ControllerName),
	}
	other := withRef("other", "", "ConfigMap", sys, "pool")
	other.Spec.ControllerName = "example.com/other"
	cms := map[types.NamespacedName]*corev1.ConfigMap{}
	for _, c := range []*corev1.ConfigMap{cm("pool", "10.0.0.0/29"), cm("bad", "nonsense")} {
		cms[types.NamespacedName{Namespace: c.Namespace, Name: c.Name}] = c
	}
	pools := ClassPools(append(classes, other), func(k types.NamespacedName) *corev1.ConfigMap { return cms[k] })
	if st := pools["good"]; st.Err != nil || st.Pool == nil || !st.Pool.Contains(netip.MustParseAddr("10.0.0.6")) {
		t.Errorf("good: %+v", st)
	}
	for name, msg := range map[string]string{"missing": "not found", "bad": "nonsense", "kind": "core ConfigMap", "nons": "namespace"} {
		if err := pools[name].Err; err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: error %v, want one naming %q", name, err, msg)
		}
	}
	for _, name := range []string{"plain", "other"} {
		if _, ok := pools[name]; ok {
			t.Errorf("%s has a pool state", name)
		}
	}
	// The class with invalid parameters is not accepted, with the specification's reason.
	plan := Decide(Snapshot{Now: now, Classes: classes, Pools: pools})
	for name, want := range map[string]condition{"good": {metav1.ConditionTrue, "Accepted"}, "bad": {metav1.ConditionFalse, "InvalidParameters"}} {
		if got := conditionOf(t, plan.Classes[name].Conditions, "Accepted", 1); got != want {
			t.Errorf("class %s Accepted = %+v, want %+v", name, got, want)
		}
	}
	if f := FollowedPools(append(classes, other)); len(f) != 5 || !f["good"].Follow || f["plain"].Follow {
		t.Errorf("FollowedPools = %+v, want the five skiff classes with a parametersRef", f)
	}
}

// TestGatewaysWithAddressesOfTheirOwn: two Gateways on port 80 of a class with a pool get an
// address each, in status and in the plan's listeners and attachments, and the data plane's
// table keeps them apart; a node serves only the addresses it holds.
func TestGatewaysWithAddressesOfTheirOwn(t *testing.T) {
	pool, _ := ParsePool("10.0.0.10-10.0.0.20")
	a := pooled("infra", "a", 1)
	b := pooled("infra", "b", 2)
	ra := makeRoute("infra", "ra").parent("", "a", "").backend("", "", "web").obj()
	rb := makeRoute("infra", "rb").parent("", "b", "").backend("", "", "api").obj()
	s := Snapshot{Now: now, Classes: []*gatewayv1.GatewayClass{class(ClassName, ControllerName)}, Gateways: []*gatewayv1.Gateway{a, b},
		Routes: []*gatewayv1.HTTPRoute{ra, rb}, Services: []*corev1.Service{service("infra", "web"), service("infra", "api")},
		Nodes: []*corev1.Node{readyNode("n1", "10.0.0.1")}, Pools: map[string]PoolState{ClassName: {Pool: pool}}}
	plan := Decide(s)
	for key, want := range map[string]string{"a": "10.0.0.10", "b": "10.0.0.11"} {
		st := plan.Gateways[types.NamespacedName{Namespace: "infra", Name: key}]
		if len(st.Addresses) != 1 || st.Addresses[0].Value != want {
			t.Errorf("gateway %s addresses %+v, want %s", key, st.Addresses, want)
		}
		if got := conditionOf(t, st.Conditions, "Programmed", 2); got.status != metav1.ConditionTrue {
			t.Errorf("gateway %s Programmed %+v", key, got)
		}
	}
	tbl := Translate(TranslateInput{Plan: plan, Routes: s.Routes, Services: s.Services})
	if len(tbl.Listeners) != 2 || tbl.Listeners[0].Address != "10.0.0.10" || tbl.Listeners[1].Address != "10.0.0.11" {
		t.Fatalf("listeners %+v, want one at each Gateway's address", tbl.Listeners)
	}
	for i, want := range []string{"ra", "rb"} {
		if hs := tbl.Listeners[i].Hosts; len(hs) != 1 || len(hs[0].Routes) != 1 || hs[0].Routes[0].Source.Name != want {
			t.Errorf("listener %s serves %+v, want route %s alone", tbl.Listeners[i].Address, hs, want)
		}
	}
	only := Translate(TranslateInput{Plan: plan, Routes: s.Routes, Services: s.Services, Holds: func(a string) bool { return a == "10.0.0.11" }})
	if len(only.Listeners) != 1 || only.Listeners[0].Address != "10.0.0.11" {
		t.Errorf("a node holding 10.0.0.11 serves %+v", only.Listeners)
	}
	// Gateways without an address of their own (a class without a pool) share the nodes'.
	s.Pools = nil
	shared := Translate(TranslateInput{Plan: Decide(s), Routes: s.Routes, Services: s.Services})
	if len(shared.Listeners) != 1 || shared.Listeners[0].Address != "" {
		t.Errorf("without a pool: %+v, want one shared listener", shared.Listeners)
	}
}

func dataPlaneNode(name string, ready bool, lbls ...string) *corev1.Node {
	n := readyNode(name, "10.0.0.1")
	if !ready {
		n.Status.Conditions[0].Status = corev1.ConditionFalse
	}
	n.Labels = map[string]string{ingress.NodeLabel: "true"}
	for _, l := range lbls {
		n.Labels[l] = ""
	}
	return n
}

func TestHolder(t *testing.T) {
	nodes := []*corev1.Node{dataPlaneNode("n1", true), dataPlaneNode("n2", true), dataPlaneNode("n3", true)}
	addrs := make([]string, 64)
	first := map[string]string{}
	count := map[string]int{}
	for i := range addrs {
		addrs[i] = fmt.Sprintf("10.0.1.%d", i)
		first[addrs[i]] = Holder(addrs[i], nodes)
		count[first[addrs[i]]]++
	}
	for _, n := range nodes {
		if count[n.Name] == 0 {
			t.Errorf("node %s holds none of 64 addresses: %v", n.Name, count)
		}
	}
	// n2 leaves: only its addresses move, and to the others.
	without := []*corev1.Node{nodes[0], dataPlaneNode("n2", false), nodes[2]}
	for _, a := range addrs {
		got := Holder(a, without)
		switch {
		case first[a] != "n2" && got != first[a]:
			t.Errorf("%s moved from %s to %s though %s stayed", a, first[a], got, first[a])
		case first[a] == "n2" && (got == "n2" || got == ""):
			t.Errorf("%s held by %q after n2 became not ready", a, got)
		}
	}
	notServing := dataPlaneNode("x", true)
	notServing.Labels = nil
	for _, ineligible := range []*corev1.Node{dataPlaneNode("nr", false), dataPlaneNode("ex", true, local.ExcludeLabel), notServing} {
		if got := Holder("10.0.1.1", []*corev1.Node{ineligible}); got != "" {
			t.Errorf("ineligible node %s elected", got)
		}
	}
	held := HeldAddresses(Plan{Listeners: []ProgrammedListener{{Address: "10.0.1.2"}, {Address: "10.0.1.2"}, {Address: ""}, {Address: "10.0.1.3"}}},
		[]*corev1.Node{dataPlaneNode("only", true)}, "only")
	if len(held) != 2 || held[0].String() != "10.0.1.2" || held[1].String() != "10.0.1.3" {
		t.Errorf("HeldAddresses = %v", held)
	}
}

// TestReferencesConfigMap: only a ConfigMap one of skiff's classes reads its pool from is a
// reason to reconcile (the controller's ConfigMap handler asks this for each event).
func TestReferencesConfigMap(t *testing.T) {
	sys := ptrTo(gatewayv1.Namespace("kube-system"))
	withRef := func(controller gatewayv1.GatewayController, ns *gatewayv1.Namespace, ref string) *gatewayv1.GatewayClass {
		gc := class("c", controller)
		gc.Spec.ParametersRef = &gatewayv1.ParametersReference{Kind: "ConfigMap", Name: ref, Namespace: ns}
		return gc
	}
	key := types.NamespacedName{Namespace: "kube-system", Name: "pool"}
	tests := []struct {
		name    string
		classes []*gatewayv1.GatewayClass
		want    bool
	}{
		{name: "a class of skiff's names it", classes: []*gatewayv1.GatewayClass{class("plain", ControllerName), withRef(ControllerName, sys, "pool")}, want: true},
		{name: "another ConfigMap", classes: []*gatewayv1.GatewayClass{withRef(ControllerName, sys, "other")}},
		{name: "same name, another namespace", classes: []*gatewayv1.GatewayClass{withRef(ControllerName, ptrTo(gatewayv1.Namespace("default")), "pool")}},
		{name: "no namespace in the reference", classes: []*gatewayv1.GatewayClass{withRef(ControllerName, nil, "pool")}},
		{name: "another controller's class", classes: []*gatewayv1.GatewayClass{withRef("example.com/other", sys, "pool")}},
		{name: "no classes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := ReferencesConfigMap(tc.classes, key); got != tc.want {
				t.Fatalf("ReferencesConfigMap = %v, want %v", got, tc.want)
			}
		})
	}
}
