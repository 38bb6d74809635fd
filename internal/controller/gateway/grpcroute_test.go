package gateway

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/skiff-sh/skiff/internal/ingress/routes"
)

func TestGRPCPath(t *testing.T) {
	exact, re := ptrTo(gatewayv1.GRPCMethodMatchExact), ptrTo(gatewayv1.GRPCMethodMatchRegularExpression)
	cases := []struct {
		m    *gatewayv1.GRPCMethodMatch
		want routes.PathMatch
	}{
		{nil, routes.PathMatch{Type: routes.PathPrefix, Value: "/"}},
		{&gatewayv1.GRPCMethodMatch{Service: ptrTo("echo.Echo"), Method: ptrTo("Say")}, routes.PathMatch{Type: routes.PathExact, Value: "/echo.Echo/Say"}},
		{&gatewayv1.GRPCMethodMatch{Type: exact, Service: ptrTo("echo.Echo")}, routes.PathMatch{Type: routes.PathPrefix, Value: "/echo.Echo"}},
		{&gatewayv1.GRPCMethodMatch{Type: exact, Method: ptrTo("Say.It")}, routes.PathMatch{Type: routes.PathRegularExpression, Value: `/[^/]+/Say\.It`}},
		{&gatewayv1.GRPCMethodMatch{Type: re, Service: ptrTo("echo\\..*")}, routes.PathMatch{Type: routes.PathRegularExpression, Value: `/(?:echo\..*)/(?:[^/]+)`}},
		{&gatewayv1.GRPCMethodMatch{Type: re, Method: ptrTo("S.*")}, routes.PathMatch{Type: routes.PathRegularExpression, Value: `/(?:[^/]+)/(?:S.*)`}},
	}
	for _, c := range cases {
		if got := grpcPath(c.m); got != c.want {
			t.Errorf("grpcPath(%+v) = %+v, want %+v", c.m, got, c.want)
		}
	}
}

func grpcRoute(ns, name, gateway string, rules ...gatewayv1.GRPCRouteRule) *gatewayv1.GRPCRoute {
	return &gatewayv1.GRPCRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Generation: 3},
		Spec: gatewayv1.GRPCRouteSpec{CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Name: gatewayv1.ObjectName(gateway)}}},
			Rules: rules}}
}

func grpcBackend(name string, port int32) gatewayv1.GRPCBackendRef {
	return gatewayv1.GRPCBackendRef{BackendRef: gatewayv1.BackendRef{BackendObjectReference: gatewayv1.BackendObjectReference{
		Name: gatewayv1.ObjectName(name), Port: ptrTo(gatewayv1.PortNumber(port))}}}
}

// TestGRPCRoute: a GRPCRoute attaches to a listener that takes GRPCRoutes (every HTTP listener
// does unless its allowedRoutes names kinds without it), gets the parents status an HTTPRoute
// gets, and becomes routes on /service/method whose backends speak h2c, mirrors included.
func TestGRPCRoute(t *testing.T) {
	gw := makeGateway("infra", "gw").listener("http", 80, gatewayv1.HTTPProtocolType).obj()
	httpOnly := makeGateway("infra", "http-only").listener("http", 8080, gatewayv1.HTTPProtocolType, kinds("HTTPRoute")).obj()
	mirror := gatewayv1.GRPCRouteFilter{Type: gatewayv1.GRPCRouteFilterRequestMirror, RequestMirror: &gatewayv1.HTTPRequestMirrorFilter{
		BackendRef: gatewayv1.BackendObjectReference{Name: "shadow", Port: ptrTo(gatewayv1.PortNumber(9000))}}}
	r := grpcRoute("infra", "echo", "gw", gatewayv1.GRPCRouteRule{
		Matches:     []gatewayv1.GRPCRouteMatch{{Method: &gatewayv1.GRPCMethodMatch{Service: ptrTo("echo.Echo"), Method: ptrTo("Say")}}},
		Filters:     []gatewayv1.GRPCRouteFilter{mirror},
		BackendRefs: []gatewayv1.GRPCBackendRef{grpcBackend("echo", 9000)},
	})
	refused := grpcRoute("infra", "refused", "http-only", gatewayv1.GRPCRouteRule{BackendRefs: []gatewayv1.GRPCBackendRef{grpcBackend("echo", 9000)}})
	svc := func(name string) *corev1.Service {
		s := service("infra", name)
		s.Spec.Ports = []corev1.ServicePort{{Port: 9000, Protocol: corev1.ProtocolTCP}}
		return s
	}
	s := Snapshot{Now: now, Classes: []*gatewayv1.GatewayClass{class(ClassName, ControllerName)}, Gateways: []*gatewayv1.Gateway{gw, httpOnly},
		GRPCRoutes: []*gatewayv1.GRPCRoute{r, refused}, Services: []*corev1.Service{svc("echo"), svc("shadow")}, Nodes: []*corev1.Node{readyNode("n1", "10.0.0.1")}}
	plan := Decide(s)
	for name, want := range map[string]condition{"echo": {metav1.ConditionTrue, "Accepted"}, "refused": {metav1.ConditionFalse, "NotAllowedByListeners"}} {
		st, ok := plan.GRPCRoutes[types.NamespacedName{Namespace: "infra", Name: name}]
		if !ok || len(st.Parents) != 1 {
			t.Fatalf("grpcroute %s status %+v", name, st)
		}
		if got := conditionOf(t, st.Parents[0].Conditions, "Accepted", 3); got != want {
			t.Errorf("grpcroute %s Accepted %+v, want %+v", name, got, want)
		}
	}
	if n := plan.Gateways[types.NamespacedName{Namespace: "infra", Name: "gw"}].Listeners[0].AttachedRoutes; n != 1 {
		t.Errorf("attachedRoutes %d, want 1", n)
	}
	eps := []*discoveryv1.EndpointSlice{endpointSlice("infra", "echo", 9000, "10.1.0.5"), endpointSlice("infra", "shadow", 9000, "10.1.0.6")}
	tbl := Translate(TranslateInput{Plan: plan, GRPCRoutes: s.GRPCRoutes, Services: s.Services, Slices: eps})
	if len(tbl.Listeners) != 2 || tbl.Listeners[0].Port != 80 || len(tbl.Listeners[0].Hosts) != 1 || len(tbl.Listeners[0].Hosts[0].Routes) != 1 ||
		len(tbl.Listeners[1].Hosts) != 0 {
		t.Fatalf("table %+v, want one route on port 80 and none on 8080", tbl)
	}
	rt := tbl.Listeners[0].Hosts[0].Routes[0]
	if rt.Source.Kind != routes.SourceGRPCRoute || rt.Match.Path != (routes.PathMatch{Type: routes.PathExact, Value: "/echo.Echo/Say"}) {
		t.Errorf("route %+v", rt)
	}
	if len(rt.Backends) != 1 || rt.Backends[0].Protocol != routes.BackendH2C || len(rt.Backends[0].Endpoints) != 1 {
		t.Errorf("backends %+v, want echo over h2c", rt.Backends)
	}
	if len(rt.Filters) != 1 || rt.Filters[0].RequestMirror == nil || rt.Filters[0].RequestMirror.Backend.Protocol != routes.BackendH2C {
		t.Errorf("filters %+v, want a mirror over h2c", rt.Filters)
	}
}
