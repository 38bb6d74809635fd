package gateway

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// Builders for the objects of a snapshot.

func class(name string, controller gatewayv1.GatewayController) *gatewayv1.GatewayClass {
	return &gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: name, Generation: 1}, Spec: gatewayv1.GatewayClassSpec{ControllerName: controller}}
}

type gwBuilder struct{ gw *gatewayv1.Gateway }

func makeGateway(ns, name string) *gwBuilder {
	return &gwBuilder{&gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Generation: 2},
		Spec: gatewayv1.GatewaySpec{GatewayClassName: ClassName}}}
}

func (b *gwBuilder) class(name string) *gwBuilder {
	b.gw.Spec.GatewayClassName = gatewayv1.ObjectName(name)
	return b
}

func (b *gwBuilder) listener(name string, port int32, proto gatewayv1.ProtocolType, opts ...func(*gatewayv1.Listener)) *gwBuilder {
	l := gatewayv1.Listener{Name: gatewayv1.SectionName(name), Port: gatewayv1.PortNumber(port), Protocol: proto}
	for _, o := range opts {
		o(&l)
	}
	b.gw.Spec.Listeners = append(b.gw.Spec.Listeners, l)
	return b
}

func (b *gwBuilder) obj() *gatewayv1.Gateway { return b.gw }

func host(h string) func(*gatewayv1.Listener) {
	return func(l *gatewayv1.Listener) { l.Hostname = ptrTo(gatewayv1.Hostname(h)) }
}

func from(f gatewayv1.FromNamespaces, selector map[string]string) func(*gatewayv1.Listener) {
	return func(l *gatewayv1.Listener) {
		rn := &gatewayv1.RouteNamespaces{From: &f}
		if selector != nil {
			rn.Selector = &metav1.LabelSelector{MatchLabels: selector}
		}
		l.AllowedRoutes = &gatewayv1.AllowedRoutes{Namespaces: rn}
	}
}

func kinds(ks ...string) func(*gatewayv1.Listener) {
	return func(l *gatewayv1.Listener) {
		if l.AllowedRoutes == nil {
			l.AllowedRoutes = &gatewayv1.AllowedRoutes{}
		}
		for _, k := range ks {
			l.AllowedRoutes.Kinds = append(l.AllowedRoutes.Kinds, gatewayv1.RouteGroupKind{Kind: gatewayv1.Kind(k)})
		}
	}
}

func cert(ns, name string) func(*gatewayv1.Listener) {
	return func(l *gatewayv1.Listener) {
		ref := gatewayv1.SecretObjectReference{Name: gatewayv1.ObjectName(name)}
		if ns != "" {
			ref.Namespace = ptrTo(gatewayv1.Namespace(ns))
		}
		l.TLS = &gatewayv1.ListenerTLSConfig{CertificateRefs: []gatewayv1.SecretObjectReference{ref}}
	}
}

type routeBuilder struct{ r *gatewayv1.HTTPRoute }

func makeRoute(ns, name string) *routeBuilder {
	return &routeBuilder{&gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Generation: 3}}}
}

func (b *routeBuilder) parent(ns, name, section string) *routeBuilder {
	ref := gatewayv1.ParentReference{Name: gatewayv1.ObjectName(name)}
	if ns != "" {
		ref.Namespace = ptrTo(gatewayv1.Namespace(ns))
	}
	if section != "" {
		ref.SectionName = ptrTo(gatewayv1.SectionName(section))
	}
	b.r.Spec.ParentRefs = append(b.r.Spec.ParentRefs, ref)
	return b
}

func (b *routeBuilder) hostnames(hs ...string) *routeBuilder {
	for _, h := range hs {
		b.r.Spec.Hostnames = append(b.r.Spec.Hostnames, gatewayv1.Hostname(h))
	}
	return b
}

func (b *routeBuilder) backend(ns, kind, name string) *routeBuilder {
	ref := gatewayv1.HTTPBackendRef{BackendRef: gatewayv1.BackendRef{BackendObjectReference: gatewayv1.BackendObjectReference{
		Name: gatewayv1.ObjectName(name), Port: ptrTo(gatewayv1.PortNumber(80))}}}
	if ns != "" {
		ref.Namespace = ptrTo(gatewayv1.Namespace(ns))
	}
	if kind != "" {
		ref.Kind = ptrTo(gatewayv1.Kind(kind))
	}
	b.r.Spec.Rules = append(b.r.Spec.Rules, gatewayv1.HTTPRouteRule{BackendRefs: []gatewayv1.HTTPBackendRef{ref}})
	return b
}

func (b *routeBuilder) obj() *gatewayv1.HTTPRoute { return b.r }

func service(ns, name string) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}
}

func namespace(name string, lbls map[string]string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbls}}
}

func grant(ns, fromKind, fromNS, toKind, toName string) *gatewayv1.ReferenceGrant {
	g := &gatewayv1.ReferenceGrant{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "grant"}, Spec: gatewayv1.ReferenceGrantSpec{
		From: []gatewayv1.ReferenceGrantFrom{{Group: group, Kind: gatewayv1.Kind(fromKind), Namespace: gatewayv1.Namespace(fromNS)}},
		To:   []gatewayv1.ReferenceGrantTo{{Kind: gatewayv1.Kind(toKind)}},
	}}
	if toName != "" {
		g.Spec.To[0].Name = ptrTo(gatewayv1.ObjectName(toName))
	}
	return g
}

func readyNode(name, addr string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{
		Addresses:  []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: addr}},
		Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
	}}
}

// tlsSecret is a kubernetes.io/tls Secret with a key pair that parses (valid) or bytes that do not.
func tlsSecret(t *testing.T, ns, name string, valid bool) *corev1.Secret {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{corev1.TLSCertKey: []byte("not a certificate"), corev1.TLSPrivateKeyKey: []byte("not a key")}}
	if !valid {
		return s
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "example.com"}, DNSNames: []string{"example.com"},
		NotBefore: time.Unix(0, 0), NotAfter: time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	s.Data[corev1.TLSCertKey] = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	s.Data[corev1.TLSPrivateKeyKey] = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	return s
}

var now = metav1.NewTime(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))

// condition is what a test expects of one condition: its status and reason.
type condition struct {
	status metav1.ConditionStatus
	reason string
}

func conditionOf(t *testing.T, conds []metav1.Condition, typ string, generation int64) condition {
	t.Helper()
	c := apimeta.FindStatusCondition(conds, typ)
	if c == nil {
		t.Fatalf("no %s condition in %+v", typ, conds)
	}
	if c.ObservedGeneration != generation {
		t.Errorf("%s: observedGeneration %d, want %d", typ, c.ObservedGeneration, generation)
	}
	return condition{c.Status, c.Reason}
}

func TestGatewayClassAcceptedWithFeatures(t *testing.T) {
	pooled := class("pooled", ControllerName)
	pool, _ := ParsePool("10.0.0.9")
	plan := Decide(Snapshot{Now: now, Classes: []*gatewayv1.GatewayClass{class("skiff", ControllerName), class("other", "example.com/other"), pooled},
		Pools: map[string]PoolState{"pooled": {Pool: pool}}})
	if _, ok := plan.Classes["other"]; ok {
		t.Error("a class of another controller got a status")
	}
	st, ok := plan.Classes["skiff"]
	if !ok {
		t.Fatal("skiff's class got no status")
	}
	if got := conditionOf(t, st.Conditions, "Accepted", 1); got != (condition{metav1.ConditionTrue, "Accepted"}) {
		t.Errorf("Accepted %+v", got)
	}
	// Sorted, the profiles' core features among them; the addresses of spec.addresses only for a
	// class with an address pool.
	names := func(st gatewayv1.GatewayClassStatus) []gatewayv1.FeatureName {
		var out []gatewayv1.FeatureName
		for _, f := range st.SupportedFeatures {
			out = append(out, f.Name)
		}
		return out
	}
	plain, withPool := names(st), names(plan.Classes["pooled"])
	if !slices.IsSorted(plain) || len(withPool) != len(plain)+2 {
		t.Errorf("supportedFeatures %v, with a pool %v", plain, withPool)
	}
	for _, f := range []gatewayv1.FeatureName{"Gateway", "HTTPRoute", "ReferenceGrant", "GRPCRoute", "HTTPRouteRequestMirror"} {
		if !slices.Contains(plain, f) {
			t.Errorf("supportedFeatures %v lack %s", plain, f)
		}
	}
	for _, f := range []gatewayv1.FeatureName{"GatewayStaticAddresses", "GatewayAddressEmpty"} {
		if slices.Contains(plain, f) || !slices.Contains(withPool, f) {
			t.Errorf("%s: without a pool %t, with one %t; want only with one", f, slices.Contains(plain, f), slices.Contains(withPool, f))
		}
	}
}

func TestGatewayListeners(t *testing.T) {
	type listenerWant struct {
		kinds                          []string
		accepted, resolved, programmed condition
		conflicted                     condition
	}
	accepted := condition{metav1.ConditionTrue, "Accepted"}
	resolved := condition{metav1.ConditionTrue, "ResolvedRefs"}
	programmed := condition{metav1.ConditionTrue, "Programmed"}
	invalid := condition{metav1.ConditionFalse, "Invalid"}
	noConflict := condition{metav1.ConditionFalse, "NoConflicts"}
	ok := listenerWant{[]string{"HTTPRoute", "GRPCRoute"}, accepted, resolved, programmed, noConflict}
	for _, tc := range []struct {
		name      string
		gw        *gatewayv1.Gateway
		objs      func(t *testing.T) ([]*corev1.Secret, []*gatewayv1.ReferenceGrant)
		accepted  condition
		resolved  condition
		listeners map[string]listenerWant
	}{
		{
			name:     "http listener",
			gw:       makeGateway("ns", "gw").listener("http", 80, gatewayv1.HTTPProtocolType).obj(),
			accepted: accepted, resolved: condition{metav1.ConditionTrue, "ResolvedRefs"},
			listeners: map[string]listenerWant{"http": ok},
		},
		{
			name:     "only an unsupported protocol: not accepted, ListenersNotValid",
			gw:       makeGateway("ns", "gw").listener("tcp", 9000, gatewayv1.TCPProtocolType).obj(),
			accepted: condition{metav1.ConditionFalse, "ListenersNotValid"}, resolved: condition{metav1.ConditionTrue, "ResolvedRefs"},
			listeners: map[string]listenerWant{"tcp": {nil, condition{metav1.ConditionFalse, "UnsupportedProtocol"}, resolved, invalid, noConflict}},
		},
		{
			name:     "a supported and an unsupported protocol: accepted, ListenersNotValid",
			gw:       makeGateway("ns", "gw").listener("http", 80, gatewayv1.HTTPProtocolType).listener("udp", 53, gatewayv1.UDPProtocolType).obj(),
			accepted: condition{metav1.ConditionTrue, "ListenersNotValid"}, resolved: condition{metav1.ConditionTrue, "ResolvedRefs"},
			listeners: map[string]listenerWant{"http": ok, "udp": {nil, condition{metav1.ConditionFalse, "UnsupportedProtocol"}, resolved, invalid, noConflict}},
		},
		{
			name:     "only invalid route kinds: no supportedKinds, InvalidRouteKinds",
			gw:       makeGateway("ns", "gw").listener("http", 80, gatewayv1.HTTPProtocolType, kinds("FooRoute")).obj(),
			accepted: accepted, resolved: condition{metav1.ConditionFalse, "ListenersNotResolved"},
			listeners: map[string]listenerWant{"http": {nil, accepted, condition{metav1.ConditionFalse, "InvalidRouteKinds"}, invalid, noConflict}},
		},
		{
			name:     "a valid and an invalid route kind: HTTPRoute supported, InvalidRouteKinds",
			gw:       makeGateway("ns", "gw").listener("http", 80, gatewayv1.HTTPProtocolType, kinds("HTTPRoute", "FooRoute")).obj(),
			accepted: accepted, resolved: condition{metav1.ConditionFalse, "ListenersNotResolved"},
			listeners: map[string]listenerWant{"http": {[]string{"HTTPRoute"}, accepted, condition{metav1.ConditionFalse, "InvalidRouteKinds"}, invalid, noConflict}},
		},
		{
			name: "https with a valid certificate",
			gw:   makeGateway("ns", "gw").listener("https", 443, gatewayv1.HTTPSProtocolType, cert("", "tls")).obj(),
			objs: func(t *testing.T) ([]*corev1.Secret, []*gatewayv1.ReferenceGrant) {
				return []*corev1.Secret{tlsSecret(t, "ns", "tls", true)}, nil
			},
			accepted: accepted, resolved: condition{metav1.ConditionTrue, "ResolvedRefs"},
			listeners: map[string]listenerWant{"https": ok},
		},
		{
			name:     "https with a missing secret",
			gw:       makeGateway("ns", "gw").listener("https", 443, gatewayv1.HTTPSProtocolType, cert("", "absent")).obj(),
			accepted: accepted, resolved: condition{metav1.ConditionFalse, "ListenersNotResolved"},
			listeners: map[string]listenerWant{"https": {[]string{"HTTPRoute", "GRPCRoute"}, accepted, condition{metav1.ConditionFalse, "InvalidCertificateRef"}, invalid, noConflict}},
		},
		{
			name: "https with a malformed secret",
			gw:   makeGateway("ns", "gw").listener("https", 443, gatewayv1.HTTPSProtocolType, cert("", "bad")).obj(),
			objs: func(t *testing.T) ([]*corev1.Secret, []*gatewayv1.ReferenceGrant) {
				return []*corev1.Secret{tlsSecret(t, "ns", "bad", false)}, nil
			},
			accepted: accepted, resolved: condition{metav1.ConditionFalse, "ListenersNotResolved"},
			listeners: map[string]listenerWant{"https": {[]string{"HTTPRoute", "GRPCRoute"}, accepted, condition{metav1.ConditionFalse, "InvalidCertificateRef"}, invalid, noConflict}},
		},
		{
			name: "https with a secret of another namespace and no grant",
			gw:   makeGateway("ns", "gw").listener("https", 443, gatewayv1.HTTPSProtocolType, cert("certs", "tls")).obj(),
			objs: func(t *testing.T) ([]*corev1.Secret, []*gatewayv1.ReferenceGrant) {
				return []*corev1.Secret{tlsSecret(t, "certs", "tls", true)}, nil
			},
			accepted: accepted, resolved: condition{metav1.ConditionFalse, "ListenersNotResolved"},
			listeners: map[string]listenerWant{"https": {[]string{"HTTPRoute", "GRPCRoute"}, accepted, condition{metav1.ConditionFalse, "RefNotPermitted"}, invalid, noConflict}},
		},
		{
			name: "https with a secret of another namespace and a grant for it",
			gw:   makeGateway("ns", "gw").listener("https", 443, gatewayv1.HTTPSProtocolType, cert("certs", "tls")).obj(),
			objs: func(t *testing.T) ([]*corev1.Secret, []*gatewayv1.ReferenceGrant) {
				return []*corev1.Secret{tlsSecret(t, "certs", "tls", true)}, []*gatewayv1.ReferenceGrant{grant("certs", "Gateway", "ns", "Secret", "tls")}
			},
			accepted: accepted, resolved: condition{metav1.ConditionTrue, "ResolvedRefs"},
			listeners: map[string]listenerWant{"https": ok},
		},
		{
			name: "a grant for another secret does not permit it",
			gw:   makeGateway("ns", "gw").listener("https", 443, gatewayv1.HTTPSProtocolType, cert("certs", "tls")).obj(),
			objs: func(t *testing.T) ([]*corev1.Secret, []*gatewayv1.ReferenceGrant) {
				return []*corev1.Secret{tlsSecret(t, "certs", "tls", true)}, []*gatewayv1.ReferenceGrant{grant("certs", "Gateway", "ns", "Secret", "other")}
			},
			accepted: accepted, resolved: condition{metav1.ConditionFalse, "ListenersNotResolved"},
			listeners: map[string]listenerWant{"https": {[]string{"HTTPRoute", "GRPCRoute"}, accepted, condition{metav1.ConditionFalse, "RefNotPermitted"}, invalid, noConflict}},
		},
		{
			name: "HTTP and HTTPS on one port conflict",
			gw: makeGateway("ns", "gw").listener("http", 8443, gatewayv1.HTTPProtocolType).
				listener("https", 8443, gatewayv1.HTTPSProtocolType, cert("", "tls")).obj(),
			objs: func(t *testing.T) ([]*corev1.Secret, []*gatewayv1.ReferenceGrant) {
				return []*corev1.Secret{tlsSecret(t, "ns", "tls", true)}, nil
			},
			accepted: condition{metav1.ConditionFalse, "ListenersNotValid"}, resolved: condition{metav1.ConditionTrue, "ResolvedRefs"},
			listeners: map[string]listenerWant{
				"http":  {[]string{"HTTPRoute", "GRPCRoute"}, condition{metav1.ConditionFalse, "ProtocolConflict"}, resolved, invalid, condition{metav1.ConditionTrue, "ProtocolConflict"}},
				"https": {[]string{"HTTPRoute", "GRPCRoute"}, condition{metav1.ConditionFalse, "ProtocolConflict"}, resolved, invalid, condition{metav1.ConditionTrue, "ProtocolConflict"}},
			},
		},
		{
			name: "one hostname twice on a port conflicts; another hostname does not",
			gw: makeGateway("ns", "gw").listener("a", 80, gatewayv1.HTTPProtocolType, host("a.example.com")).
				listener("a2", 80, gatewayv1.HTTPProtocolType, host("a.example.com")).listener("b", 80, gatewayv1.HTTPProtocolType, host("b.example.com")).obj(),
			accepted: condition{metav1.ConditionTrue, "ListenersNotValid"}, resolved: condition{metav1.ConditionTrue, "ResolvedRefs"},
			listeners: map[string]listenerWant{
				"a":  {[]string{"HTTPRoute", "GRPCRoute"}, condition{metav1.ConditionFalse, "HostnameConflict"}, resolved, invalid, condition{metav1.ConditionTrue, "HostnameConflict"}},
				"a2": {[]string{"HTTPRoute", "GRPCRoute"}, condition{metav1.ConditionFalse, "HostnameConflict"}, resolved, invalid, condition{metav1.ConditionTrue, "HostnameConflict"}},
				"b":  ok,
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Snapshot{Now: now, Classes: []*gatewayv1.GatewayClass{class("skiff", ControllerName)}, Gateways: []*gatewayv1.Gateway{tc.gw},
				Nodes: []*corev1.Node{readyNode("n1", "10.0.0.1")}}
			if tc.objs != nil {
				s.Secrets, s.Grants = tc.objs(t)
			}
			st, found := Decide(s).Gateways[types.NamespacedName{Namespace: "ns", Name: "gw"}]
			if !found {
				t.Fatal("no gateway status")
			}
			if got := conditionOf(t, st.Conditions, "Accepted", 2); got != tc.accepted {
				t.Errorf("gateway Accepted %+v, want %+v", got, tc.accepted)
			}
			if got := conditionOf(t, st.Conditions, "ResolvedRefs", 2); got != tc.resolved {
				t.Errorf("gateway ResolvedRefs %+v, want %+v", got, tc.resolved)
			}
			if len(st.Listeners) != len(tc.listeners) {
				t.Fatalf("%d listener statuses, want %d", len(st.Listeners), len(tc.listeners))
			}
			for _, ls := range st.Listeners {
				want := tc.listeners[string(ls.Name)]
				var got []string
				for _, k := range ls.SupportedKinds {
					if k.Group == nil || *k.Group != group {
						t.Errorf("%s: supported kind %s without the gateway group", ls.Name, k.Kind)
					}
					got = append(got, string(k.Kind))
				}
				if ls.SupportedKinds == nil || !slices.Equal(got, want.kinds) {
					t.Errorf("%s: supportedKinds %v (nil %t), want %v", ls.Name, got, ls.SupportedKinds == nil, want.kinds)
				}
				for typ, w := range map[string]condition{"Accepted": want.accepted, "ResolvedRefs": want.resolved, "Programmed": want.programmed, "Conflicted": want.conflicted} {
					if got := conditionOf(t, ls.Conditions, typ, 2); got != w {
						t.Errorf("%s: %s %+v, want %+v", ls.Name, typ, got, w)
					}
				}
			}
		})
	}
}

func TestGatewayOfAnotherClassIsLeftAlone(t *testing.T) {
	plan := Decide(Snapshot{Now: now, Classes: []*gatewayv1.GatewayClass{class("skiff", ControllerName), class("other", "example.com/other")},
		Gateways: []*gatewayv1.Gateway{makeGateway("ns", "theirs").class("other").listener("http", 80, gatewayv1.HTTPProtocolType).obj(),
			makeGateway("ns", "nobody").class("absent").listener("http", 80, gatewayv1.HTTPProtocolType).obj()},
		Routes: []*gatewayv1.HTTPRoute{makeRoute("ns", "r").parent("", "theirs", "").obj()}})
	if len(plan.Gateways) != 0 || len(plan.Routes) != 0 {
		t.Errorf("statuses for objects of other classes: %+v %+v", plan.Gateways, plan.Routes)
	}
}

func TestGatewayAddressesAndProgrammed(t *testing.T) {
	gw := makeGateway("ns", "gw").listener("http", 80, gatewayv1.HTTPProtocolType).obj()
	notReady := readyNode("n3", "10.0.0.3")
	notReady.Status.Conditions[0].Status = corev1.ConditionFalse
	key := types.NamespacedName{Namespace: "ns", Name: "gw"}
	st := Decide(Snapshot{Now: now, Classes: []*gatewayv1.GatewayClass{class("skiff", ControllerName)}, Gateways: []*gatewayv1.Gateway{gw},
		Nodes: []*corev1.Node{readyNode("n2", "10.0.0.2"), readyNode("n1", "10.0.0.1"), notReady}}).Gateways[key]
	var addrs []string
	for _, a := range st.Addresses {
		if a.Type == nil || *a.Type != gatewayv1.IPAddressType {
			t.Errorf("address %s is not of type IPAddress", a.Value)
		}
		addrs = append(addrs, a.Value)
	}
	if !slices.Equal(addrs, []string{"10.0.0.1", "10.0.0.2"}) {
		t.Errorf("addresses %v, want the ready nodes' in order", addrs)
	}
	if got := conditionOf(t, st.Conditions, "Programmed", 2); got != (condition{metav1.ConditionTrue, "Programmed"}) {
		t.Errorf("Programmed %+v", got)
	}
	st = Decide(Snapshot{Now: now, Classes: []*gatewayv1.GatewayClass{class("skiff", ControllerName)}, Gateways: []*gatewayv1.Gateway{gw}}).Gateways[key]
	if got := conditionOf(t, st.Conditions, "Programmed", 2); got != (condition{metav1.ConditionFalse, "AddressNotAssigned"}) {
		t.Errorf("Programmed without nodes %+v", got)
	}
}

func TestConditionKeepsTransitionTimeWhileUnchanged(t *testing.T) {
	earlier := metav1.NewTime(now.Add(-time.Hour))
	gc := class("skiff", ControllerName)
	gc.Status.Conditions = []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted", LastTransitionTime: earlier, ObservedGeneration: 1}}
	got := apimeta.FindStatusCondition(Decide(Snapshot{Now: now, Classes: []*gatewayv1.GatewayClass{gc}}).Classes["skiff"].Conditions, "Accepted")
	if !got.LastTransitionTime.Equal(&earlier) {
		t.Errorf("lastTransitionTime %v, want the unchanged condition's %v", got.LastTransitionTime, earlier)
	}
	gc.Status.Conditions[0].Status = metav1.ConditionUnknown
	got = apimeta.FindStatusCondition(Decide(Snapshot{Now: now, Classes: []*gatewayv1.GatewayClass{gc}}).Classes["skiff"].Conditions, "Accepted")
	if !got.LastTransitionTime.Equal(&now) {
		t.Errorf("lastTransitionTime %v, want now %v after a change", got.LastTransitionTime, now)
	}
}

func TestRouteParents(t *testing.T) {
	accepted := condition{metav1.ConditionTrue, "Accepted"}
	resolved := condition{metav1.ConditionTrue, "ResolvedRefs"}
	type want struct {
		accepted, resolved condition
		attached           map[string]int32 // listener -> attachedRoutes
		hostnames          []string         // of the first attachment
	}
	gw := func() *gwBuilder { return makeGateway("infra", "gw") }
	for _, tc := range []struct {
		name       string
		gw         *gatewayv1.Gateway
		route      *gatewayv1.HTTPRoute
		services   []*corev1.Service
		grants     []*gatewayv1.ReferenceGrant
		namespaces []*corev1.Namespace
		want       want
	}{
		{
			name:     "same namespace, default From Same",
			gw:       gw().listener("http", 80, gatewayv1.HTTPProtocolType).obj(),
			route:    makeRoute("infra", "r").parent("", "gw", "").backend("", "", "web").obj(),
			services: []*corev1.Service{service("infra", "web")},
			want:     want{accepted, resolved, map[string]int32{"http": 1}, []string{}},
		},
		{
			name:  "another namespace with From Same: NotAllowedByListeners",
			gw:    gw().listener("http", 80, gatewayv1.HTTPProtocolType).obj(),
			route: makeRoute("app", "r").parent("infra", "gw", "").obj(),
			want:  want{condition{metav1.ConditionFalse, "NotAllowedByListeners"}, resolved, map[string]int32{"http": 0}, nil},
		},
		{
			name:  "another namespace with From All",
			gw:    gw().listener("http", 80, gatewayv1.HTTPProtocolType, from(gatewayv1.NamespacesFromAll, nil)).obj(),
			route: makeRoute("app", "r").parent("infra", "gw", "").obj(),
			want:  want{accepted, resolved, map[string]int32{"http": 1}, []string{}},
		},
		{
			name:       "From Selector matching the route's namespace",
			gw:         gw().listener("http", 80, gatewayv1.HTTPProtocolType, from(gatewayv1.NamespacesFromSelector, map[string]string{"team": "a"})).obj(),
			route:      makeRoute("app", "r").parent("infra", "gw", "").obj(),
			namespaces: []*corev1.Namespace{namespace("app", map[string]string{"team": "a"})},
			want:       want{accepted, resolved, map[string]int32{"http": 1}, []string{}},
		},
		{
			name:       "From Selector not matching",
			gw:         gw().listener("http", 80, gatewayv1.HTTPProtocolType, from(gatewayv1.NamespacesFromSelector, map[string]string{"team": "a"})).obj(),
			route:      makeRoute("app", "r").parent("infra", "gw", "").obj(),
			namespaces: []*corev1.Namespace{namespace("app", map[string]string{"team": "b"})},
			want:       want{condition{metav1.ConditionFalse, "NotAllowedByListeners"}, resolved, map[string]int32{"http": 0}, nil},
		},
		{
			name:  "a listener that takes no HTTPRoute",
			gw:    gw().listener("http", 80, gatewayv1.HTTPProtocolType, kinds("GRPCRoute")).obj(),
			route: makeRoute("infra", "r").parent("", "gw", "").obj(),
			want:  want{condition{metav1.ConditionFalse, "NotAllowedByListeners"}, resolved, map[string]int32{"http": 0}, nil},
		},
		{
			name:  "a sectionName no listener has: NoMatchingParent",
			gw:    gw().listener("http", 80, gatewayv1.HTTPProtocolType).obj(),
			route: makeRoute("infra", "r").parent("", "gw", "nope").obj(),
			want:  want{condition{metav1.ConditionFalse, "NoMatchingParent"}, resolved, map[string]int32{"http": 0}, nil},
		},
		{
			name:  "a sectionName picks one listener",
			gw:    gw().listener("a", 80, gatewayv1.HTTPProtocolType, host("a.example.com")).listener("b", 80, gatewayv1.HTTPProtocolType, host("b.example.com")).obj(),
			route: makeRoute("infra", "r").parent("", "gw", "b").obj(),
			want:  want{accepted, resolved, map[string]int32{"a": 0, "b": 1}, []string{"b.example.com"}},
		},
		{
			name:  "no hostname in common: NoMatchingListenerHostname",
			gw:    gw().listener("http", 80, gatewayv1.HTTPProtocolType, host("*.example.com")).obj(),
			route: makeRoute("infra", "r").parent("", "gw", "").hostnames("example.com", "foo.example.net").obj(),
			want:  want{condition{metav1.ConditionFalse, "NoMatchingListenerHostname"}, resolved, map[string]int32{"http": 0}, nil},
		},
		{
			name:  "a wildcard listener takes the route's names under it",
			gw:    gw().listener("http", 80, gatewayv1.HTTPProtocolType, host("*.example.com")).obj(),
			route: makeRoute("infra", "r").parent("", "gw", "").hostnames("a.b.example.com", "example.com", "*.example.com").obj(),
			want:  want{accepted, resolved, map[string]int32{"http": 1}, []string{"*.example.com", "a.b.example.com"}},
		},
		{
			name:  "a route's wildcard narrows to the listener's name",
			gw:    gw().listener("http", 80, gatewayv1.HTTPProtocolType, host("foo.example.com")).obj(),
			route: makeRoute("infra", "r").parent("", "gw", "").hostnames("*.example.com").obj(),
			want:  want{accepted, resolved, map[string]int32{"http": 1}, []string{"foo.example.com"}},
		},
		{
			name:  "a missing Service: BackendNotFound, still accepted",
			gw:    gw().listener("http", 80, gatewayv1.HTTPProtocolType).obj(),
			route: makeRoute("infra", "r").parent("", "gw", "").backend("", "", "absent").obj(),
			want:  want{accepted, condition{metav1.ConditionFalse, "BackendNotFound"}, map[string]int32{"http": 1}, []string{}},
		},
		{
			name:  "a backendRef of another kind: InvalidKind",
			gw:    gw().listener("http", 80, gatewayv1.HTTPProtocolType).obj(),
			route: makeRoute("infra", "r").parent("", "gw", "").backend("", "ConfigMap", "web").obj(),
			want:  want{accepted, condition{metav1.ConditionFalse, "InvalidKind"}, map[string]int32{"http": 1}, []string{}},
		},
		{
			name:     "a Service of another namespace without a grant: RefNotPermitted",
			gw:       gw().listener("http", 80, gatewayv1.HTTPProtocolType).obj(),
			route:    makeRoute("infra", "r").parent("", "gw", "").backend("backends", "", "web").obj(),
			services: []*corev1.Service{service("backends", "web")},
			want:     want{accepted, condition{metav1.ConditionFalse, "RefNotPermitted"}, map[string]int32{"http": 1}, []string{}},
		},
		{
			name:     "a Service of another namespace with a grant",
			gw:       gw().listener("http", 80, gatewayv1.HTTPProtocolType).obj(),
			route:    makeRoute("infra", "r").parent("", "gw", "").backend("backends", "", "web").obj(),
			services: []*corev1.Service{service("backends", "web")},
			grants:   []*gatewayv1.ReferenceGrant{grant("backends", "HTTPRoute", "infra", "Service", "")},
			want:     want{accepted, resolved, map[string]int32{"http": 1}, []string{}},
		},
		{
			name:     "a grant from another kind does not permit it",
			gw:       gw().listener("http", 80, gatewayv1.HTTPProtocolType).obj(),
			route:    makeRoute("infra", "r").parent("", "gw", "").backend("backends", "", "web").obj(),
			services: []*corev1.Service{service("backends", "web")},
			grants:   []*gatewayv1.ReferenceGrant{grant("backends", "GRPCRoute", "infra", "Service", "")},
			want:     want{accepted, condition{metav1.ConditionFalse, "RefNotPermitted"}, map[string]int32{"http": 1}, []string{}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan := Decide(Snapshot{Now: now, Classes: []*gatewayv1.GatewayClass{class("skiff", ControllerName)}, Gateways: []*gatewayv1.Gateway{tc.gw},
				Routes: []*gatewayv1.HTTPRoute{tc.route}, Services: tc.services, Grants: tc.grants, Namespaces: tc.namespaces})
			st, ok := plan.Routes[types.NamespacedName{Namespace: tc.route.Namespace, Name: tc.route.Name}]
			if !ok || len(st.Parents) != 1 {
				t.Fatalf("route status %+v, want one parent", st)
			}
			p := st.Parents[0]
			if p.ControllerName != ControllerName || p.ParentRef.Name != "gw" {
				t.Errorf("parent %+v", p)
			}
			if got := conditionOf(t, p.Conditions, "Accepted", 3); got != tc.want.accepted {
				t.Errorf("Accepted %+v, want %+v", got, tc.want.accepted)
			}
			if got := conditionOf(t, p.Conditions, "ResolvedRefs", 3); got != tc.want.resolved {
				t.Errorf("ResolvedRefs %+v, want %+v", got, tc.want.resolved)
			}
			for _, ls := range plan.Gateways[types.NamespacedName{Namespace: "infra", Name: "gw"}].Listeners {
				if want := tc.want.attached[string(ls.Name)]; ls.AttachedRoutes != want {
					t.Errorf("listener %s: attachedRoutes %d, want %d", ls.Name, ls.AttachedRoutes, want)
				}
			}
			if tc.want.hostnames == nil {
				if len(plan.Attachments) != 0 {
					t.Errorf("attachments %+v, want none", plan.Attachments)
				}
				return
			}
			if len(plan.Attachments) == 0 {
				t.Fatal("no attachment")
			}
			if got := plan.Attachments[0].Hostnames; !slices.Equal(got, tc.want.hostnames) {
				t.Errorf("attachment hostnames %v, want %v", got, tc.want.hostnames)
			}
		})
	}
}

func TestRouteKeepsOtherControllersParents(t *testing.T) {
	r := makeRoute("infra", "r").parent("", "gw", "").parent("", "theirs", "").obj()
	theirs := gatewayv1.RouteParentStatus{ParentRef: gatewayv1.ParentReference{Name: "theirs"}, ControllerName: "example.com/other",
		Conditions: []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted"}}}
	r.Status.Parents = []gatewayv1.RouteParentStatus{theirs}
	plan := Decide(Snapshot{Now: now, Classes: []*gatewayv1.GatewayClass{class("skiff", ControllerName), class("other", "example.com/other")},
		Gateways: []*gatewayv1.Gateway{makeGateway("infra", "gw").listener("http", 80, gatewayv1.HTTPProtocolType).obj(),
			makeGateway("infra", "theirs").class("other").listener("http", 80, gatewayv1.HTTPProtocolType).obj()},
		Routes: []*gatewayv1.HTTPRoute{r}})
	parents := plan.Routes[types.NamespacedName{Namespace: "infra", Name: "r"}].Parents
	if len(parents) != 2 || parents[0].ParentRef.Name != "gw" || parents[1].ControllerName != "example.com/other" {
		t.Fatalf("parents %+v, want skiff's gw and the other controller's entry kept", parents)
	}
}
