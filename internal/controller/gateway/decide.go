package gateway

import (
	"cmp"
	"crypto/tls"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/gateway-api/pkg/features"

	"github.com/skiff-sh/skiff/internal/cloudprovider/local"
)

const (
	// ControllerName is the GatewayClass controllerName skiff answers for.
	ControllerName gatewayv1.GatewayController = "skiff.sh/gateway-controller"
	// ClassName is the GatewayClass the documentation names (any class with ControllerName is served).
	ClassName = "skiff"
)

// group is the Gateway API's group: of Gateways, routes and listeners' route kinds.
const group = gatewayv1.Group(gatewayv1.GroupName)

// The route kinds skiff serves, on HTTP and HTTPS listeners.
const (
	kindHTTPRoute gatewayv1.Kind = "HTTPRoute"
	kindGRPCRoute gatewayv1.Kind = "GRPCRoute"
)

// routeKinds are the kinds a listener takes when its allowedRoutes names none.
var routeKinds = []gatewayv1.Kind{kindHTTPRoute, kindGRPCRoute}

// SupportedFeatures are what a GatewayClass of skiff's claims in status.supportedFeatures (the
// conformance suite reads them when it is not told which features to test): the core features of
// the GATEWAY-HTTP and GATEWAY-GRPC profiles and the extended ones the data plane serves, each
// checked by the suite (docs/conformance/gateway-api-report.yaml). A class with an address pool
// also claims the Gateways' spec.addresses (GatewayStaticAddresses, GatewayAddressEmpty).
func SupportedFeatures(pool bool) []gatewayv1.SupportedFeature {
	names := []features.FeatureName{
		features.SupportGateway, features.SupportHTTPRoute, features.SupportReferenceGrant, features.SupportGRPCRoute,
		features.SupportGatewayPort8080, features.SupportGatewayHTTPListenerIsolation,
		features.SupportHTTPRouteQueryParamMatching, features.SupportHTTPRouteMethodMatching,
		features.SupportHTTPRouteResponseHeaderModification, features.SupportHTTPRouteBackendRequestHeaderModification,
		features.SupportHTTPRoutePortRedirect, features.SupportHTTPRouteSchemeRedirect, features.SupportHTTPRoutePathRedirect,
		features.SupportHTTPRoute303RedirectStatusCode, features.SupportHTTPRoute307RedirectStatusCode, features.SupportHTTPRoute308RedirectStatusCode,
		features.SupportHTTPRouteHostRewrite, features.SupportHTTPRoutePathRewrite,
		features.SupportHTTPRouteRequestMirror, features.SupportHTTPRouteRequestMultipleMirrors, features.SupportHTTPRouteRequestPercentageMirror,
		features.SupportHTTPRouteRequestTimeout, features.SupportHTTPRouteBackendTimeout, features.SupportHTTPRouteParentRefPort,
		features.SupportHTTPRouteBackendProtocolH2C, features.SupportHTTPRouteBackendProtocolWebSocket,
		features.SupportHTTPRouteNamedRouteRule, features.SupportGRPCRouteNamedRouteRule,
	}
	if pool {
		names = append(names, features.SupportGatewayStaticAddresses, features.SupportGatewayAddressEmpty)
	}
	out := make([]gatewayv1.SupportedFeature, 0, len(names))
	for _, n := range names {
		out = append(out, gatewayv1.SupportedFeature{Name: gatewayv1.FeatureName(n)})
	}
	slices.SortFunc(out, func(a, b gatewayv1.SupportedFeature) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// Snapshot is everything a decision reads: the informers' objects at one moment. Objects are
// read, never changed.
type Snapshot struct {
	// Now stamps the conditions whose status changes.
	Now        metav1.Time
	Classes    []*gatewayv1.GatewayClass
	Gateways   []*gatewayv1.Gateway
	Routes     []*gatewayv1.HTTPRoute
	GRPCRoutes []*gatewayv1.GRPCRoute
	Grants     []*gatewayv1.ReferenceGrant
	Namespaces []*corev1.Namespace
	// Services are the backends, and the load-balancer Services whose node ports a Gateway's
	// listeners may not take (as the local provider leaves a contested port pending).
	Services []*corev1.Service
	Secrets  []*corev1.Secret
	// Nodes are the candidates for the data plane's addresses.
	Nodes []*corev1.Node
	// Pools are the address pools of the classes with a parametersRef, by class name
	// (ClassPools for the controller, FollowedPools for a node). A Gateway of a class without
	// one is served on the data-plane nodes' addresses.
	Pools map[string]PoolState
}

// Plan is the status every object of skiff's classes should have; the controller writes those
// that differ. Attachments say which routes each listener serves, for the data plane's table.
type Plan struct {
	Classes  map[string]gatewayv1.GatewayClassStatus
	Gateways map[types.NamespacedName]gatewayv1.GatewayStatus
	Routes   map[types.NamespacedName]gatewayv1.HTTPRouteStatus
	// GRPCRoutes are the GRPCRoutes' statuses.
	GRPCRoutes map[types.NamespacedName]gatewayv1.GRPCRouteStatus
	// Listeners are the programmed listeners (accepted, references resolved): the ports the
	// data plane opens for Gateways, with their certificates.
	Listeners   []ProgrammedListener
	Attachments []Attachment
}

// ProgrammedListener is one listener the data plane serves.
type ProgrammedListener struct {
	Gateway types.NamespacedName
	Name    gatewayv1.SectionName
	// Address is the Gateway's own address (its class's pool), "" when it has none.
	Address  string
	Port     gatewayv1.PortNumber
	Protocol gatewayv1.ProtocolType
	// Hostname is the listener's ("" for any host): its certificates are served for it.
	Hostname string
	// CertificateRefs are the Secrets of an HTTPS listener, resolved and permitted.
	CertificateRefs []types.NamespacedName
}

// Attachment is one route accepted by one listener, with the hostnames it serves there (the
// intersection of the listener's hostname and the route's; empty means any host).
type Attachment struct {
	Gateway  types.NamespacedName
	Listener gatewayv1.SectionName
	// Address is the Gateway's own address, as ProgrammedListener's.
	Address  string
	Port     gatewayv1.PortNumber
	Protocol gatewayv1.ProtocolType
	// Kind is the route's: HTTPRoute or GRPCRoute.
	Kind      gatewayv1.Kind
	Route     types.NamespacedName
	Hostnames []string
}

// Decide computes the Plan of a Snapshot.
func Decide(s Snapshot) Plan {
	ix := newIndex(&s)
	plan := Plan{
		Classes:    map[string]gatewayv1.GatewayClassStatus{},
		Gateways:   map[types.NamespacedName]gatewayv1.GatewayStatus{},
		Routes:     map[types.NamespacedName]gatewayv1.HTTPRouteStatus{},
		GRPCRoutes: map[types.NamespacedName]gatewayv1.GRPCRouteStatus{},
	}
	for _, gc := range s.Classes {
		if gc.Spec.ControllerName != ControllerName {
			continue
		}
		st := *gc.Status.DeepCopy()
		if err := s.Pools[gc.Name].Err; err != nil {
			setCondition(&st.Conditions, s.Now, gc.Generation, string(gatewayv1.GatewayClassConditionStatusAccepted), false,
				string(gatewayv1.GatewayClassReasonInvalidParameters), err.Error())
		} else {
			setCondition(&st.Conditions, s.Now, gc.Generation, string(gatewayv1.GatewayClassConditionStatusAccepted), true,
				string(gatewayv1.GatewayClassReasonAccepted), "handled by "+string(ControllerName))
		}
		_, pool := s.Pools[gc.Name]
		st.SupportedFeatures = SupportedFeatures(pool)
		plan.Classes[gc.Name] = st
	}
	gateways := map[types.NamespacedName]*gatewayState{}
	var ours []*gatewayv1.Gateway
	for _, gw := range s.Gateways {
		gc := ix.classes[string(gw.Spec.GatewayClassName)]
		if gc == nil || gc.Spec.ControllerName != ControllerName {
			continue
		}
		ours = append(ours, gw)
	}
	own := assignAddresses(s.Pools, ours)
	for _, gw := range ours {
		g := decideListeners(ix, gw)
		if a, ok := own[nn(gw.Namespace, gw.Name)]; ok {
			g.own = &a
		}
		gateways[nn(gw.Namespace, gw.Name)] = g
	}
	// Both route kinds attach alike; each keeps its own status type.
	decide := func(r routeObject) *gatewayv1.RouteStatus {
		parents, attached := decideRoute(ix, gateways, r)
		if parents == nil {
			return nil
		}
		plan.Attachments = append(plan.Attachments, attached...)
		return &gatewayv1.RouteStatus{Parents: parents}
	}
	for _, r := range s.Routes {
		if st := decide(httpRouteObject(r)); st != nil {
			plan.Routes[nn(r.Namespace, r.Name)] = gatewayv1.HTTPRouteStatus{RouteStatus: *st}
		}
	}
	for _, r := range s.GRPCRoutes {
		if st := decide(grpcRouteObject(r)); st != nil {
			plan.GRPCRoutes[nn(r.Namespace, r.Name)] = gatewayv1.GRPCRouteStatus{RouteStatus: *st}
		}
	}
	for key, g := range gateways {
		plan.Gateways[key] = gatewayStatus(ix, g)
		// A Gateway of a class with a pool is served only at its own addresses (none: nowhere).
		for _, addr := range g.addresses() {
			for _, ls := range g.listeners {
				if ls.accepted && ls.resolved {
					plan.Listeners = append(plan.Listeners, ProgrammedListener{Gateway: key, Name: ls.l.Name, Address: addr, Port: ls.l.Port,
						Protocol: ls.l.Protocol, Hostname: hostnameOf(ls.l), CertificateRefs: ls.certs})
				}
			}
		}
	}
	slices.SortFunc(plan.Listeners, func(a, b ProgrammedListener) int {
		return cmp.Or(cmp.Compare(a.Gateway.String(), b.Gateway.String()), cmp.Compare(a.Name, b.Name), cmp.Compare(a.Address, b.Address))
	})
	slices.SortFunc(plan.Attachments, func(a, b Attachment) int {
		return cmp.Or(cmp.Compare(a.Gateway.String(), b.Gateway.String()), cmp.Compare(a.Listener, b.Listener), cmp.Compare(a.Kind, b.Kind),
			cmp.Compare(a.Route.String(), b.Route.String()), cmp.Compare(a.Address, b.Address))
	})
	return plan
}

func nn(namespace, name string) types.NamespacedName {
	return types.NamespacedName{Namespace: namespace, Name: name}
}

// index holds the snapshot's objects by key.
type index struct {
	s          *Snapshot
	classes    map[string]*gatewayv1.GatewayClass
	namespaces map[string]*corev1.Namespace
	services   map[types.NamespacedName]*corev1.Service
	secrets    map[types.NamespacedName]*corev1.Secret
}

func newIndex(s *Snapshot) *index {
	ix := &index{s: s, classes: map[string]*gatewayv1.GatewayClass{}, namespaces: map[string]*corev1.Namespace{},
		services: map[types.NamespacedName]*corev1.Service{}, secrets: map[types.NamespacedName]*corev1.Secret{}}
	for _, gc := range s.Classes {
		ix.classes[gc.Name] = gc
	}
	for _, n := range s.Namespaces {
		ix.namespaces[n.Name] = n
	}
	for _, svc := range s.Services {
		ix.services[nn(svc.Namespace, svc.Name)] = svc
	}
	for _, sec := range s.Secrets {
		ix.secrets[nn(sec.Namespace, sec.Name)] = sec
	}
	return ix
}

// granted says whether a ReferenceGrant in toNamespace lets an object of fromKind in
// fromNamespace refer to the object toGroup/toKind toName there.
func (ix *index) granted(fromKind gatewayv1.Kind, fromNamespace string, toGroup gatewayv1.Group, toKind gatewayv1.Kind, toNamespace, toName string) bool {
	for _, g := range ix.s.Grants {
		if g.Namespace != toNamespace {
			continue
		}
		from := slices.ContainsFunc(g.Spec.From, func(f gatewayv1.ReferenceGrantFrom) bool {
			return f.Group == group && f.Kind == fromKind && string(f.Namespace) == fromNamespace
		})
		to := slices.ContainsFunc(g.Spec.To, func(t gatewayv1.ReferenceGrantTo) bool {
			return t.Group == toGroup && t.Kind == toKind && (t.Name == nil || string(*t.Name) == toName)
		})
		if from && to {
			return true
		}
	}
	return false
}

// setCondition sets one condition, keeping its lastTransitionTime when the status is unchanged.
func setCondition(conds *[]metav1.Condition, now metav1.Time, generation int64, typ string, ok bool, reason, message string) {
	status := metav1.ConditionFalse
	if ok {
		status = metav1.ConditionTrue
	}
	apimeta.SetStatusCondition(conds, metav1.Condition{Type: typ, Status: status, Reason: reason, Message: message,
		ObservedGeneration: generation, LastTransitionTime: now})
}

// listenerState is one listener's decision before routes attach.
type listenerState struct {
	l        gatewayv1.Listener
	previous *gatewayv1.ListenerStatus
	// accepted: a supported protocol and no conflict; only accepted listeners take routes.
	accepted                    bool
	acceptedReason, acceptedMsg string
	resolved                    bool
	resolvedReason, resolvedMsg string
	conflicted                  bool
	conflictReason              string
	supportedProtocol           bool
	kinds                       []gatewayv1.RouteGroupKind
	invalidKinds                string
	certs                       []types.NamespacedName
	// attached counts the routes accepted on the listener.
	attached             int32
	namespaces           *gatewayv1.RouteNamespaces
	namespaceSelector    labels.Selector
	namespaceSelectorErr error
}

type gatewayState struct {
	gw        *gatewayv1.Gateway
	listeners []*listenerState
	// own is the Gateway's own address when its class has a pool (nil: the nodes' addresses).
	own *poolAddress
}

// addresses are where the Gateway's listeners are served: [""] (the data plane's own address)
// when its class has no pool, else its own addresses (none when the pool gave it none).
func (g *gatewayState) addresses() []string {
	if g.own == nil {
		return []string{""}
	}
	out := make([]string, 0, len(g.own.addrs))
	for _, a := range g.own.addrs {
		out = append(out, a.String())
	}
	return out
}

func decideListeners(ix *index, gw *gatewayv1.Gateway) *gatewayState {
	g := &gatewayState{gw: gw}
	for _, l := range gw.Spec.Listeners {
		ls := &listenerState{l: l, accepted: true, acceptedReason: string(gatewayv1.ListenerReasonAccepted), resolved: true,
			resolvedReason: string(gatewayv1.ListenerReasonResolvedRefs)}
		for i := range gw.Status.Listeners {
			if gw.Status.Listeners[i].Name == l.Name {
				ls.previous = &gw.Status.Listeners[i]
			}
		}
		switch l.Protocol {
		case gatewayv1.HTTPProtocolType, gatewayv1.HTTPSProtocolType:
			ls.supportedProtocol = true
		default:
			ls.accepted, ls.acceptedReason = false, string(gatewayv1.ListenerReasonUnsupportedProtocol)
			ls.acceptedMsg = fmt.Sprintf("protocol %s is not served: skiff serves HTTP and HTTPS", l.Protocol)
		}
		ls.kinds, ls.invalidKinds = listenerKinds(l, ls.supportedProtocol)
		if ls.invalidKinds != "" {
			ls.resolved, ls.resolvedReason, ls.resolvedMsg = false, string(gatewayv1.ListenerReasonInvalidRouteKinds), ls.invalidKinds
		}
		if l.Protocol == gatewayv1.HTTPSProtocolType && ls.resolved {
			ls.certs, ls.resolvedReason, ls.resolvedMsg = certificates(ix, gw, l)
			ls.resolved = ls.resolvedReason == string(gatewayv1.ListenerReasonResolvedRefs)
		}
		if l.AllowedRoutes != nil && l.AllowedRoutes.Namespaces != nil {
			ls.namespaces = l.AllowedRoutes.Namespaces
			if ls.namespaces.From != nil && *ls.namespaces.From == gatewayv1.NamespacesFromSelector {
				if ls.namespaces.Selector == nil {
					ls.namespaceSelector = labels.Nothing()
				} else {
					ls.namespaceSelector, ls.namespaceSelectorErr = metav1.LabelSelectorAsSelector(ls.namespaces.Selector)
				}
			}
		}
		g.listeners = append(g.listeners, ls)
	}
	markConflicts(g.listeners)
	return g
}

// listenerKinds returns the route kinds a listener takes (supportedKinds) and, when it names
// kinds it cannot take, why. HTTPRoute and GRPCRoute are served, on HTTP and HTTPS listeners.
func listenerKinds(l gatewayv1.Listener, supportedProtocol bool) ([]gatewayv1.RouteGroupKind, string) {
	kinds := []gatewayv1.RouteGroupKind{}
	if !supportedProtocol {
		return kinds, ""
	}
	if l.AllowedRoutes == nil || len(l.AllowedRoutes.Kinds) == 0 {
		for _, k := range routeKinds {
			kinds = append(kinds, gatewayv1.RouteGroupKind{Group: ptrTo(group), Kind: k})
		}
		return kinds, ""
	}
	var invalid []string
	for _, k := range l.AllowedRoutes.Kinds {
		g := group
		if k.Group != nil {
			g = *k.Group
		}
		if g == group && slices.Contains(routeKinds, k.Kind) {
			if !slices.ContainsFunc(kinds, func(x gatewayv1.RouteGroupKind) bool { return x.Kind == k.Kind }) {
				kinds = append(kinds, gatewayv1.RouteGroupKind{Group: ptrTo(group), Kind: k.Kind})
			}
			continue
		}
		invalid = append(invalid, fmt.Sprintf("%s/%s", g, k.Kind))
	}
	if len(invalid) > 0 {
		return kinds, "route kinds not served on a listener of protocol " + string(l.Protocol) + ": " + strings.Join(invalid, ", ")
	}
	return kinds, ""
}

// certificates resolves an HTTPS listener's certificateRefs: each must be a core Secret of type
// kubernetes.io/tls holding a key pair that parses, in the Gateway's namespace or one whose
// ReferenceGrant permits it. It returns the Secrets and the ResolvedRefs reason and message.
func certificates(ix *index, gw *gatewayv1.Gateway, l gatewayv1.Listener) ([]types.NamespacedName, string, string) {
	if l.TLS == nil || len(l.TLS.CertificateRefs) == 0 {
		return nil, string(gatewayv1.ListenerReasonInvalidCertificateRef), "an HTTPS listener needs tls.certificateRefs"
	}
	var out []types.NamespacedName
	for _, ref := range l.TLS.CertificateRefs {
		g, kind, ns := target(ref.Group, ref.Kind, ref.Namespace, "Secret", gw.Namespace)
		if g != "" || kind != "Secret" {
			return nil, string(gatewayv1.ListenerReasonInvalidCertificateRef), fmt.Sprintf("certificateRef %s/%s %s: only core Secrets are served", g, kind, ref.Name)
		}
		if ns != gw.Namespace && !ix.granted("Gateway", gw.Namespace, "", "Secret", ns, string(ref.Name)) {
			return nil, string(gatewayv1.ListenerReasonRefNotPermitted), fmt.Sprintf("no ReferenceGrant in %s lets Gateways of %s use Secret %s", ns, gw.Namespace, ref.Name)
		}
		sec := ix.secrets[nn(ns, string(ref.Name))]
		if sec == nil {
			return nil, string(gatewayv1.ListenerReasonInvalidCertificateRef), fmt.Sprintf("Secret %s/%s not found", ns, ref.Name)
		}
		if sec.Type != corev1.SecretTypeTLS {
			return nil, string(gatewayv1.ListenerReasonInvalidCertificateRef), fmt.Sprintf("Secret %s/%s is of type %s, not %s", ns, ref.Name, sec.Type, corev1.SecretTypeTLS)
		}
		if _, err := tls.X509KeyPair(sec.Data[corev1.TLSCertKey], sec.Data[corev1.TLSPrivateKeyKey]); err != nil {
			return nil, string(gatewayv1.ListenerReasonInvalidCertificateRef), fmt.Sprintf("Secret %s/%s: %v", ns, ref.Name, err)
		}
		out = append(out, nn(ns, string(ref.Name)))
	}
	return out, string(gatewayv1.ListenerReasonResolvedRefs), ""
}

// markConflicts finds listeners that cannot share their port: different protocols on one port
// (ProtocolConflict), or one protocol and one hostname twice (HostnameConflict). A conflicted
// listener is not accepted and takes no routes.
func markConflicts(ls []*listenerState) {
	byPort := map[gatewayv1.PortNumber][]*listenerState{}
	for _, l := range ls {
		if l.supportedProtocol {
			byPort[l.l.Port] = append(byPort[l.l.Port], l)
		}
	}
	for _, group := range byPort {
		protocols := map[gatewayv1.ProtocolType]bool{}
		hostnames := map[string]int{}
		for _, l := range group {
			protocols[l.l.Protocol] = true
			hostnames[hostnameOf(l.l)]++
		}
		for _, l := range group {
			switch {
			case len(protocols) > 1:
				l.conflicted, l.conflictReason = true, string(gatewayv1.ListenerReasonProtocolConflict)
			case hostnames[hostnameOf(l.l)] > 1:
				l.conflicted, l.conflictReason = true, string(gatewayv1.ListenerReasonHostnameConflict)
			}
			if l.conflicted {
				l.accepted, l.acceptedReason = false, l.conflictReason
				l.acceptedMsg = fmt.Sprintf("another listener on port %d conflicts with this one", l.l.Port)
			}
		}
	}
}

func hostnameOf(l gatewayv1.Listener) string {
	if l.Hostname == nil {
		return ""
	}
	return string(*l.Hostname)
}

// admits says whether the listener takes routes from the namespace ns, of a Gateway in gwNamespace.
func (ls *listenerState) admits(ix *index, gwNamespace, ns string) bool {
	from := gatewayv1.NamespacesFromSame
	if ls.namespaces != nil && ls.namespaces.From != nil {
		from = *ls.namespaces.From
	}
	switch from {
	case gatewayv1.NamespacesFromAll:
		return true
	case gatewayv1.NamespacesFromSelector:
		n := ix.namespaces[ns]
		return ls.namespaceSelectorErr == nil && n != nil && ls.namespaceSelector.Matches(labels.Set(n.Labels))
	case gatewayv1.NamespacesFromSame:
		return ns == gwNamespace
	}
	return false
}

func (ls *listenerState) takes(kind gatewayv1.Kind) bool {
	return slices.ContainsFunc(ls.kinds, func(k gatewayv1.RouteGroupKind) bool { return k.Kind == kind })
}

// gatewayStatus is a Gateway's status once its listeners' routes are counted.
func gatewayStatus(ix *index, g *gatewayState) gatewayv1.GatewayStatus {
	gw, now := g.gw, ix.s.Now
	st := *gw.Status.DeepCopy()
	st.Listeners = nil
	accepted, all := 0, true
	refsOK := true
	for _, ls := range g.listeners {
		var conds []metav1.Condition
		if ls.previous != nil {
			conds = slices.Clone(ls.previous.Conditions)
		}
		conflictReason := string(gatewayv1.ListenerReasonNoConflicts)
		if ls.conflicted {
			conflictReason = ls.conflictReason
		}
		setCondition(&conds, now, gw.Generation, string(gatewayv1.ListenerConditionConflicted), ls.conflicted, conflictReason, "")
		setCondition(&conds, now, gw.Generation, string(gatewayv1.ListenerConditionAccepted), ls.accepted, ls.acceptedReason, ls.acceptedMsg)
		setCondition(&conds, now, gw.Generation, string(gatewayv1.ListenerConditionResolvedRefs), ls.resolved, ls.resolvedReason, ls.resolvedMsg)
		programmed, progReason := ls.accepted && ls.resolved, string(gatewayv1.ListenerReasonProgrammed)
		if !programmed {
			progReason = string(gatewayv1.ListenerReasonInvalid)
		}
		setCondition(&conds, now, gw.Generation, string(gatewayv1.ListenerConditionProgrammed), programmed, progReason, "")
		st.Listeners = append(st.Listeners, gatewayv1.ListenerStatus{Name: ls.l.Name, SupportedKinds: ls.kinds, AttachedRoutes: ls.attached, Conditions: conds})
		if ls.accepted {
			accepted++
		} else {
			all = false
		}
		refsOK = refsOK && ls.resolved
	}
	addr := gatewayAddresses(ix, g)
	st.Addresses = addr.addresses

	acceptedReason, acceptedMsg := string(gatewayv1.GatewayReasonAccepted), ""
	gwAccepted := accepted > 0 || len(g.listeners) == 0
	if !all {
		acceptedReason, acceptedMsg = string(gatewayv1.GatewayReasonListenersNotValid), "one or more listeners are not accepted"
	}
	if addr.unsupported != "" {
		gwAccepted, acceptedReason, acceptedMsg = false, string(gatewayv1.GatewayReasonUnsupportedAddress), addr.unsupported
	}
	setCondition(&st.Conditions, now, gw.Generation, string(gatewayv1.GatewayConditionAccepted), gwAccepted, acceptedReason, acceptedMsg)

	programmed, progReason, progMsg := gwAccepted, string(gatewayv1.GatewayReasonProgrammed), ""
	switch {
	case !gwAccepted:
		programmed, progReason = false, string(gatewayv1.GatewayReasonInvalid)
	case addr.reason != "":
		programmed, progReason, progMsg = false, addr.reason, addr.message
	}
	setCondition(&st.Conditions, now, gw.Generation, string(gatewayv1.GatewayConditionProgrammed), programmed, progReason, progMsg)
	refsReason := string(gatewayv1.GatewayReasonResolvedRefs)
	if !refsOK {
		refsReason = string(gatewayv1.GatewayReasonListenersNotResolved)
	}
	setCondition(&st.Conditions, now, gw.Generation, string(gatewayv1.GatewayConditionResolvedRefs), refsOK, refsReason, "")
	return st
}

// addressDecision is a Gateway's status.addresses, and why it is not accepted (unsupported) or
// not programmed (reason, message) for want of an address.
type addressDecision struct {
	addresses       []gatewayv1.GatewayStatusAddress
	unsupported     string
	reason, message string
}

// gatewayAddresses decides a Gateway's addresses: its own from its class's pool, or the
// data-plane nodes' when the class has no pool.
func gatewayAddresses(ix *index, g *gatewayState) addressDecision {
	if own := g.own; own != nil {
		switch {
		case own.unsupported:
			return addressDecision{unsupported: own.err.Error()}
		case own.err != nil:
			return addressDecision{reason: own.reason, message: own.err.Error()}
		}
		var out []gatewayv1.GatewayStatusAddress
		for _, a := range own.addrs {
			out = append(out, gatewayv1.GatewayStatusAddress{Type: ptrTo(gatewayv1.IPAddressType), Value: a.String()})
		}
		return addressDecision{addresses: out}
	}
	if len(g.gw.Spec.Addresses) > 0 {
		return addressDecision{unsupported: "spec.addresses needs an address pool (the GatewayClass's parametersRef): without one the Gateway is served on the data-plane nodes' addresses"}
	}
	addresses, err := dataPlaneAddresses(ix, g.gw)
	if err != nil {
		return addressDecision{addresses: addresses, reason: string(gatewayv1.GatewayReasonAddressNotAssigned), message: "no data-plane node for the listeners: " + err.Error()}
	}
	return addressDecision{addresses: addresses}
}

// dataPlaneAddresses are the addresses the Gateway is reached at: the nodes the local
// load-balancer provider would give a Service with the Gateway's listener ports.
func dataPlaneAddresses(ix *index, gw *gatewayv1.Gateway) ([]gatewayv1.GatewayStatusAddress, error) {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: gw.Namespace, Name: gw.Name, UID: gw.UID, CreationTimestamp: gw.CreationTimestamp}}
	for _, l := range gw.Spec.Listeners {
		p := corev1.ServicePort{Protocol: corev1.ProtocolTCP, Port: int32(l.Port)}
		if !slices.Contains(svc.Spec.Ports, p) {
			svc.Spec.Ports = append(svc.Spec.Ports, p)
		}
	}
	if len(svc.Spec.Ports) == 0 {
		return nil, nil
	}
	ingress, err := local.Assign(svc, ix.s.Nodes, ix.s.Services)
	if err != nil {
		return nil, err
	}
	out := make([]gatewayv1.GatewayStatusAddress, 0, len(ingress))
	for _, in := range ingress {
		out = append(out, gatewayv1.GatewayStatusAddress{Type: ptrTo(gatewayv1.IPAddressType), Value: in.IP})
	}
	return out, nil
}

func ptrTo[T any](v T) *T { return &v }

// target is what a certificateRef or backendRef names: its group (core by default), kind
// (defaultKind by default) and namespace (the referring object's by default).
func target(g *gatewayv1.Group, k *gatewayv1.Kind, ns *gatewayv1.Namespace, defaultKind gatewayv1.Kind, defaultNamespace string) (gatewayv1.Group, gatewayv1.Kind, string) {
	group, kind, namespace := gatewayv1.Group(""), defaultKind, defaultNamespace
	if g != nil {
		group = *g
	}
	if k != nil {
		kind = *k
	}
	if ns != nil {
		namespace = string(*ns)
	}
	return group, kind, namespace
}
