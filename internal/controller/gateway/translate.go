package gateway

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/skiff-sh/skiff/internal/ingress/routes"
)

// TranslateInput is what the data plane's Gateway table is built from: a Plan (which listeners
// are programmed and which routes they accept, Decide's) and the objects the routes name.
type TranslateInput struct {
	Plan       Plan
	Routes     []*gatewayv1.HTTPRoute
	GRPCRoutes []*gatewayv1.GRPCRoute
	Grants     []*gatewayv1.ReferenceGrant
	Services   []*corev1.Service
	Slices     []*discoveryv1.EndpointSlice
	Secrets    []*corev1.Secret
	// Holds says whether this node holds a Gateway's own address (Holder's election): the
	// listeners of an address another node holds are left out. Nil: every address.
	Holds func(address string) bool
}

// Translate builds the data plane's table for the Gateways of skiff's classes: one Listener per
// address and port (Gateway listeners sharing them are merged: certificates by SNI, routes by
// virtual host; a Gateway with an address of its own shares it with no other), the certificates of each HTTPS listener for its hostname, and for every accepted route
// one virtual host per hostname it serves on the listener, with one Route per match of each
// rule. A backendRef that is not a permitted Service stays as an invalid backend (answered 500,
// as the specification asks); filters skiff does not implement (CORS, external auth,
// extension refs) make the rule answer 500 rather than serve without them.
func Translate(in TranslateInput) routes.Table {
	ix := newIndex(&Snapshot{Grants: in.Grants, Services: in.Services, Secrets: in.Secrets})
	slicesOf := map[types.NamespacedName][]*discoveryv1.EndpointSlice{}
	for _, s := range in.Slices {
		k := nn(s.Namespace, s.Labels[discoveryv1.LabelServiceName])
		slicesOf[k] = append(slicesOf[k], s)
	}
	routesByKey := map[types.NamespacedName]*gatewayv1.HTTPRoute{}
	for _, r := range in.Routes {
		routesByKey[nn(r.Namespace, r.Name)] = r
	}
	grpcByKey := map[types.NamespacedName]*gatewayv1.GRPCRoute{}
	for _, r := range in.GRPCRoutes {
		grpcByKey[nn(r.Namespace, r.Name)] = r
	}
	var tables []routes.Table
	type listenerKey struct {
		gateway  types.NamespacedName
		listener gatewayv1.SectionName
		address  string
	}
	programmed := map[listenerKey]string{} // the listener's hostname
	// hostnames are the programmed listeners' hostnames on each address and port.
	hostnames := map[routes.ListenerKey][]string{}
	held := func(address string) bool { return address == "" || in.Holds == nil || in.Holds(address) }
	for _, l := range in.Plan.Listeners {
		if !held(l.Address) {
			continue
		}
		programmed[listenerKey{l.Gateway, l.Name, l.Address}] = l.Hostname
		tl := routes.Listener{Name: fmt.Sprintf("%s/%s", l.Gateway, l.Name), Address: l.Address, Port: int32(l.Port), Protocol: routes.ProtocolHTTP}
		if l.Protocol == gatewayv1.HTTPSProtocolType {
			tl.Protocol = routes.ProtocolHTTPS
			tl.Certificates = certificatesOf(ix, l)
		}
		if l.Hostname != "" {
			// The listener's own host, even without routes: a request for it is the listener's
			// (404 when none of its routes matches), never a less specific listener's.
			tl.Hosts = []routes.VirtualHost{{Hostname: strings.ToLower(l.Hostname)}}
			hostnames[tl.Key()] = append(hostnames[tl.Key()], l.Hostname)
		}
		tables = append(tables, routes.Table{Listeners: []routes.Listener{tl}})
	}
	for _, a := range in.Plan.Attachments {
		// A route attached to a listener that is not programmed (a certificate missing) waits
		// with it: the port is not opened for it.
		own, ok := programmed[listenerKey{a.Gateway, a.Listener, a.Address}]
		if !ok {
			continue
		}
		var rs []routes.Route
		switch a.Kind {
		case kindGRPCRoute:
			if r := grpcByKey[a.Route]; r != nil {
				rs = translateGRPCRoute(ix, slicesOf, r)
			}
		default:
			if r := routesByKey[a.Route]; r != nil {
				rs = translateRoute(ix, slicesOf, r)
			}
		}
		if rs == nil {
			continue
		}
		served := a.Hostnames
		if len(served) == 0 {
			served = []string{""}
		}
		var hosts []routes.VirtualHost
		for _, h := range isolate(served, own, hostnames[routes.ListenerKey{Address: a.Address, Port: int32(a.Port)}]) {
			hosts = append(hosts, routes.VirtualHost{Hostname: strings.ToLower(h), Routes: rs})
		}
		tables = append(tables, routes.Table{Listeners: []routes.Listener{{Name: fmt.Sprintf("%s/%s", a.Gateway, a.Listener), Address: a.Address, Port: int32(a.Port), Hosts: hosts}}})
	}
	return routes.Merge(tables...)
}

// isolate keeps the hostnames a route serves through a listener of hostname own that no more
// specific listener on the same address and port (of hostnames peers) claims: a request is the
// most specific matching listener's alone (GatewayHTTPListenerIsolation), so a route of the
// catch-all listener naming "*.foo.example.com" does not answer where a listener
// "*.foo.example.com" exists.
func isolate(served []string, own string, peers []string) []string {
	out := make([]string, 0, len(served))
	for _, h := range served {
		claimed := slices.ContainsFunc(peers, func(p string) bool {
			return p != own && moreSpecificListener(p, own) && hostnameMatches(p, h)
		})
		if !claimed {
			out = append(out, h)
		}
	}
	return out
}

// moreSpecificListener orders listener hostnames: an exact name before any wildcard, a longer
// wildcard before a shorter one, any hostname before none.
func moreSpecificListener(a, b string) bool {
	switch aw, bw := strings.HasPrefix(a, "*"), strings.HasPrefix(b, "*"); {
	case b == "":
		return a != ""
	case a == "":
		return false
	case !aw && bw:
		return true
	case aw && bw:
		return len(a) > len(b)
	}
	return false
}

// certificatesOf parses a programmed HTTPS listener's Secrets; Decide has checked them, so one
// that fails now (changed since) is left out.
func certificatesOf(ix *index, l ProgrammedListener) []routes.Certificate {
	var out []routes.Certificate
	for _, ref := range l.CertificateRefs {
		sec := ix.secrets[ref]
		if sec == nil {
			continue
		}
		c, err := routes.ParseCertificate(sec.Data[corev1.TLSCertKey], sec.Data[corev1.TLSPrivateKeyKey])
		if err != nil {
			continue
		}
		cert := routes.Certificate{Source: "Secret " + ref.String(), Cert: c}
		if l.Hostname != "" {
			cert.Hostnames = []string{l.Hostname}
		}
		out = append(out, cert)
	}
	return out
}

// translateRoute is a route's rules as table routes: one per match (a rule without matches
// matches every request, as a PathPrefix "/").
func translateRoute(ix *index, slicesOf map[types.NamespacedName][]*discoveryv1.EndpointSlice, r *gatewayv1.HTTPRoute) []routes.Route {
	var out []routes.Route
	from := referrer{kindHTTPRoute, r.Namespace}
	for ri, rule := range r.Spec.Rules {
		filters, unsupported := translateFilters(ix, slicesOf, from, rule.Filters)
		var backends []routes.Backend
		for _, b := range rule.BackendRefs {
			backends = append(backends, weightedBackend(ix, slicesOf, from, b.BackendRef, b.Filters))
		}
		if unsupported != "" {
			backends = []routes.Backend{{Name: "unsupported", Weight: 1, Invalid: unsupported}}
		}
		timeouts := timeoutsOf(rule.Timeouts)
		matches := rule.Matches
		if len(matches) == 0 {
			matches = []gatewayv1.HTTPRouteMatch{{}}
		}
		for mi, m := range matches {
			out = append(out, routes.Route{
				Source:   routes.Source{Kind: routes.SourceHTTPRoute, Namespace: r.Namespace, Name: r.Name, Created: r.CreationTimestamp.Time, Rule: ri, Match: mi},
				Match:    matchOf(m),
				Filters:  filters,
				Backends: backends,
				Timeouts: timeouts,
			})
		}
	}
	return out
}

func matchOf(m gatewayv1.HTTPRouteMatch) routes.Match {
	out := routes.Match{Path: routes.PathMatch{Type: routes.PathPrefix, Value: "/"}}
	if m.Path != nil {
		if m.Path.Type != nil {
			out.Path.Type = routes.PathMatchType(*m.Path.Type)
		}
		if m.Path.Value != nil {
			out.Path.Value = *m.Path.Value
		}
	}
	for _, h := range m.Headers {
		t := routes.ValueExact
		if h.Type != nil {
			t = routes.ValueMatchType(*h.Type)
		}
		out.Headers = append(out.Headers, routes.HeaderMatch{Type: t, Name: string(h.Name), Value: h.Value})
	}
	for _, q := range m.QueryParams {
		t := routes.ValueExact
		if q.Type != nil {
			t = routes.ValueMatchType(*q.Type)
		}
		out.QueryParams = append(out.QueryParams, routes.QueryParamMatch{Type: t, Name: string(q.Name), Value: q.Value})
	}
	if m.Method != nil {
		out.Method = string(*m.Method)
	}
	return out
}

// referrer is the route a backendRef belongs to: its kind and namespace decide which
// ReferenceGrants permit another namespace's Service.
type referrer struct {
	kind      gatewayv1.Kind
	namespace string
}

// weightedBackend is one backendRef of a rule (HTTPRoute's or GRPCRoute's) with its weight (1
// when unset) and its own filters; a filter skiff does not implement makes it invalid.
func weightedBackend(ix *index, slicesOf map[types.NamespacedName][]*discoveryv1.EndpointSlice, from referrer, ref gatewayv1.BackendRef, filters []gatewayv1.HTTPRouteFilter) routes.Backend {
	be := backendOf(ix, slicesOf, from, ref.BackendObjectReference)
	be.Weight = 1
	if ref.Weight != nil {
		be.Weight = *ref.Weight
	}
	var unsupported string
	be.Filters, unsupported = translateFilters(ix, slicesOf, from, filters)
	if unsupported != "" && be.Invalid == "" {
		be.Invalid = unsupported
	}
	return be
}

// backendOf is a backendRef's backend: a core Service the route may use (its namespace, or one
// whose ReferenceGrant permits it), with its endpoints; anything else is invalid.
func backendOf(ix *index, slicesOf map[types.NamespacedName][]*discoveryv1.EndpointSlice, r referrer, ref gatewayv1.BackendObjectReference) routes.Backend {
	g, kind, ns := target(ref.Group, ref.Kind, ref.Namespace, "Service", r.namespace)
	port := routes.ServicePort{}
	if ref.Port != nil {
		port.Number = int32(*ref.Port)
	}
	name := string(ref.Name)
	switch {
	case g != "" || kind != "Service":
		return routes.Backend{Name: fmt.Sprintf("%s/%s %s/%s", g, kind, ns, name), Weight: 1, Invalid: fmt.Sprintf("backendRef of kind %s/%s is not supported", g, kind)}
	case ns != r.namespace && !ix.granted(r.kind, r.namespace, "", "Service", ns, name):
		return routes.Backend{Name: ns + "/" + name, Weight: 1, Invalid: fmt.Sprintf("no ReferenceGrant in %s permits Service %s", ns, name)}
	}
	return routes.ServiceBackend(ns, name, port, ix.services[nn(ns, name)], slicesOf[nn(ns, name)])
}

// translateFilters maps the filters the data plane implements; the second result names the
// first it does not (the rule, or the backend, then answers 500).
func translateFilters(ix *index, slicesOf map[types.NamespacedName][]*discoveryv1.EndpointSlice, r referrer, fs []gatewayv1.HTTPRouteFilter) ([]routes.Filter, string) {
	var out []routes.Filter
	for _, f := range fs {
		switch {
		case f.Type == gatewayv1.HTTPRouteFilterRequestHeaderModifier && f.RequestHeaderModifier != nil:
			out = append(out, routes.Filter{Type: routes.FilterRequestHeaderModifier, RequestHeaderModifier: headerModifier(f.RequestHeaderModifier)})
		case f.Type == gatewayv1.HTTPRouteFilterResponseHeaderModifier && f.ResponseHeaderModifier != nil:
			out = append(out, routes.Filter{Type: routes.FilterResponseHeaderModifier, ResponseHeaderModifier: headerModifier(f.ResponseHeaderModifier)})
		case f.Type == gatewayv1.HTTPRouteFilterRequestRedirect && f.RequestRedirect != nil:
			rr := f.RequestRedirect
			red := &routes.Redirect{Scheme: rr.Scheme, Path: pathModifier(rr.Path)}
			if rr.Hostname != nil {
				red.Hostname = ptrTo(string(*rr.Hostname))
			}
			if rr.Port != nil {
				red.Port = ptrTo(int32(*rr.Port))
			}
			if rr.StatusCode != nil {
				red.StatusCode = *rr.StatusCode
			}
			out = append(out, routes.Filter{Type: routes.FilterRequestRedirect, RequestRedirect: red})
		case f.Type == gatewayv1.HTTPRouteFilterURLRewrite && f.URLRewrite != nil:
			rw := &routes.URLRewrite{Path: pathModifier(f.URLRewrite.Path)}
			if f.URLRewrite.Hostname != nil {
				rw.Hostname = ptrTo(string(*f.URLRewrite.Hostname))
			}
			out = append(out, routes.Filter{Type: routes.FilterURLRewrite, URLRewrite: rw})
		case f.Type == gatewayv1.HTTPRouteFilterRequestMirror && f.RequestMirror != nil:
			m := &routes.Mirror{Backend: backendOf(ix, slicesOf, r, f.RequestMirror.BackendRef), Percent: mirrorPercent(f.RequestMirror)}
			out = append(out, routes.Filter{Type: routes.FilterRequestMirror, RequestMirror: m})
		default:
			return out, fmt.Sprintf("filter %s is not supported", f.Type)
		}
	}
	return out, ""
}

func headerModifier(h *gatewayv1.HTTPHeaderFilter) *routes.HeaderModifier {
	out := &routes.HeaderModifier{Remove: slices.Clone(h.Remove)}
	for _, s := range h.Set {
		out.Set = append(out.Set, routes.Header{Name: string(s.Name), Value: s.Value})
	}
	for _, a := range h.Add {
		out.Add = append(out.Add, routes.Header{Name: string(a.Name), Value: a.Value})
	}
	return out
}

func pathModifier(p *gatewayv1.HTTPPathModifier) *routes.PathModifier {
	if p == nil {
		return nil
	}
	out := &routes.PathModifier{Type: routes.PathModifierType(p.Type)}
	if p.ReplaceFullPath != nil {
		out.ReplaceFullPath = *p.ReplaceFullPath
	}
	if p.ReplacePrefixMatch != nil {
		out.ReplacePrefixMatch = *p.ReplacePrefixMatch
	}
	return out
}

// mirrorPercent is a mirror's share of requests in percent: percent, or the fraction rounded
// down (denominator 100 by default); nil (all) when neither is set.
func mirrorPercent(m *gatewayv1.HTTPRequestMirrorFilter) *int32 {
	switch {
	case m.Percent != nil:
		return ptrTo(*m.Percent)
	case m.Fraction != nil:
		den := cmp.Or(ptrValue(m.Fraction.Denominator), 100)
		return ptrTo(m.Fraction.Numerator * 100 / den)
	}
	return nil
}

func ptrValue[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// timeoutsOf parses a rule's timeouts (Gateway API durations are Go durations' subset); one
// that does not parse, or "0s" (no timeout), leaves that bound out.
func timeoutsOf(t *gatewayv1.HTTPRouteTimeouts) routes.Timeouts {
	var out routes.Timeouts
	if t == nil {
		return out
	}
	parse := func(d *gatewayv1.Duration) time.Duration {
		if d == nil {
			return 0
		}
		v, err := time.ParseDuration(string(*d))
		if err != nil || v < 0 {
			return 0
		}
		return v
	}
	out.Request, out.BackendRequest = parse(t.Request), parse(t.BackendRequest)
	return out
}
