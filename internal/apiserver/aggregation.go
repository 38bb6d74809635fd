package apiserver

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	apiregv1 "github.com/skiff-sh/skiff/internal/apis/apiregistrationv1"
	"github.com/skiff-sh/skiff/internal/apiserver/discovery"
	"github.com/skiff-sh/skiff/internal/request"
)

// API aggregation (apiregistration.k8s.io/v1): an APIService with spec.service makes the server
// proxy /apis/<group>/<version>/... to a ready endpoint of that service, after its own
// authentication, authorization and flow control, presenting the front-proxy client certificate
// and naming the caller in the request headers (X-Remote-User, X-Remote-Group, X-Remote-Extra-*),
// as kube-apiserver's aggregator does. The availability controller (aggregation_availability.go)
// keeps each APIService's Available condition, its endpoint and its discovery document, which is
// merged into the server's discovery.

// AggregationConfig is how the server reaches extension API servers.
type AggregationConfig struct {
	// ProxyClientCert is the front-proxy client certificate (--proxy-client-cert-file) presented
	// to extension API servers; they check it against the requestheader CA. nil sends none.
	ProxyClientCert *tls.Certificate
	// GetProxyClientCert, when set, is asked for the front-proxy client certificate at each
	// handshake instead of ProxyClientCert, so a renewed certificate is presented without a
	// restart (pki.KeyPairHolder).
	GetProxyClientCert func(*tls.CertificateRequestInfo) (*tls.Certificate, error)
	// UsernameHeaders, GroupHeaders and ExtraHeaderPrefixes are the --requestheader-* header names
	// the caller is named in (the first of each is written). Empty means Kubernetes' defaults.
	UsernameHeaders     []string
	GroupHeaders        []string
	ExtraHeaderPrefixes []string
	// CheckInterval is how often every APIService's availability is checked again besides the
	// checks its own, its Service's and its EndpointSlices' changes trigger (0: 30 s).
	CheckInterval time.Duration
}

func (c *AggregationConfig) defaults() {
	if len(c.UsernameHeaders) == 0 {
		c.UsernameHeaders = []string{"X-Remote-User"}
	}
	if len(c.GroupHeaders) == 0 {
		c.GroupHeaders = []string{"X-Remote-Group"}
	}
	if len(c.ExtraHeaderPrefixes) == 0 {
		c.ExtraHeaderPrefixes = []string{"X-Remote-Extra-"}
	}
	if c.CheckInterval == 0 {
		c.CheckInterval = 30 * time.Second
	}
}

// aggregator holds the proxied group versions. Its routes are replaced whole by the availability
// controller; requests read them under the lock.
type aggregator struct {
	s   *Server
	cfg AggregationConfig

	// resolve finds a ready endpoint of a service (a seam for tests, whose extension servers
	// listen on loopback, which endpoint slices may not hold).
	resolve func(ctx context.Context, ref *apiregv1.ServiceReference) (string, availabilityFacts)

	mu     sync.RWMutex
	routes map[schema.GroupVersion]*aggRoute
}

// aggRoute is one proxied group version: the APIService it comes from, where it is reached now
// and what its discovery said.
type aggRoute struct {
	name      string
	spec      apiregv1.APIServiceSpec
	available bool
	reason    string
	endpoint  string // host:port of a ready endpoint, "" when none
	transport *http.Transport
	resources []metav1.APIResource
}

func newAggregator(s *Server, cfg AggregationConfig) *aggregator {
	cfg.defaults()
	return &aggregator{s: s, cfg: cfg, resolve: s.serviceEndpoint, routes: map[schema.GroupVersion]*aggRoute{}}
}

// aggregatedGroupVersion reads /apis/<group>/<version>[/...] from a path.
func aggregatedGroupVersion(path string) (schema.GroupVersion, bool) {
	rest, ok := strings.CutPrefix(path, "/apis/")
	if !ok {
		return schema.GroupVersion{}, false
	}
	parts := strings.SplitN(rest, "/", 3)
	if len(parts) < 2 || parts[0] == "" || parts[1] == "" {
		return schema.GroupVersion{}, false
	}
	return schema.GroupVersion{Group: parts[0], Version: parts[1]}, true
}

// route is the proxied group version a path belongs to, or nil.
func (a *aggregator) route(path string) *aggRoute {
	if a == nil {
		return nil
	}
	gv, ok := aggregatedGroupVersion(path)
	if !ok {
		return nil
	}
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.routes[gv]
}

// openAPIV3Route is the proxied group version whose OpenAPI v3 document a path asks for
// (/openapi/v3/apis/<group>/<version>), or nil.
func (a *aggregator) openAPIV3Route(path string) *aggRoute {
	rest, ok := strings.CutPrefix(path, "/openapi/v3/apis/")
	if !ok {
		return nil
	}
	gv, ok := aggregatedGroupVersion("/apis/" + rest)
	if !ok || strings.Contains(strings.TrimPrefix(rest, gv.Group+"/"+gv.Version), "/") {
		return nil
	}
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.routes[gv]
}

// openAPIV3Paths are the OpenAPI v3 index entries of the available proxied group versions, by
// prefix to the URL this server answers for them (kube-aggregator lists each APIService's
// documents in the root index the same way, and proxies them).
func (a *aggregator) openAPIV3Paths() map[string]string {
	if a == nil {
		return nil
	}
	a.mu.RLock()
	defer a.mu.RUnlock()
	var out map[string]string
	for gv, rt := range a.routes {
		if !rt.available {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		prefix := "apis/" + gv.Group + "/" + gv.Version
		out[prefix] = "/openapi/v3/" + prefix
	}
	return out
}

// setRoute installs (or with nil removes) the route of gv and reports whether discovery changed.
func (a *aggregator) setRoute(gv schema.GroupVersion, rt *aggRoute) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	old := a.routes[gv]
	if rt == nil {
		delete(a.routes, gv)
	} else {
		a.routes[gv] = rt
	}
	if old != nil && old.transport != nil && (rt == nil || rt.transport != old.transport) {
		old.transport.CloseIdleConnections()
	}
	return discoveryChanged(old, rt)
}

func discoveryChanged(old, rt *aggRoute) bool {
	shown := func(r *aggRoute) bool { return r != nil && r.available }
	if shown(old) != shown(rt) {
		return true
	}
	if !shown(rt) {
		return false
	}
	return old.spec.GroupPriorityMinimum != rt.spec.GroupPriorityMinimum || old.spec.VersionPriority != rt.spec.VersionPriority ||
		fmt.Sprint(old.resources) != fmt.Sprint(rt.resources)
}

// routeNamed is the route installed for the APIService name, if any.
func (a *aggregator) routeNamed(name string) (schema.GroupVersion, *aggRoute) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	for gv, rt := range a.routes {
		if rt.name == name {
			return gv, rt
		}
	}
	return schema.GroupVersion{}, nil
}

// external lists the available proxied group versions for discovery.
func (a *aggregator) external() []discovery.External {
	a.mu.RLock()
	defer a.mu.RUnlock()
	var out []discovery.External
	for gv, rt := range a.routes {
		if !rt.available {
			continue
		}
		out = append(out, discovery.External{
			GroupVersion: gv, GroupPriority: rt.spec.GroupPriorityMinimum, VersionPriority: rt.spec.VersionPriority,
			Resources: rt.resources,
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GroupVersion.String() < out[j].GroupVersion.String() })
	return out
}

// publishDiscovery hands the proxied group versions to the discovery service, when it takes them.
func (a *aggregator) publishDiscovery() {
	if d, ok := a.s.cfg.Discovery.(interface{ SetExternal([]discovery.External) }); ok {
		d.SetExternal(a.external())
	}
}

// newAggTransport is how one APIService's server is reached: TLS checked against its caBundle for
// the name <service>.<namespace>.svc (or not checked with insecureSkipTLSVerify), presenting the
// front-proxy client certificate. HTTP/1.1, so that upgrade requests pass through.
func (a *aggregator) newAggTransport(spec apiregv1.APIServiceSpec) (*http.Transport, error) {
	tlsCfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if spec.Service != nil {
		tlsCfg.ServerName = spec.Service.Name + "." + spec.Service.Namespace + ".svc"
	}
	if spec.InsecureSkipTLSVerify {
		tlsCfg.InsecureSkipVerify = true //nolint:gosec // the APIService asks for it, as upstream allows.
	} else if len(spec.CABundle) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(spec.CABundle) {
			return nil, fmt.Errorf("spec.caBundle holds no PEM certificate")
		}
		tlsCfg.RootCAs = pool
	}
	switch {
	case a.cfg.GetProxyClientCert != nil:
		tlsCfg.GetClientCertificate = a.cfg.GetProxyClientCert
	case a.cfg.ProxyClientCert != nil:
		cert := *a.cfg.ProxyClientCert
		tlsCfg.Certificates = []tls.Certificate{cert}
	}
	return &http.Transport{TLSClientConfig: tlsCfg, ForceAttemptHTTP2: false, MaxIdleConnsPerHost: 16, IdleConnTimeout: 90 * time.Second}, nil
}

// identityHeaders are the front-proxy headers naming user: the configured user, group and extra
// headers, with extra keys escaped as kube-apiserver escapes them.
func (a *aggregator) identityHeaders(user *request.UserInfo) http.Header {
	h := http.Header{}
	if user == nil {
		return h
	}
	h.Set(a.cfg.UsernameHeaders[0], user.Name)
	for _, g := range user.Groups {
		h.Add(a.cfg.GroupHeaders[0], g)
	}
	keys := make([]string, 0, len(user.Extra))
	for k := range user.Extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		for _, v := range user.Extra[k] {
			h.Add(a.cfg.ExtraHeaderPrefixes[0]+url.PathEscape(k), v)
		}
	}
	return h
}

// stripIdentity removes what the client sent that an extension server could read as identity:
// its credentials (they are for this server), impersonation headers and any front-proxy header.
func (a *aggregator) stripIdentity(h http.Header) {
	h.Del("Authorization")
	for name := range h {
		lower := strings.ToLower(name)
		if strings.HasPrefix(lower, "impersonate-") {
			h.Del(name)
			continue
		}
		for _, n := range append(append([]string{}, a.cfg.UsernameHeaders...), a.cfg.GroupHeaders...) {
			if strings.EqualFold(name, n) {
				h.Del(name)
			}
		}
		for _, p := range a.cfg.ExtraHeaderPrefixes {
			if strings.HasPrefix(lower, strings.ToLower(p)) {
				h.Del(name)
			}
		}
	}
}

// serve proxies an authorized request to the route's extension server.
func (a *aggregator) serve(w http.ResponseWriter, r *http.Request, rt *aggRoute) {
	if !rt.available || rt.endpoint == "" || rt.transport == nil {
		a.s.writeError(w, r, apierrors.NewServiceUnavailable(fmt.Sprintf("the APIService %q is not available: %s", rt.name, rt.reason)))
		return
	}
	user, _ := request.UserFrom(r.Context())
	identity := a.identityHeaders(user)
	target := &url.URL{Scheme: "https", Host: rt.endpoint}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Host = target.Host
			a.stripIdentity(pr.Out.Header)
			for k, vs := range identity {
				pr.Out.Header[k] = vs
			}
		},
		Transport:     rt.transport,
		FlushInterval: -1, // watches stream
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			a.s.log.Info("aggregated API unreachable", "apiservice", rt.name, "endpoint", rt.endpoint, "err", err)
			a.s.writeError(w, r, apierrors.NewServiceUnavailable(fmt.Sprintf("error trying to reach service: %v", err)))
		},
	}
	proxy.ServeHTTP(w, r)
}

// isUpgradeRequest reports whether r asks to switch protocols (exec-like streams, WebSockets):
// such requests are long-running.
func isUpgradeRequest(r *http.Request) bool {
	for _, v := range r.Header.Values("Connection") {
		for _, tok := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(tok), "upgrade") {
				return r.Header.Get("Upgrade") != ""
			}
		}
	}
	return false
}
