package gateway

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// routeObject is what a decision reads of a route, HTTPRoute or GRPCRoute: both attach to
// listeners the same way and resolve backendRefs to Services the same way.
type routeObject struct {
	kind       gatewayv1.Kind
	namespace  string
	name       string
	generation int64
	parentRefs []gatewayv1.ParentReference
	hostnames  []gatewayv1.Hostname
	// backends are every backendRef, request mirrors' included.
	backends []gatewayv1.BackendObjectReference
	parents  []gatewayv1.RouteParentStatus
}

func httpRouteObject(r *gatewayv1.HTTPRoute) routeObject {
	o := routeObject{kind: kindHTTPRoute, namespace: r.Namespace, name: r.Name, generation: r.Generation,
		parentRefs: r.Spec.ParentRefs, hostnames: r.Spec.Hostnames, parents: r.Status.Parents}
	for _, rule := range r.Spec.Rules {
		for _, b := range rule.BackendRefs {
			o.backends = append(o.backends, b.BackendObjectReference)
			o.backends = append(o.backends, mirrors(b.Filters)...)
		}
		o.backends = append(o.backends, mirrors(rule.Filters)...)
	}
	return o
}

func grpcRouteObject(r *gatewayv1.GRPCRoute) routeObject {
	o := routeObject{kind: kindGRPCRoute, namespace: r.Namespace, name: r.Name, generation: r.Generation,
		parentRefs: r.Spec.ParentRefs, hostnames: r.Spec.Hostnames, parents: r.Status.Parents}
	for _, rule := range r.Spec.Rules {
		for _, b := range rule.BackendRefs {
			o.backends = append(o.backends, b.BackendObjectReference)
			o.backends = append(o.backends, grpcMirrors(b.Filters)...)
		}
		o.backends = append(o.backends, grpcMirrors(rule.Filters)...)
	}
	return o
}

// decideRoute computes the route's parents status: one entry per parentRef to a Gateway of
// skiff's classes (entries of other controllers are kept as they are), and the listeners it
// attaches to, counted on them. It returns nil parents when no parentRef is skiff's.
func decideRoute(ix *index, gateways map[types.NamespacedName]*gatewayState, r routeObject) ([]gatewayv1.RouteParentStatus, []Attachment) {
	var parents []gatewayv1.RouteParentStatus
	var attached []Attachment
	ours := false
	refsOK, refsReason, refsMsg := backendRefs(ix, r)
	for _, ref := range r.parentRefs {
		if (ref.Group != nil && *ref.Group != group) || (ref.Kind != nil && *ref.Kind != "Gateway") {
			continue
		}
		ns := r.namespace
		if ref.Namespace != nil {
			ns = string(*ref.Namespace)
		}
		g := gateways[nn(ns, string(ref.Name))]
		if g == nil {
			continue
		}
		ours = true
		var conds []metav1.Condition
		if prev := previousParent(r, ref); prev != nil {
			conds = slices.Clone(prev.Conditions)
		}
		reason, msg, att := attach(ix, g, r, ref)
		setCondition(&conds, ix.s.Now, r.generation, string(gatewayv1.RouteConditionAccepted), reason == string(gatewayv1.RouteReasonAccepted), reason, msg)
		setCondition(&conds, ix.s.Now, r.generation, string(gatewayv1.RouteConditionResolvedRefs), refsOK, refsReason, refsMsg)
		parents = append(parents, gatewayv1.RouteParentStatus{ParentRef: ref, ControllerName: ControllerName, Conditions: conds})
		attached = append(attached, att...)
	}
	if !ours {
		return nil, nil
	}
	for _, p := range r.parents {
		if p.ControllerName != ControllerName {
			parents = append(parents, p)
		}
	}
	return parents, attached
}

func previousParent(r routeObject, ref gatewayv1.ParentReference) *gatewayv1.RouteParentStatus {
	for i, p := range r.parents {
		if p.ControllerName == ControllerName && sameParent(p.ParentRef, ref) {
			return &r.parents[i]
		}
	}
	return nil
}

func sameParent(a, b gatewayv1.ParentReference) bool {
	return a.Name == b.Name && eqPtr(a.Namespace, b.Namespace) && eqPtr(a.SectionName, b.SectionName) && eqPtr(a.Port, b.Port)
}

func eqPtr[T comparable](a, b *T) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// attach finds the Gateway's listeners that take the route through ref: ones the ref names
// (sectionName, port), accepted, taking HTTPRoutes from the route's namespace, with a hostname
// in common. The reason is Accepted, or why none does, in the order the specification checks:
// no listener named (NoMatchingParent), none allowing the route (NotAllowedByListeners), none
// with a common hostname (NoMatchingListenerHostname).
func attach(ix *index, g *gatewayState, r routeObject, ref gatewayv1.ParentReference) (string, string, []Attachment) {
	var named, allowed []*listenerState
	for _, ls := range g.listeners {
		if (ref.SectionName != nil && *ref.SectionName != ls.l.Name) || (ref.Port != nil && *ref.Port != ls.l.Port) {
			continue
		}
		named = append(named, ls)
		if ls.accepted && ls.takes(r.kind) && ls.admits(ix, g.gw.Namespace, r.namespace) {
			allowed = append(allowed, ls)
		}
	}
	if len(named) == 0 {
		return string(gatewayv1.RouteReasonNoMatchingParent), "no listener of the Gateway matches the parentRef's sectionName and port", nil
	}
	if len(allowed) == 0 {
		return string(gatewayv1.RouteReasonNotAllowedByListeners), "no listener of the Gateway allows this route", nil
	}
	var out []Attachment
	matched := false
	for _, ls := range allowed {
		hosts, ok := intersectHostnames(ls.l.Hostname, r.hostnames)
		if !ok {
			continue
		}
		matched = true
		ls.attached++
		for _, addr := range g.addresses() {
			out = append(out, Attachment{Gateway: nn(g.gw.Namespace, g.gw.Name), Listener: ls.l.Name, Address: addr, Port: ls.l.Port,
				Protocol: ls.l.Protocol, Kind: r.kind, Route: nn(r.namespace, r.name), Hostnames: hosts})
		}
	}
	if !matched {
		return string(gatewayv1.RouteReasonNoMatchingListenerHostname), "no listener's hostname matches the route's hostnames", nil
	}
	return string(gatewayv1.RouteReasonAccepted), "", out
}

// intersectHostnames returns the hostnames a route serves on a listener: the route's that the
// listener's hostname matches (or the listener's, when it is the narrower wildcard), all of the
// route's when the listener has none, the listener's when the route has none. False: none.
func intersectHostnames(listener *gatewayv1.Hostname, route []gatewayv1.Hostname) ([]string, bool) {
	if listener == nil || *listener == "" {
		out := make([]string, 0, len(route))
		for _, h := range route {
			out = append(out, string(h))
		}
		return out, true
	}
	l := string(*listener)
	if len(route) == 0 {
		return []string{l}, true
	}
	var out []string
	for _, h := range route {
		switch rh := string(h); {
		case hostnameMatches(l, rh):
			out = append(out, rh)
		case hostnameMatches(rh, l):
			out = append(out, l)
		}
	}
	slices.Sort(out)
	out = slices.Compact(out)
	return out, len(out) > 0
}

// hostnameMatches says whether pattern covers host: equal, or pattern is *.suffix and host ends
// with .suffix with at least one label before it (a wildcard never matches its bare suffix).
func hostnameMatches(pattern, host string) bool {
	if pattern == host {
		return true
	}
	suffix, ok := strings.CutPrefix(pattern, "*")
	if !ok {
		return false
	}
	h := strings.TrimPrefix(host, "*")
	return strings.HasSuffix(h, suffix) && len(h) > len(suffix)
}

// backendRefs resolves every backendRef of the route (rules' and request mirrors'): each must
// be a core Service (InvalidKind), in the route's namespace or permitted by a ReferenceGrant
// (RefNotPermitted), that exists (BackendNotFound). The first that fails gives the reason.
func backendRefs(ix *index, r routeObject) (bool, string, string) {
	for _, ref := range r.backends {
		g, kind, ns := target(ref.Group, ref.Kind, ref.Namespace, "Service", r.namespace)
		switch {
		case g != "" || kind != "Service":
			return false, string(gatewayv1.RouteReasonInvalidKind), fmt.Sprintf("backendRef %s/%s %s: only core Services are served", g, kind, ref.Name)
		case ns != r.namespace && !ix.granted(r.kind, r.namespace, "", "Service", ns, string(ref.Name)):
			return false, string(gatewayv1.RouteReasonRefNotPermitted), fmt.Sprintf("no ReferenceGrant in %s lets %ss of %s use Service %s", ns, r.kind, r.namespace, ref.Name)
		case ix.services[nn(ns, string(ref.Name))] == nil:
			return false, string(gatewayv1.RouteReasonBackendNotFound), fmt.Sprintf("Service %s/%s not found", ns, ref.Name)
		}
	}
	return true, string(gatewayv1.RouteReasonResolvedRefs), ""
}

func mirrors(filters []gatewayv1.HTTPRouteFilter) []gatewayv1.BackendObjectReference {
	var out []gatewayv1.BackendObjectReference
	for _, f := range filters {
		if f.Type == gatewayv1.HTTPRouteFilterRequestMirror && f.RequestMirror != nil {
			out = append(out, f.RequestMirror.BackendRef)
		}
	}
	return out
}

func grpcMirrors(filters []gatewayv1.GRPCRouteFilter) []gatewayv1.BackendObjectReference {
	var out []gatewayv1.BackendObjectReference
	for _, f := range filters {
		if f.Type == gatewayv1.GRPCRouteFilterRequestMirror && f.RequestMirror != nil {
			out = append(out, f.RequestMirror.BackendRef)
		}
	}
	return out
}
