package cluster

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/clock"

	"github.com/skiff-sh/skiff/internal/apiserver"
	"github.com/skiff-sh/skiff/internal/apiserver/admission/noderestriction"
	"github.com/skiff-sh/skiff/internal/apiserver/admission/rbacescalation"
	"github.com/skiff-sh/skiff/internal/apiserver/discovery"
	"github.com/skiff-sh/skiff/internal/apiserver/local"
	"github.com/skiff-sh/skiff/internal/controller/localpath"
	"github.com/skiff-sh/skiff/internal/dashboard"
	"github.com/skiff-sh/skiff/internal/etcd"
	"github.com/skiff-sh/skiff/internal/metricsserver"
	"github.com/skiff-sh/skiff/internal/openapi"
	"github.com/skiff-sh/skiff/internal/registry"
	"github.com/skiff-sh/skiff/internal/registry/builtin"
	"github.com/skiff-sh/skiff/internal/serviceaccount"
	"github.com/skiff-sh/skiff/internal/storage"
	"github.com/skiff-sh/skiff/internal/storage/etcd3"
	"github.com/skiff-sh/skiff/internal/storage/watchcache"
	skiffversion "github.com/skiff-sh/skiff/internal/version"
)

// apiServerDeps is what newAPIServer builds the API server from, by name: the node's pieces that
// outlive it (the etcd client, the watch caches' set, the admission chain) and the optional ones
// (space check, encryption at rest, resource metrics) that a node without them leaves nil.
type apiServerDeps struct {
	cfg *Config
	// client is the etcd client of the readiness check, the membership API and component status.
	client *clientv3.Client
	// storage is the etcd client every resource's store and watch cache use (in process to an
	// embedded member); nil means client.
	storage *clientv3.Client
	// spaceCheck, when set, fails readiness while etcd is out of space (nil: never).
	spaceCheck func() error
	// metrics holds the registry the API server's, the watch caches' and flow control's metrics join.
	metrics *componentMetrics
	// caches collects every watch cache opened, so the node stops them before it closes client.
	caches *cacheSet
	// admission is the chain whose caches start before the first write.
	admission *admissionChain
	// encryption seals resources in etcd (nil: stored as they are).
	encryption *atRest
	// resourceMetrics serves metrics.k8s.io (nil: not served).
	resourceMetrics *metricsserver.Server
	// explainer answers PodSchedulingExplanations.
	explainer registry.SchedulingExplainer
}

// validate names the required dependencies left unset, so a caller that forgets one gets an
// error at assembly rather than a nil dereference on the first request.
func (d apiServerDeps) validate() error {
	var missing []string
	for _, f := range []struct {
		name  string
		unset bool
	}{
		{"cfg", d.cfg == nil}, {"client", d.client == nil}, {"metrics", d.metrics == nil},
		{"caches", d.caches == nil}, {"admission", d.admission == nil}, {"explainer", d.explainer == nil},
	} {
		if f.unset {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("API server dependencies not set: %s", strings.Join(missing, ", "))
	}
	return nil
}

// newAPIServer assembles the API server over an etcd client and seeds the built-in objects. Every
// watch cache it opens (now, or later for resources added at run time) joins caches, which the
// node stops before it closes the etcd client. The admission chain's caches start before the first
// write, so bootstrap's writes are admitted too.
func newAPIServer(ctx, admissionCtx context.Context, d apiServerDeps) (*apiserver.Server, *authorization, error) {
	if err := d.validate(); err != nil {
		return nil, nil, err
	}
	cfg, client, caches, admission := d.cfg, d.client, d.caches, d.admission
	scheme, err := builtin.NewScheme()
	if err != nil {
		return nil, nil, err
	}
	resources := builtin.Resources()
	oapi, err := openapi.New(scheme, resources, openapi.WithVersion(skiffversion.GitVersion))
	if err != nil {
		return nil, nil, fmt.Errorf("build OpenAPI documents: %w", err)
	}
	disc := discovery.New(resources, builtin.ExtraSubresources())
	metricsRegistry := d.metrics.base
	cacheMetrics, err := watchcache.NewMetrics(metricsRegistry)
	if err != nil {
		return nil, nil, err
	}
	auditor, err := newAuditor(cfg)
	if err != nil {
		return nil, nil, err
	}
	// Every resource's watches share one etcd watch through a watch cache; reads and writes go to etcd.
	// Consistent lists come from the caches only where etcd's progress notifications are sound
	// (an external etcd may be older than 3.4.31 or 3.5.13).
	storageClient := cmp.Or(d.storage, client)
	progress := etcd3.NewProgressSupport(storageClient, clock.RealClock{})
	storageFactory := func(res *registry.Resource) (storage.Interface, error) {
		if res.GroupResource() == componentStatusesResource {
			return newComponentStatusStore(client, scheme, resources, cfg.StorageEncoding, clock.RealClock{})
		}
		if st := resourceMetricsStorage(d.resourceMetrics, res); st != nil {
			return st, nil
		}
		codec, err := builtin.StorageCodec(scheme, res, cfg.StorageEncoding)
		if err != nil {
			return nil, err
		}
		store := etcd3.New(storageClient, codec, res.New, res.NewList).WithLogger(cfg.Logger.With("component", "storage")).WithProgressSupport(progress)
		if d.encryption != nil {
			gr := res.GroupResource()
			store.WithTransformer(d.encryption.reloader.For(gr.Group, gr.Resource))
		}
		cache, err := watchcache.New(store, watchcache.Config{
			NewFunc: res.New, NewListFunc: res.NewList, Logger: cfg.Logger, Metrics: cacheMetrics,
		})
		if err != nil {
			return nil, err
		}
		caches.addResource(res, cache)
		return cache, nil
	}
	_, serviceRange, err := net.ParseCIDR(cfg.ServiceCIDR)
	if err != nil {
		return nil, nil, fmt.Errorf("service CIDR: %w", err)
	}
	kubeletTLS, err := kubeletClientTLS(cfg, clock.RealClock{}.Now())
	if err != nil {
		return nil, nil, err
	}
	// The service-account keys are reloaded when `skiff certificate rotate-sa-key` changes them (sakeys.go).
	saKeys, err := newSAKeyHolder(filepath.Join(cfg.DataDir, "pki"), cfg.Logger)
	if err != nil {
		return nil, nil, err
	}
	issuer, oidcHandlers, err := serviceAccountIssuer(cfg, saKeys)
	if err != nil {
		return nil, nil, err
	}
	saIssuer := serviceaccount.NewIssuerFrom(saKeys, issuer)
	audiences := []string{issuer}
	authz, err := newAuthorization(cfg, clock.RealClock{}.Now())
	if err != nil {
		return nil, nil, err
	}
	// API aggregation: the front-proxy certificates (aggregation.go).
	aggregation, err := newAggregationSetup(cfg, clock.RealClock{}.Now())
	if err != nil {
		return nil, nil, err
	}
	var built atomic.Pointer[apiserver.Server]
	flowControl, err := newFlowControl(cfg, metricsRegistry)
	if err != nil {
		return nil, nil, err
	}
	srv, err := apiserver.New(apiserver.Config{
		Authorizer: authz.authorize,
		Rules:      authz.rules,
		// PodSchedulingExplanations (explain.go).
		SchedulingExplainer: d.explainer,
		ServiceAccountTokens: &apiserver.ServiceAccountTokens{
			Issuer: saIssuer, Verifier: serviceaccount.NewVerifierFrom(saKeys, issuer, audiences), Audiences: audiences,
		},
		Kubelet:               &apiserver.KubeletClientConfig{TLS: kubeletTLS, DefaultPort: 10250},
		ServiceClusterIPRange: serviceRange,
		Scheme:                scheme,
		Resources:             resources,
		Storage:               storageFactory,
		Ready: func(ctx context.Context) error {
			if d.spaceCheck != nil {
				if err := d.spaceCheck(); err != nil {
					return err
				}
			}
			return etcd.CheckHealth(ctx, client)
		},
		NonResourceHandlers: append(append(etcdMembershipHandlers(client, d.spaceCheck, cfg.Logger), apiserver.NonResourceHandler{Prefix: dashboard.Prefix, Handler: dashboard.Assets()}), oidcHandlers...),
		Authenticator: apiserver.UnionAuthenticator{aggregation.requestHeader,
			apiserver.ClientCertAuthenticator{Roots: aggregation.clusterRoots}, bootstrapTokenAuthenticator(cfg, &built)},
		AnonymousAuth: cfg.AnonymousAuth,
		Admission:     admission.plugins(rbacescalation.Plugin{Authorizer: authz.authorize, Rules: authz.rules}, noderestriction.Plugin{}),
		OpenAPI:       oapi,
		Discovery:     disc,
		// CustomResourceDefinitions change the served set at run time.
		CustomResourceTypeConverter: oapi.CustomResourceTypeConverter,
		OnResourcesChanged: func(all []*registry.Resource) {
			disc.Update(all, builtin.ExtraSubresources())
			if err := oapi.Update(all); err != nil {
				cfg.Logger.Error("update OpenAPI documents", "err", err)
			}
		},
		TypeConverter:     oapi.TypeConverter(),
		Auditor:           auditor,
		RequestTimeout:    cfg.RequestTimeout,
		MinRequestTimeout: cfg.MinRequestTimeout,
		FlowControl:       flowControl,
		Aggregation:       &aggregation.server,
		Version:           skiffversion.Info(),
		Registry:          metricsRegistry,
		Gatherer:          d.metrics,
		Clock:             clock.RealClock{},
		Logger:            cfg.Logger,
	})
	if err != nil {
		return nil, nil, err
	}
	built.Store(srv)
	// The Node authorizer's pod and PVC caches read the watch caches just built (authz.go).
	authz.inProcess = func() (*local.Informers, error) { return caches.localInformers(cfg) }
	// The admission plugins' caches run before the first write: bootstrap's writes are admitted too.
	// The health endpoints report each start-up step under Kubernetes' name until it is done.
	srv.DeclareStartSteps(apiserver.StartSteps()...)
	if err := admission.start(admissionCtx, srv); err != nil {
		return nil, nil, err
	}
	srv.StartStepDone(apiserver.StepAdmissionInitializer, apiserver.StepStartInformers, apiserver.CheckInformerSync)
	writeFlowSchemaStatus := func(ctx context.Context, fs *flowcontrolv1.FlowSchema) error {
		_, err := srv.UpdateStatus(ctx, flowcontrolv1.GroupName, "flowschemas", fs)
		return err
	}
	if err := flowControl.Start(admissionCtx, srv.ListWatch, writeFlowSchemaStatus); err != nil {
		return nil, nil, err
	}
	if err := admission.startTypeChecking(admissionCtx, srv, oapi); err != nil {
		return nil, nil, err
	}
	if err := bootstrap(ctx, srv, cfg); err != nil {
		return nil, nil, err
	}
	srv.StartStepDone(apiserver.StepBootstrapController, apiserver.StepSystemNamespaces, apiserver.StepSystemPriorityClasses)
	if err := ensurePolicy(ctx, srv); err != nil {
		return nil, nil, err
	}
	srv.StartStepDone(apiserver.StepRBACBootstrapRoles)
	if err := ensureAggregationObjects(ctx, srv, aggregation, resources); err != nil {
		return nil, nil, err
	}
	srv.StartStepDone(apiserver.StepAuthenticationInfo, apiserver.StepAutoregistration, apiserver.CheckAutoregisterCompletion,
		apiserver.StepAPIServiceRegistration)
	return srv, authz, nil
}

// bootstrap creates what every cluster has from its first start: the system namespaces, the system
// priority classes, the flow-control levels and schemas and the "kubernetes" service.
func bootstrap(ctx context.Context, srv *apiserver.Server, cfg *Config) error {
	// The namespaces first: the other seeds are admitted into them. Then the seeds that do not
	// depend on each other, written together (EnsureObjects).
	var namespaces []apiserver.Seed
	for _, name := range []string{"default", "kube-system", "kube-public", "kube-node-lease"} {
		namespaces = append(namespaces, apiserver.Seed{Resource: schema.GroupResource{Resource: "namespaces"}, Object: &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}})
	}
	if err := srv.EnsureObjects(ctx, namespaces); err != nil {
		return err
	}
	var seeds []apiserver.Seed
	for _, pc := range builtin.SystemPriorityClasses() {
		seeds = append(seeds, apiserver.Seed{Resource: schema.GroupResource{Group: "scheduling.k8s.io", Resource: "priorityclasses"}, Object: pc})
	}
	// A StatefulSet with volumeClaimTemplates runs with nothing installed: claims without a class get
	// this one (DefaultStorageClass admission) and the local-path provisioner serves it.
	seeds = append(seeds, apiserver.Seed{Resource: schema.GroupResource{Group: "storage.k8s.io", Resource: "storageclasses"}, Object: localpath.DefaultStorageClass()})
	// API Priority and Fairness' configuration objects exist from the first start, as in
	// Kubernetes; flow control (flowcontrol.go) follows them.
	levels, schemas := builtin.FlowControlConfiguration()
	for _, pl := range levels {
		seeds = append(seeds, apiserver.Seed{Resource: schema.GroupResource{Group: "flowcontrol.apiserver.k8s.io", Resource: "prioritylevelconfigurations"}, Object: pl})
	}
	for _, fs := range schemas {
		seeds = append(seeds, apiserver.Seed{Resource: schema.GroupResource{Group: "flowcontrol.apiserver.k8s.io", Resource: "flowschemas"}, Object: fs})
	}
	if err := srv.EnsureObjects(ctx, seeds); err != nil {
		return err
	}
	first, err := firstServiceIP(cfg.ServiceCIDR)
	if err != nil {
		return err
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "kubernetes", Namespace: "default", Labels: map[string]string{"component": "apiserver", "provider": "kubernetes"}},
		Spec: corev1.ServiceSpec{
			Type:      corev1.ServiceTypeClusterIP,
			ClusterIP: first.String(),
			Ports:     []corev1.ServicePort{{Name: "https", Port: 443, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(int32(cfg.HTTPSPort))}},
		},
	}
	if err := srv.EnsureObject(ctx, schema.GroupResource{Resource: "services"}, svc); err != nil {
		return err
	}
	if err := ensureDefaultServiceCIDR(ctx, srv, cfg.ServiceCIDR); err != nil {
		return err
	}
	// Its Endpoints and EndpointSlice are the endpoint reconciler's (lb.go, leasereconciler): they
	// list exactly the live API servers.
	return ensureKubeDNSService(ctx, srv, cfg)
}

// cacheSet holds the API server's watch caches so that a stopping node ends their etcd watches
// before it closes the client (otherwise each cache logs a failed restart against a closed client).
type cacheSet struct {
	mu     sync.Mutex
	caches []*watchcache.Cache
	// byResource finds a resource's cache for in-process informers (onecopy.go).
	byResource map[schema.GroupResource]cachedResource
}

func (s *cacheSet) add(c *watchcache.Cache) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.caches = append(s.caches, c)
}

func (s *cacheSet) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.caches {
		c.Stop()
	}
	s.caches = nil
}
