package routes

import (
	"crypto/tls"
	"time"
)

// Protocol is what a listener speaks on its port.
type Protocol string

const (
	// ProtocolHTTP is cleartext HTTP/1.1 (and h2c when the data plane allows it).
	ProtocolHTTP Protocol = "HTTP"
	// ProtocolHTTPS is TLS with HTTP/2 or HTTP/1.1 chosen by ALPN.
	ProtocolHTTPS Protocol = "HTTPS"
)

// Table is everything the data plane serves. The data plane swaps whole tables: a table is never
// changed after it is handed over.
type Table struct {
	// Listeners are ordered by Port, then Address; no two share a Key.
	Listeners []Listener
}

// ListenerKey is where a listener is served: an address and a port.
type ListenerKey struct {
	// Address is "" for the data plane's own address (the node's bind address), or the IP of a
	// Gateway's own address (from its class's address pool) on the node that holds it.
	Address string
	Port    int32
}

// Listener is one port of the data plane. Gateway listeners that share a port (several HTTPS
// listeners for different hostnames on 443) are merged into one Listener: their certificates are
// told apart by SNI and their routes by virtual host.
type Listener struct {
	// Name names the listener in logs and metrics ("ingress-http", "<ns>/<gateway>/<listener>").
	Name string
	// Address is the IP the listener answers on: "" for the data plane's own address, which
	// Ingresses and Gateways of classes without an address pool share; a Gateway's pool address
	// otherwise, so that Gateways with listeners on one port keep their routes apart.
	Address  string
	Port     int32
	Protocol Protocol
	// Certificates are the TLS certificates of an HTTPS listener; SelectCertificate picks one by
	// the client's SNI.
	Certificates []Certificate
	// Hosts are the listener's virtual hosts; SelectHost picks the one a request's Host names.
	Hosts []VirtualHost
}

// Key is where l is served.
func (l *Listener) Key() ListenerKey { return ListenerKey{Address: l.Address, Port: l.Port} }

// Certificate is one TLS certificate and the server names it is served for.
type Certificate struct {
	// Hostnames are the SNI names ("foo.example.com", "*.example.com") this certificate answers.
	// An empty list makes it the listener's default, served when no other certificate matches
	// (and to clients that send no SNI).
	Hostnames []string
	// Source names where it came from ("Secret default/foo-tls") for logs.
	Source string
	// Cert is the parsed key pair (see ParseCertificate).
	Cert *tls.Certificate
}

// VirtualHost holds the routes for one hostname of a listener.
type VirtualHost struct {
	// Hostname is an exact name ("foo.example.com"), a wildcard ("*.example.com": Gateway API
	// semantics, one or more labels in place of the star) or "" for any host.
	Hostname string
	// SingleLabelWildcard narrows a wildcard to exactly one label, as Ingress defines it
	// ("*.foo.com" matches "bar.foo.com" but not "baz.bar.foo.com").
	SingleLabelWildcard bool
	// Routes are in precedence order (SortRoutes): the first whose Match matches serves.
	Routes []Route
}

// Route is one match of a rule, what to do with a request it matches, and where to send it.
type Route struct {
	Source  Source
	Match   Match
	Filters []Filter
	// Backends share the requests by Weight. An empty list with no redirect filter answers 500,
	// as Gateway API asks for a rule whose backends are all invalid.
	Backends []Backend
	Timeouts Timeouts
}

// SourceKind is the kind of object a route came from.
type SourceKind string

const (
	// SourceIngress marks routes of a networking.k8s.io/v1 Ingress.
	SourceIngress SourceKind = "Ingress"
	// SourceHTTPRoute marks routes of a gateway.networking.k8s.io/v1 HTTPRoute.
	SourceHTTPRoute SourceKind = "HTTPRoute"
	// SourceGRPCRoute marks routes of a gateway.networking.k8s.io/v1 GRPCRoute.
	SourceGRPCRoute SourceKind = "GRPCRoute"
)

// Source says which object, rule and match a route came from; Precedes breaks ties with it.
type Source struct {
	Kind      SourceKind
	Namespace string
	Name      string
	// Created is the object's creation timestamp: the older object wins a tie.
	Created time.Time
	// Rule and Match are the indexes of the rule in the object and of the match in the rule.
	Rule  int
	Match int
	// Default marks an Ingress default backend: it ranks below every other route of its host.
	Default bool
}

// PathMatchType is how a request path is compared with PathMatch.Value.
type PathMatchType string

const (
	// PathExact matches the path exactly (case-sensitive).
	PathExact PathMatchType = "Exact"
	// PathPrefix matches by path elements split by "/": "/foo" matches "/foo" and "/foo/bar",
	// not "/foobar".
	PathPrefix PathMatchType = "PathPrefix"
	// PathRegularExpression matches the whole path against an RE2 expression.
	PathRegularExpression PathMatchType = "RegularExpression"
)

// PathMatch is the path condition of a match. The zero value (Type "") matches every path, like
// a PathPrefix of "/".
type PathMatch struct {
	Type  PathMatchType
	Value string
}

// ValueMatchType is how a header or query parameter value is compared.
type ValueMatchType string

const (
	// ValueExact compares the value exactly.
	ValueExact ValueMatchType = "Exact"
	// ValueRegularExpression matches the whole value against an RE2 expression.
	ValueRegularExpression ValueMatchType = "RegularExpression"
)

// HeaderMatch is one header condition; Name is compared case-insensitively.
type HeaderMatch struct {
	Type  ValueMatchType
	Name  string
	Value string
}

// QueryParamMatch is one query parameter condition; Name is compared exactly.
type QueryParamMatch struct {
	Type  ValueMatchType
	Name  string
	Value string
}

// Match is the conjunction of its conditions: a request matches when every one holds.
type Match struct {
	Path        PathMatch
	Headers     []HeaderMatch
	QueryParams []QueryParamMatch
	// Method is an HTTP method ("GET"); "" matches any.
	Method string
}

// FilterType names a filter, as Gateway API's HTTPRouteFilterType does.
type FilterType string

const (
	FilterRequestHeaderModifier  FilterType = "RequestHeaderModifier"
	FilterResponseHeaderModifier FilterType = "ResponseHeaderModifier"
	FilterRequestRedirect        FilterType = "RequestRedirect"
	FilterURLRewrite             FilterType = "URLRewrite"
	FilterRequestMirror          FilterType = "RequestMirror"
)

// Filter is one processing step; exactly the field named by Type is set.
type Filter struct {
	Type                   FilterType
	RequestHeaderModifier  *HeaderModifier
	ResponseHeaderModifier *HeaderModifier
	RequestRedirect        *Redirect
	URLRewrite             *URLRewrite
	RequestMirror          *Mirror
}

// Header is one header name and value.
type Header struct {
	Name  string
	Value string
}

// HeaderModifier sets, adds and removes headers, in that order.
type HeaderModifier struct {
	Set    []Header
	Add    []Header
	Remove []string
}

// PathModifierType is how a redirect or rewrite changes the path.
type PathModifierType string

const (
	// ReplaceFullPath replaces the whole path.
	ReplaceFullPath PathModifierType = "ReplaceFullPath"
	// ReplacePrefixMatch replaces the part the route's PathPrefix matched.
	ReplacePrefixMatch PathModifierType = "ReplacePrefixMatch"
)

// PathModifier changes a request path.
type PathModifier struct {
	Type               PathModifierType
	ReplaceFullPath    string
	ReplacePrefixMatch string
}

// Redirect answers with a redirect instead of forwarding. Unset fields keep the request's value.
type Redirect struct {
	Scheme   *string
	Hostname *string
	Path     *PathModifier
	Port     *int32
	// StatusCode is 301 or 302 (302 when zero).
	StatusCode int
}

// URLRewrite changes the request before it is forwarded.
type URLRewrite struct {
	Hostname *string
	Path     *PathModifier
}

// Mirror sends a copy of each request to another backend and ignores its answer.
type Mirror struct {
	Backend Backend
	// Percent of requests mirrored, 0 to 100; 100 when unset (nil).
	Percent *int32
}

// Backend is one weighted destination of a route.
type Backend struct {
	// Name names it in logs and metrics ("default/web:80").
	Name   string
	Weight int32
	// Endpoints are the addresses requests go to, pods directly (EndpointsOf picks them). An
	// empty list answers 503.
	Endpoints []Endpoint
	// Invalid, when set, says why the backend cannot be used (a missing Service, a port it does
	// not have, a reference not permitted): requests that pick it answer 500.
	Invalid string
	// Filters run for requests sent to this backend only, after the route's.
	Filters []Filter
	// Protocol is what the pods speak: HTTP/1.1 (BackendHTTP1, the zero value) or HTTP/2 in
	// cleartext (BackendH2C: a Service port's appProtocol kubernetes.io/h2c, or a GRPCRoute's
	// backend).
	Protocol BackendProtocol
}

// BackendProtocol is what a backend's pods speak.
type BackendProtocol string

const (
	// BackendHTTP1 is HTTP/1.1 (upgrades such as WebSocket included).
	BackendHTTP1 BackendProtocol = ""
	// BackendH2C is HTTP/2 with prior knowledge, without TLS.
	BackendH2C BackendProtocol = "h2c"
)

// AppProtocolH2C is the Service port appProtocol that asks for HTTP/2 in cleartext (KEP-3726).
const AppProtocolH2C = "kubernetes.io/h2c"

// Endpoint is one address of a backend.
type Endpoint struct {
	// Address is "ip:port" (IPv6 in brackets).
	Address string
}

// Timeouts bound a route's requests; zero means none beyond the data plane's own.
type Timeouts struct {
	// Request bounds the whole exchange with the client, retries and all.
	Request time.Duration
	// BackendRequest bounds one request to a backend.
	BackendRequest time.Duration
}
