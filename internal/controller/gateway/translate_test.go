package gateway

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/skiff-sh/skiff/internal/ingress/routes"
)

func endpointSlice(ns, svc string, port int32, addrs ...string) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: svc + "-x", Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
		Ports: []discoveryv1.EndpointPort{{Port: ptrTo(port)}}}
	for _, a := range addrs {
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{a}})
	}
	return s
}

// translated runs Decide and Translate over one snapshot, as the data plane's node would.
func translated(t *testing.T, s Snapshot, eps ...*discoveryv1.EndpointSlice) routes.Table {
	t.Helper()
	s.Now = now
	s.Classes = append(s.Classes, class("skiff", ControllerName))
	return Translate(TranslateInput{Plan: Decide(s), Routes: s.Routes, Grants: s.Grants, Services: s.Services, Slices: eps, Secrets: s.Secrets})
}

func TestTranslateListenersAndHosts(t *testing.T) {
	gw := makeGateway("infra", "gw").
		listener("http", 80, gatewayv1.HTTPProtocolType, from(gatewayv1.NamespacesFromAll, nil)).
		listener("a", 443, gatewayv1.HTTPSProtocolType, host("a.example.com"), cert("", "a-tls")).
		listener("wild", 443, gatewayv1.HTTPSProtocolType, host("*.example.com"), cert("", "wild-tls")).
		listener("broken", 8443, gatewayv1.HTTPSProtocolType, cert("", "absent")).obj()
	r1 := makeRoute("infra", "r1").parent("", "gw", "").hostnames("a.example.com").backend("", "", "web").obj()
	r2 := makeRoute("app", "r2").parent("infra", "gw", "http").backend("", "", "api").obj()
	table := translated(t, Snapshot{Gateways: []*gatewayv1.Gateway{gw}, Routes: []*gatewayv1.HTTPRoute{r1, r2},
		Services: []*corev1.Service{service("infra", "web"), service("app", "api")},
		Secrets:  []*corev1.Secret{tlsSecret(t, "infra", "a-tls", true), tlsSecret(t, "infra", "wild-tls", true)}},
		endpointSlice("infra", "web", 8080, "10.1.0.2", "10.1.0.1"), endpointSlice("app", "api", 9090, "10.1.0.9"))

	var ports []int32
	for _, l := range table.Listeners {
		ports = append(ports, l.Port)
	}
	if !slices.Equal(ports, []int32{80, 443}) {
		t.Fatalf("listener ports %v, want 80 and 443 (8443's certificate is missing, so it is not programmed)", ports)
	}
	http, https := table.Listeners[0], table.Listeners[1]
	if http.Protocol != routes.ProtocolHTTP || https.Protocol != routes.ProtocolHTTPS {
		t.Errorf("protocols %s %s", http.Protocol, https.Protocol)
	}
	// r1 (hostname a.example.com) is on every listener of its Gateway whose hostname matches and
	// no more specific listener of the port claims: http (any host, alone on port 80) and a, not
	// wild (a.example.com is listener a's); r2 (no hostnames, from another namespace) only on
	// http. Listener wild keeps its host without routes: a request for b.example.com is its own.
	if len(http.Hosts) != 2 || http.Hosts[0].Hostname != "" || http.Hosts[1].Hostname != "a.example.com" {
		t.Fatalf("http hosts %+v", http.Hosts)
	}
	if got := http.Hosts[0].Routes; len(got) != 1 || got[0].Source.Name != "r2" || got[0].Backends[0].Endpoints[0].Address != "10.1.0.9:9090" {
		t.Errorf("http any-host routes %+v", got)
	}
	if len(https.Hosts) != 2 || https.Hosts[0].Hostname != "a.example.com" || len(https.Hosts[0].Routes) != 1 ||
		https.Hosts[1].Hostname != "*.example.com" || len(https.Hosts[1].Routes) != 0 {
		t.Fatalf("https hosts %+v, want a.example.com with r1 from listener a alone, and *.example.com without routes", https.Hosts)
	}
	b := https.Hosts[0].Routes[0].Backends[0]
	if b.Invalid != "" || b.Weight != 1 || len(b.Endpoints) != 2 || b.Endpoints[0].Address != "10.1.0.1:8080" {
		t.Errorf("backend %+v, want the pods on the target port", b)
	}
	var certNames [][]string
	for _, c := range https.Certificates {
		if c.Cert == nil {
			t.Errorf("certificate %s not parsed", c.Source)
		}
		certNames = append(certNames, c.Hostnames)
	}
	if len(certNames) != 2 || certNames[0][0] != "a.example.com" || certNames[1][0] != "*.example.com" {
		t.Errorf("certificates for %v, want a.example.com's and *.example.com's", certNames)
	}
}

func TestTranslateRule(t *testing.T) {
	gw := makeGateway("ns", "gw").listener("http", 80, gatewayv1.HTTPProtocolType).obj()
	exact, regex := gatewayv1.PathMatchExact, gatewayv1.HeaderMatchRegularExpression
	get := gatewayv1.HTTPMethodGet
	r := makeRoute("ns", "r").parent("", "gw", "").obj()
	r.CreationTimestamp = metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	r.Spec.Rules = []gatewayv1.HTTPRouteRule{
		{
			Matches: []gatewayv1.HTTPRouteMatch{
				{Path: &gatewayv1.HTTPPathMatch{Type: &exact, Value: ptrTo("/exact")}, Method: &get,
					Headers:     []gatewayv1.HTTPHeaderMatch{{Type: &regex, Name: "x-v", Value: "v[0-9]"}},
					QueryParams: []gatewayv1.HTTPQueryParamMatch{{Name: "q", Value: "1"}}},
				{},
			},
			Filters: []gatewayv1.HTTPRouteFilter{
				{Type: gatewayv1.HTTPRouteFilterRequestHeaderModifier, RequestHeaderModifier: &gatewayv1.HTTPHeaderFilter{
					Set: []gatewayv1.HTTPHeader{{Name: "x-set", Value: "1"}}, Add: []gatewayv1.HTTPHeader{{Name: "x-add", Value: "2"}}, Remove: []string{"x-rm"}}},
				{Type: gatewayv1.HTTPRouteFilterRequestMirror, RequestMirror: &gatewayv1.HTTPRequestMirrorFilter{
					BackendRef: gatewayv1.BackendObjectReference{Name: "mirror", Port: ptrTo(gatewayv1.PortNumber(80))},
					Fraction:   &gatewayv1.Fraction{Numerator: 1, Denominator: ptrTo(int32(4))}}},
			},
			BackendRefs: []gatewayv1.HTTPBackendRef{
				{BackendRef: gatewayv1.BackendRef{BackendObjectReference: gatewayv1.BackendObjectReference{Name: "web", Port: ptrTo(gatewayv1.PortNumber(80))}, Weight: ptrTo(int32(3))}},
				{BackendRef: gatewayv1.BackendRef{BackendObjectReference: gatewayv1.BackendObjectReference{Name: "other", Namespace: ptrTo(gatewayv1.Namespace("elsewhere")), Port: ptrTo(gatewayv1.PortNumber(80))}}},
				{BackendRef: gatewayv1.BackendRef{BackendObjectReference: gatewayv1.BackendObjectReference{Name: "absent", Port: ptrTo(gatewayv1.PortNumber(80))}}},
			},
			Timeouts: &gatewayv1.HTTPRouteTimeouts{Request: ptrTo(gatewayv1.Duration("10s")), BackendRequest: ptrTo(gatewayv1.Duration("1s500ms"))},
		},
		{
			Filters: []gatewayv1.HTTPRouteFilter{{Type: gatewayv1.HTTPRouteFilterRequestRedirect, RequestRedirect: &gatewayv1.HTTPRequestRedirectFilter{
				Scheme: ptrTo("https"), Hostname: ptrTo(gatewayv1.PreciseHostname("example.com")), StatusCode: ptrTo(301),
				Path: &gatewayv1.HTTPPathModifier{Type: gatewayv1.PrefixMatchHTTPPathModifier, ReplacePrefixMatch: ptrTo("/new")}}}},
			Matches: []gatewayv1.HTTPRouteMatch{{Path: &gatewayv1.HTTPPathMatch{Value: ptrTo("/old")}}},
		},
		{
			Filters:     []gatewayv1.HTTPRouteFilter{{Type: gatewayv1.HTTPRouteFilterExtensionRef, ExtensionRef: &gatewayv1.LocalObjectReference{Kind: "Foo", Name: "x"}}},
			Matches:     []gatewayv1.HTTPRouteMatch{{Path: &gatewayv1.HTTPPathMatch{Value: ptrTo("/ext")}}},
			BackendRefs: []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{BackendObjectReference: gatewayv1.BackendObjectReference{Name: "web", Port: ptrTo(gatewayv1.PortNumber(80))}}}},
		},
	}
	table := translated(t, Snapshot{Gateways: []*gatewayv1.Gateway{gw}, Routes: []*gatewayv1.HTTPRoute{r},
		Services: []*corev1.Service{service("ns", "web"), service("ns", "mirror"), service("elsewhere", "other")}},
		endpointSlice("ns", "web", 8080, "10.1.0.1"), endpointSlice("ns", "mirror", 8081, "10.1.0.5"))
	if len(table.Listeners) != 1 || len(table.Listeners[0].Hosts) != 1 {
		t.Fatalf("table %+v", table)
	}
	rs := table.Listeners[0].Hosts[0].Routes
	if len(rs) != 4 {
		t.Fatalf("%d routes, want 4 (two matches of rule 0, rules 1 and 2)", len(rs))
	}
	byMatch := map[[2]int]routes.Route{}
	for _, x := range rs {
		if x.Source.Kind != routes.SourceHTTPRoute || x.Source.Name != "r" || !x.Source.Created.Equal(r.CreationTimestamp.Time) {
			t.Errorf("source %+v", x.Source)
		}
		byMatch[[2]int{x.Source.Rule, x.Source.Match}] = x
	}
	first := byMatch[[2]int{0, 0}]
	wantMatch := routes.Match{Path: routes.PathMatch{Type: routes.PathExact, Value: "/exact"}, Method: "GET",
		Headers:     []routes.HeaderMatch{{Type: routes.ValueRegularExpression, Name: "x-v", Value: "v[0-9]"}},
		QueryParams: []routes.QueryParamMatch{{Type: routes.ValueExact, Name: "q", Value: "1"}}}
	if !equalMatch(first.Match, wantMatch) {
		t.Errorf("match %+v, want %+v", first.Match, wantMatch)
	}
	if m := byMatch[[2]int{0, 1}].Match; m.Path != (routes.PathMatch{Type: routes.PathPrefix, Value: "/"}) || m.Method != "" {
		t.Errorf("an empty match %+v, want every path", m)
	}
	if len(first.Filters) != 2 || first.Filters[0].RequestHeaderModifier.Set[0] != (routes.Header{Name: "x-set", Value: "1"}) ||
		first.Filters[0].RequestHeaderModifier.Add[0].Name != "x-add" || first.Filters[0].RequestHeaderModifier.Remove[0] != "x-rm" {
		t.Errorf("filters %+v", first.Filters)
	}
	if m := first.Filters[1].RequestMirror; m == nil || *m.Percent != 25 || m.Backend.Endpoints[0].Address != "10.1.0.5:8081" {
		t.Errorf("mirror %+v, want 1/4 = 25%% to the mirror's pods", m)
	}
	if b := first.Backends; len(b) != 3 || b[0].Weight != 3 || b[0].Invalid != "" || b[1].Weight != 1 || b[1].Invalid == "" || b[2].Invalid == "" {
		t.Errorf("backends %+v, want web weighted 3, the other namespace's not permitted and the absent one invalid", b)
	}
	if first.Timeouts != (routes.Timeouts{Request: 10 * time.Second, BackendRequest: 1500 * time.Millisecond}) {
		t.Errorf("timeouts %+v", first.Timeouts)
	}
	red := byMatch[[2]int{1, 0}]
	if len(red.Filters) != 1 || red.Filters[0].RequestRedirect == nil || *red.Filters[0].RequestRedirect.Scheme != "https" ||
		*red.Filters[0].RequestRedirect.Hostname != "example.com" || red.Filters[0].RequestRedirect.StatusCode != 301 ||
		red.Filters[0].RequestRedirect.Path.ReplacePrefixMatch != "/new" || red.Match.Path.Type != routes.PathPrefix {
		t.Errorf("redirect rule %+v", red)
	}
	if ext := byMatch[[2]int{2, 0}]; len(ext.Backends) != 1 || ext.Backends[0].Invalid == "" {
		t.Errorf("a rule with an unsupported filter %+v, want one invalid backend (500)", ext.Backends)
	}
}

func equalMatch(a, b routes.Match) bool {
	return a.Path == b.Path && a.Method == b.Method && slices.Equal(a.Headers, b.Headers) && slices.Equal(a.QueryParams, b.QueryParams)
}

func TestTranslateLeavesOutWhatIsNotAccepted(t *testing.T) {
	gw := makeGateway("infra", "gw").listener("http", 80, gatewayv1.HTTPProtocolType).obj()
	notAllowed := makeRoute("app", "r").parent("infra", "gw", "").backend("", "", "web").obj()
	table := translated(t, Snapshot{Gateways: []*gatewayv1.Gateway{gw}, Routes: []*gatewayv1.HTTPRoute{notAllowed}, Services: []*corev1.Service{service("app", "web")}})
	if len(table.Listeners) != 1 || len(table.Listeners[0].Hosts) != 0 {
		t.Errorf("table %+v, want port 80 open with no hosts: the route is not allowed by the listener", table)
	}
}

func TestIsolate(t *testing.T) {
	peers := []string{"*.example.com", "*.foo.example.com", "abc.foo.example.com"}
	cases := []struct {
		own    string
		served []string
		want   []string
	}{
		{"", []string{"bar.com", "*.example.com", "*.foo.example.com", "abc.foo.example.com", ""}, []string{"bar.com", ""}},
		{"*.example.com", []string{"*.example.com", "*.foo.example.com", "abc.foo.example.com"}, []string{"*.example.com"}},
		{"*.foo.example.com", []string{"*.foo.example.com", "abc.foo.example.com"}, []string{"*.foo.example.com"}},
		{"abc.foo.example.com", []string{"abc.foo.example.com"}, []string{"abc.foo.example.com"}},
	}
	for _, c := range cases {
		if got := isolate(c.served, c.own, append(peers, "")); !slices.Equal(got, c.want) {
			t.Errorf("isolate(%v, %q) = %v, want %v", c.served, c.own, got, c.want)
		}
	}
}
