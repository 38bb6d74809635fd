package gateway

import (
	"fmt"
	"regexp"

	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/skiff-sh/skiff/internal/ingress/routes"
)

// translateGRPCRoute is a GRPCRoute's rules as table routes, one per match: a method match
// becomes a path match on /service/method (gRPC's path), header matches stay header matches, and
// every backend is reached over HTTP/2 in cleartext, as gRPC needs (TLS to backends is
// BackendTLSPolicy's, which skiff does not serve).
func translateGRPCRoute(ix *index, slicesOf map[types.NamespacedName][]*discoveryv1.EndpointSlice, r *gatewayv1.GRPCRoute) []routes.Route {
	var out []routes.Route
	from := referrer{kindGRPCRoute, r.Namespace}
	for ri, rule := range r.Spec.Rules {
		filters, unsupported := translateFilters(ix, slicesOf, from, httpFilters(rule.Filters))
		h2c(filters)
		var backends []routes.Backend
		for _, b := range rule.BackendRefs {
			be := weightedBackend(ix, slicesOf, from, b.BackendRef, httpFilters(b.Filters))
			be.Protocol = routes.BackendH2C
			h2c(be.Filters)
			backends = append(backends, be)
		}
		if unsupported != "" {
			backends = []routes.Backend{{Name: "unsupported", Weight: 1, Invalid: unsupported}}
		}
		matches := rule.Matches
		if len(matches) == 0 {
			matches = []gatewayv1.GRPCRouteMatch{{}}
		}
		for mi, m := range matches {
			out = append(out, routes.Route{
				Source:   routes.Source{Kind: routes.SourceGRPCRoute, Namespace: r.Namespace, Name: r.Name, Created: r.CreationTimestamp.Time, Rule: ri, Match: mi},
				Match:    grpcMatchOf(m),
				Filters:  filters,
				Backends: backends,
			})
		}
	}
	return out
}

// grpcMatchOf maps a GRPCRoute match: an Exact method match on service and method is the
// exact path /service/method, on the service alone the path prefix /service, on the method
// alone (or any RegularExpression match) a regular expression over the path.
func grpcMatchOf(m gatewayv1.GRPCRouteMatch) routes.Match {
	out := routes.Match{Path: grpcPath(m.Method)}
	for _, h := range m.Headers {
		t := routes.ValueExact
		if h.Type != nil {
			t = routes.ValueMatchType(*h.Type)
		}
		out.Headers = append(out.Headers, routes.HeaderMatch{Type: t, Name: string(h.Name), Value: h.Value})
	}
	return out
}

func grpcPath(m *gatewayv1.GRPCMethodMatch) routes.PathMatch {
	if m == nil || (ptrValue(m.Service) == "" && ptrValue(m.Method) == "") {
		return routes.PathMatch{Type: routes.PathPrefix, Value: "/"}
	}
	service, method := ptrValue(m.Service), ptrValue(m.Method)
	if m.Type == nil || *m.Type == gatewayv1.GRPCMethodMatchExact {
		switch {
		case method == "":
			return routes.PathMatch{Type: routes.PathPrefix, Value: "/" + service}
		case service != "":
			return routes.PathMatch{Type: routes.PathExact, Value: "/" + service + "/" + method}
		}
		return routes.PathMatch{Type: routes.PathRegularExpression, Value: "/[^/]+/" + regexp.QuoteMeta(method)}
	}
	if service == "" {
		service = "[^/]+"
	}
	if method == "" {
		method = "[^/]+"
	}
	return routes.PathMatch{Type: routes.PathRegularExpression, Value: fmt.Sprintf("/(?:%s)/(?:%s)", service, method)}
}

// httpFilters are a GRPCRoute's filters in HTTPRoute's shape: the header modifiers and request
// mirrors are the same; an extension reference stays one, which translateFilters refuses.
func httpFilters(fs []gatewayv1.GRPCRouteFilter) []gatewayv1.HTTPRouteFilter {
	out := make([]gatewayv1.HTTPRouteFilter, 0, len(fs))
	for _, f := range fs {
		out = append(out, gatewayv1.HTTPRouteFilter{Type: gatewayv1.HTTPRouteFilterType(f.Type), RequestHeaderModifier: f.RequestHeaderModifier,
			ResponseHeaderModifier: f.ResponseHeaderModifier, RequestMirror: f.RequestMirror, ExtensionRef: f.ExtensionRef})
	}
	return out
}

// h2c makes the request mirrors of a GRPCRoute's filters speak gRPC's HTTP/2 too.
func h2c(fs []routes.Filter) {
	for i := range fs {
		if fs[i].RequestMirror != nil {
			fs[i].RequestMirror.Backend.Protocol = routes.BackendH2C
		}
	}
}
