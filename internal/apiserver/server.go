package apiserver

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/utils/clock"

	"github.com/skiff-sh/skiff/internal/apiserver/audit"
	"github.com/skiff-sh/skiff/internal/apiserver/flowcontrol"
	"github.com/skiff-sh/skiff/internal/apiserver/store/servicealloc"
	"github.com/skiff-sh/skiff/internal/registry"
	"github.com/skiff-sh/skiff/internal/registry/core"
	"github.com/skiff-sh/skiff/internal/request"
	"github.com/skiff-sh/skiff/internal/storage"
)

// StorageFactory opens the store for one resource.
type StorageFactory func(res *registry.Resource) (storage.Interface, error)

// Config is everything the API server needs; the cluster package fills it in.
type Config struct {
	Scheme    *runtime.Scheme
	Resources []*registry.Resource
	Storage   StorageFactory
	// Ready reports whether the backing store answers, for /readyz.
	Ready func(ctx context.Context) error

	Authenticator Authenticator
	// AnonymousAuth lets a request that carries no credentials in as system:anonymous in group
	// system:unauthenticated, authorized like any other (kube-apiserver's --anonymous-auth); false
	// answers it 401. Credentials that do not authenticate are 401 either way.
	AnonymousAuth bool
	Authorizer    Authorizer
	// Rules lists the rules behind the Authorizer, for SelfSubjectRulesReview (nil: the review
	// answers incomplete).
	Rules     request.RuleLister
	Admission []AdmissionPlugin

	// SchedulingExplainer answers PodSchedulingExplanations (scheduling.skiff.sh); nil answers
	// them 503.
	SchedulingExplainer registry.SchedulingExplainer

	// OpenAPI and Discovery serve /openapi/* and /api, /apis.
	OpenAPI   OpenAPIService
	Discovery DiscoveryService

	// OnResourcesChanged is called with every served resource after CustomResourceDefinitions
	// added or removed some (RunCustomResources), to bring discovery and OpenAPI up to date.
	OnResourcesChanged func(resources []*registry.Resource)

	// CustomResourceTypeConverter gives server-side apply the schema of a custom resource; nil
	// deduces the structure from the objects.
	CustomResourceTypeConverter func(res *registry.Resource) (managedfields.TypeConverter, error)

	// TypeConverter gives server-side apply the schema of every type; nil deduces it from objects.
	TypeConverter managedfields.TypeConverter

	// ServiceAccountTokens issues tokens (serviceaccounts/token) and accepts them as bearer tokens.
	ServiceAccountTokens *ServiceAccountTokens

	// Kubelet reaches kubelets for pods/log, exec, attach and portforward; nil answers 503.
	Kubelet *KubeletClientConfig

	// ExtraSubresources serves subresources the API server proxies elsewhere (pods/log, exec, ...).
	ExtraSubresources func(gr schema.GroupResource, subresource string) func(w http.ResponseWriter, r *http.Request, info *RequestInfo)

	// ServiceClusterIPRange is the CIDR services get their cluster IPs from.
	ServiceClusterIPRange *net.IPNet

	Version  version.Info
	Clock    clock.PassiveClock
	Logger   *slog.Logger
	Registry prometheus.Registerer
	Gatherer prometheus.Gatherer

	// MinRequestTimeout bounds watches that give no timeoutSeconds (randomised up to twice this).
	MinRequestTimeout time.Duration
	// Auditor, when set, writes the audit log by its policy.
	Auditor *audit.Auditor
	// RequestTimeout bounds every request that is not long-running (0: DefaultRequestTimeout);
	// past it the client gets a 504 Timeout Status.
	RequestTimeout time.Duration

	// NonResourceHandlers serve non-resource paths (such as /skiff/v1/etcd/...) after
	// authentication and authorization (RBAC nonResourceURLs), each under its path prefix.
	NonResourceHandlers []NonResourceHandler
	// FlowControl is API Priority and Fairness (nil: every request runs at once).
	FlowControl *flowcontrol.Controller
	// Aggregation, when set, proxies the group versions of APIServices with a service to their
	// extension API servers (aggregation.go); RunAggregation keeps them up to date.
	Aggregation *AggregationConfig
}

// NonResourceHandler serves every path under Prefix.
type NonResourceHandler struct {
	Prefix  string
	Handler http.Handler
}

// nonResourceHandler is the handler configured for path, or nil.
func (s *Server) nonResourceHandler(path string) http.Handler {
	for _, h := range s.cfg.NonResourceHandlers {
		if path == h.Prefix || strings.HasPrefix(path, strings.TrimSuffix(h.Prefix, "/")+"/") {
			return h.Handler
		}
	}
	return nil
}

// OpenAPIService serves the OpenAPI documents and supplies the schema server-side apply works on.
type OpenAPIService interface {
	ServeV2(w http.ResponseWriter, r *http.Request)
	// ServeV3's others are index entries of documents the aggregated API servers serve.
	ServeV3(w http.ResponseWriter, r *http.Request, others map[string]string)
}

// DiscoveryService serves /api, /apis and the group-version resource lists.
type DiscoveryService interface {
	http.Handler
}

// Server is the HTTP API server. It is safe for concurrent use; resources may be added at run time.
type Server struct {
	cfg     Config
	codecs  serializer.CodecFactory
	strict  serializer.CodecFactory
	clock   clock.PassiveClock
	log     *slog.Logger
	metrics *metrics
	// slis are the health checks' indicators served at /metrics/slis.
	slis *healthSLIs
	// steps are the named start-up steps the health endpoints report (health.go).
	steps startSteps

	// nameSuffix makes generated names' random part (a seam for tests of name collisions).
	nameSuffix func() string

	// proxyTransport reaches pods and services for their proxy subresources; kubeletTransport
	// reaches kubelets for nodes/proxy (nil without a kubelet client configuration).
	proxyTransport   *http.Transport
	kubeletTransport *http.Transport
	// proxyAddressAllowed decides which pod and endpoint IPs the proxies may dial (a seam for
	// tests, whose backends listen on loopback).
	proxyAddressAllowed func(net.IP) bool

	// services allocates cluster IPs and node ports (nil when no service range is configured); the
	// services strategy's hooks call it.
	services *servicealloc.Allocator

	mu       sync.RWMutex
	handlers map[schema.GroupVersionResource]*resourceHandler
	byKind   map[schema.GroupVersionKind]*resourceHandler
	// crds serves CustomResourceDefinitions' resources (SyncCustomResources, RunCustomResources).
	crds *crdController
	// agg proxies APIServices' group versions (nil without Config.Aggregation).
	agg *aggregator
}

// New builds the server and opens a store for every resource.
func New(cfg Config) (*Server, error) {
	if cfg.Scheme == nil || cfg.Storage == nil {
		return nil, errors.New("apiserver: Scheme and Storage are required")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Authenticator == nil {
		return nil, errors.New("apiserver: an Authenticator is required")
	}
	if cfg.Authorizer == nil {
		cfg.Authorizer = AuthenticatedAllowed{}
	}
	if cfg.MinRequestTimeout == 0 {
		cfg.MinRequestTimeout = 30 * time.Minute
	}
	if cfg.RequestTimeout == 0 {
		cfg.RequestTimeout = DefaultRequestTimeout
	}
	if cfg.Registry == nil {
		reg := prometheus.NewRegistry()
		cfg.Registry, cfg.Gatherer = reg, reg
	}
	s := &Server{
		cfg:        cfg,
		codecs:     serializer.NewCodecFactory(cfg.Scheme),
		strict:     serializer.NewCodecFactory(cfg.Scheme, serializer.EnableStrict),
		clock:      cfg.Clock,
		log:        cfg.Logger,
		handlers:   map[schema.GroupVersionResource]*resourceHandler{},
		byKind:     map[schema.GroupVersionKind]*resourceHandler{},
		nameSuffix: randomNameSuffix,
		slis:       newHealthSLIs(),

		proxyTransport:      newProxyTransport(),
		proxyAddressAllowed: defaultProxyAddressAllowed,
	}
	if cfg.Kubelet != nil {
		s.kubeletTransport = &http.Transport{TLSClientConfig: cfg.Kubelet.TLS.Clone(), ForceAttemptHTTP2: false}
	}
	m, err := newMetrics(cfg.Registry)
	if err != nil {
		return nil, err
	}
	s.metrics = m
	if cfg.Aggregation != nil {
		s.agg = newAggregator(s, *cfg.Aggregation)
	}
	if cfg.ServiceAccountTokens != nil && cfg.ServiceAccountTokens.Verifier != nil {
		s.cfg.Authenticator = UnionAuthenticator{cfg.Authenticator, serviceAccountAuthenticator{s: s}}
	}
	if cfg.ServiceClusterIPRange != nil {
		ranges, err := cfg.Storage(servicealloc.StorageResource())
		if err != nil {
			return nil, fmt.Errorf("service allocation storage: %w", err)
		}
		s.services = servicealloc.New(cfg.ServiceClusterIPRange, ranges)
	}
	for _, res := range cfg.Resources {
		if err := s.AddResource(res); err != nil {
			return nil, err
		}
	}
	if s.services != nil {
		// Cluster IPs beyond --service-cidr come from the ServiceCIDRs (servicecidrs.go).
		s.services.SetExtraRanges(extraServiceRanges{s})
	}
	return s, nil
}

// AddResource starts serving res.
func (s *Server) AddResource(res *registry.Resource) error {
	if s.services != nil {
		// The services strategy allocates through the server's allocator (a copy of res; the
		// registry's Resource is shared and never changed).
		res = core.WithServiceAllocator(res, s.services)
	}
	var store storage.Interface
	if res.Compute == nil {
		// Computed resources keep nothing: no storage, no watch.
		st, err := s.cfg.Storage(res)
		if err != nil {
			return fmt.Errorf("open storage for %s: %w", res.GroupResource(), err)
		}
		store = st
	}
	h, err := newResourceHandler(s, res, store)
	if err != nil {
		return err
	}
	s.mu.Lock()
	old := s.handlers[res.GroupVersionResource()]
	s.handlers[res.GroupVersionResource()] = h
	s.byKind[res.GroupVersionKind()] = h
	s.mu.Unlock()
	if old != nil {
		// A resource rebuilt at run time (its CustomResourceDefinition changed) replaces the old
		// one; the old storage's watch cache is let go.
		stopStorage(old)
	}
	return nil
}

func (s *Server) handlerFor(gvr schema.GroupVersionResource) *resourceHandler {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.handlers[gvr]
}

// Resources lists the served resources, sorted by group, version and name.
func (s *Server) Resources() []*registry.Resource {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]*registry.Resource, 0, len(s.handlers))
	for _, h := range s.handlers {
		out = append(out, h.res)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].GroupVersionResource(), out[j].GroupVersionResource()
		return a.String() < b.String()
	})
	return out
}

// ServeHTTP authenticates, routes and records every request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := s.clock.Now()
	rec := &statusRecorder{wrappedWriter: wrappedWriter{w}, body: countBody(r)}
	info := ParseRequestInfo(r)
	sliCtx, excluded := request.WithSLIExclusions(r.Context())
	r = r.WithContext(sliCtx)
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				panic(p)
			}
			s.log.Error("panic serving request", "path", r.URL.Path, "panic", p, "stack", string(debug.Stack()))
			if rec.status == 0 {
				s.writeError(rec, r, apierrors.NewInternalError(fmt.Errorf("%v", p)))
			}
		}
		elapsed := s.clock.Since(start)
		s.metrics.observe(info, metricsVerb(info, r), rec.statusCode(), elapsed, excluded.Total())
		if info.Verb != "watch" || elapsed > time.Second {
			s.log.Debug("request", "verb", info.Verb, "path", r.URL.Path, "code", rec.statusCode(), "duration", elapsed)
		}
	}()

	// The dashboard's static files (GET/HEAD /dashboard/...) load without credentials: the page
	// signs the user in and sends their token with every API call. Nothing else is exempt.
	if (r.Method == http.MethodGet || r.Method == http.MethodHead) && (r.URL.Path == "/dashboard" || strings.HasPrefix(r.URL.Path, "/dashboard/")) {
		if h := s.nonResourceHandler(r.URL.Path); h != nil {
			h.ServeHTTP(rec, r)
			return
		}
	}

	user, ok, err := s.cfg.Authenticator.AuthenticateRequest(r)
	if err == nil && !ok && s.cfg.AnonymousAuth && !presentsCredentials(r) {
		// Health, version and discovery are open to anonymous callers through the bootstrap
		// policy's system:public-info-viewer binding, not by an exemption here.
		user, ok = anonymousUser(), true
	}
	if err != nil || !ok {
		s.writeError(rec, r, apierrors.NewUnauthorized("Unauthorized"))
		return
	}
	// The audit log sees every authenticated request from here on, judged by the policy on who
	// authenticated (as kube-apiserver audits before impersonation), denials included.
	auditRec, w, r := s.auditBegin(rec, r, info, user)
	if auditRec != nil {
		defer func() {
			p := recover()
			auditRec.finish(p != nil)
			if p != nil {
				panic(p)
			}
		}()
	}
	if user, err = s.impersonate(r.Context(), r, user); err != nil {
		s.writeError(w, r, err)
		return
	}
	auditRec.impersonating(user)
	seatsHandedOff := false
	if s.cfg.FlowControl != nil {
		// API Priority and Fairness (apf.go): after impersonation, before authorization.
		queued := s.clock.Now()
		ticket, ok := s.admitFlow(w, r, info, user)
		request.ExcludeFromSLI(r.Context(), s.clock.Since(queued))
		if !ok {
			return
		}
		defer func() {
			if !seatsHandedOff {
				ticket.Finish()
			}
		}()
		r = r.WithContext(withSeats(r.Context(), ticket))
	}
	ctx := request.WithAuthorizer(request.WithUser(r.Context(), user), s.cfg.Authorizer)
	r = r.WithContext(ctx)
	authzInfo := authorizationInfo(info, r.URL.Query())
	allowed, reason := s.cfg.Authorizer.Authorize(ctx, user, authzInfo)
	auditRec.authorized(allowed, reason)
	if !allowed {
		// Denials are rare and tell which component lacks a right: worth a line at info.
		s.log.Info("request forbidden", "user", user.Name, "groups", user.Groups, "verb", info.Verb, "resource", info.Resource,
			"subresource", info.Subresource, "namespace", authzInfo.Namespace, "name", info.Name, "path", info.Path, "reason", reason)
		s.writeError(w, r, forbidden(authzInfo, user, reason))
		return
	}
	if longRunning(info) || isUpgradeRequest(r) || strings.HasPrefix(r.URL.Path, "/debug/pprof") {
		// Profiles run for their ?seconds=, like watches for their timeoutSeconds. The proxies,
		// exec and attach stream their body while they answer: it is not let go (body.go).
		rec.body = nil
		s.serveAuthorized(w, r, info)
		return
	}
	timeout, err := s.requestTimeout(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	// The handler gives its flow-control seats back when it really ends, not at a 504.
	seatsHandedOff = true
	s.serveWithTimeout(w, r, timeout, func(w http.ResponseWriter, r *http.Request) {
		defer releaseSeats(r.Context())
		s.serveAuthorized(w, r, info)
	})
}

// serveAuthorized serves an authenticated, authorized request.
func (s *Server) serveAuthorized(rec http.ResponseWriter, r *http.Request, info *RequestInfo) {
	if rt := s.agg.route(r.URL.Path); rt != nil {
		// An APIService with a service: proxied to its extension API server (aggregation.go).
		s.agg.serve(rec, r, rt)
		return
	}
	switch {
	case r.URL.Path == "/healthz" || r.URL.Path == "/livez" || r.URL.Path == "/readyz":
		s.serveHealth(rec, r, strings.TrimPrefix(r.URL.Path, "/"))
	case r.URL.Path == "/version" || r.URL.Path == "/version/":
		s.writeJSON(rec, http.StatusOK, s.cfg.Version)
	case strings.HasPrefix(r.URL.Path, "/debug/pprof"):
		// Profiling, as kube-apiserver's --profiling serves it, for authenticated callers only.
		servePprof(rec, r)
	case r.URL.Path == "/metrics":
		promhttp.HandlerFor(s.cfg.Gatherer, promhttp.HandlerOpts{}).ServeHTTP(rec, r)
	case r.URL.Path == "/metrics/slis":
		s.slis.ServeHTTP(rec, r)
	case r.URL.Path == "/openapi/v2":
		if s.cfg.OpenAPI == nil {
			s.writeError(rec, r, apierrors.NewNotFound(schema.GroupResource{}, r.URL.Path))
			return
		}
		s.cfg.OpenAPI.ServeV2(rec, r)
	case strings.HasPrefix(r.URL.Path, "/openapi/v3"):
		if s.cfg.OpenAPI == nil {
			s.writeError(rec, r, apierrors.NewNotFound(schema.GroupResource{}, r.URL.Path))
			return
		}
		if rt := s.agg.openAPIV3Route(r.URL.Path); rt != nil {
			// An aggregated group version's document is its extension API server's own.
			s.agg.serve(rec, r, rt)
			return
		}
		s.cfg.OpenAPI.ServeV3(rec, r, s.agg.openAPIV3Paths())
	case info.IsResourceRequest:
		s.serveResource(rec, r, info)
	case s.nonResourceHandler(r.URL.Path) != nil:
		s.nonResourceHandler(r.URL.Path).ServeHTTP(rec, r)
	case info.APIPrefix != "" || r.URL.Path == "/api" || r.URL.Path == "/apis" || r.URL.Path == "/api/" || r.URL.Path == "/apis/":
		if s.cfg.Discovery == nil {
			s.writeError(rec, r, apierrors.NewNotFound(schema.GroupResource{}, r.URL.Path))
			return
		}
		s.cfg.Discovery.ServeHTTP(rec, r)
	default:
		s.writeNoRoute(rec, r)
	}
}

// writeNoRoute answers a path the API does not serve as Kubernetes does: its last handler's plain
// "404 page not found", which client-go reads as a NotFound Status with this message, written
// here as that Status directly.
func (s *Server) writeNoRoute(w http.ResponseWriter, r *http.Request) {
	s.writeStatus(w, r, &metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusNotFound, Reason: metav1.StatusReasonNotFound,
		Message: "the server could not find the requested resource",
		Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: metav1.CauseTypeUnexpectedServerResponse, Message: "404 page not found"}}},
	})
}

// readyzTimeout bounds the storage check of /readyz.
const readyzTimeout = 3 * time.Second

func (s *Server) serveResource(w http.ResponseWriter, r *http.Request, info *RequestInfo) {
	gvr := schema.GroupVersionResource{Group: info.APIGroup, Version: info.APIVersion, Resource: info.Resource}
	h := s.handlerFor(gvr)
	if h == nil {
		s.writeNoRoute(w, r)
		return
	}
	h.serve(w, r, info)
}

// TLSConfig builds the serving TLS configuration: client certificates are requested and verified
// against clientCAs when given, but not required, so anonymous health checks still get through.
// certs are the serving certificates in order of preference (Go serves the first one a client's
// ClientHello supports: ECDSA first, then RSA for clients that offer only RSA suites).
func TLSConfig(certs []tls.Certificate, clientCAs *tls.Config) *tls.Config {
	cfg := &tls.Config{
		Certificates: certs,
		MinVersion:   tls.VersionTLS12,
		NextProtos:   []string{"h2", "http/1.1"},
	}
	if clientCAs != nil {
		cfg.ClientCAs = clientCAs.ClientCAs
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
	}
	return cfg
}

// statusRecorder remembers the status code for logs and metrics and passes Flush through for
// watches. When the answer begins it lets go of the part of the request's body that was not read
// (body.go), so that an answer given on the headers is not held back by a body that never comes.
type statusRecorder struct {
	wrappedWriter
	status int
	// body counts the reads of the request's body; nil when there is none, or when the request
	// streams it while it answers.
	body *bodyCounter
}

func (r *statusRecorder) WriteHeader(code int) {
	r.begin(code)
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	r.begin(http.StatusOK)
	return r.ResponseWriter.Write(b)
}

// begin records the answer's status, once, and lets the unread rest of the body go.
func (r *statusRecorder) begin(code int) {
	if r.status != 0 {
		return
	}
	r.status = code
	if r.body != nil && r.body.unread() {
		letBodyGo(r.ResponseWriter)
	}
}

func (r *statusRecorder) statusCode() int {
	if r.status == 0 {
		return http.StatusOK
	}
	return r.status
}

func writePlain(w http.ResponseWriter, code int, body string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(body))
}

type metrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	// sli is latency less the time in a priority-and-fairness queue and in admission webhooks
	// (request.SLIExclusions), for requests that are not long-running: what Kubernetes' API call
	// latency SLOs are defined on (apiserver_request_sli_duration_seconds in kube-apiserver).
	sli *prometheus.HistogramVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_request_total",
			Help: "Requests by verb, group, version, resource, subresource and HTTP code.",
		}, []string{"verb", "group", "version", "resource", "subresource", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "apiserver_request_duration_seconds",
			Help:    "Request latency by verb, group, version, resource and subresource (watches excluded).",
			Buckets: []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"verb", "group", "version", "resource", "subresource"}),
		sli: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "apiserver_request_sli_duration_seconds",
			Help:    "Request latency without priority-and-fairness queue waits and admission webhook calls, by verb, group, version, resource and subresource (long-running requests excluded).",
			Buckets: []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"verb", "group", "version", "resource", "subresource"}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.latency, m.sli} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register API server metrics: %w", err)
		}
	}
	return m, nil
}

// metricsVerb is the verb label Kubernetes reports: the HTTP method for writes (POST, PUT, PATCH,
// DELETE), APPLY for server-side apply, and GET, LIST, WATCH or DELETECOLLECTION for the rest, so
// the usual dashboards and alerts (verb=~"POST|PUT|PATCH|DELETE") work unchanged.
func metricsVerb(info *RequestInfo, r *http.Request) string {
	if !info.IsResourceRequest {
		return strings.ToUpper(r.Method)
	}
	switch info.Verb {
	case "create":
		return http.MethodPost
	case "update":
		return http.MethodPut
	case "patch":
		if pt, ok := patchTypeOf(r.Header.Get("Content-Type")); ok && pt == types.ApplyYAMLPatchType {
			return "APPLY"
		}
		return http.MethodPatch
	}
	return strings.ToUpper(info.Verb)
}

func (m *metrics) observe(info *RequestInfo, verb string, code int, elapsed, excluded time.Duration) {
	m.requests.WithLabelValues(verb, info.APIGroup, info.APIVersion, info.Resource, info.Subresource, strconv.Itoa(code)).Inc()
	if info.Verb != "watch" {
		m.latency.WithLabelValues(verb, info.APIGroup, info.APIVersion, info.Resource, info.Subresource).Observe(elapsed.Seconds())
	}
	if !longRunning(info) {
		m.sli.WithLabelValues(verb, info.APIGroup, info.APIVersion, info.Resource, info.Subresource).Observe(max(elapsed-excluded, 0).Seconds())
	}
}
