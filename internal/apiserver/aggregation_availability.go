package apiserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	apiregv1 "github.com/skiff-sh/skiff/internal/apis/apiregistrationv1"
	"github.com/skiff-sh/skiff/internal/request"
	"github.com/skiff-sh/skiff/internal/storage"
)

var apiServiceResource = schema.GroupResource{Group: apiregv1.GroupName, Resource: "apiservices"}

// availabilityFacts is what the controller found out about one APIService's backend; a
// decision is made from them alone (decideAvailability).
type availabilityFacts struct {
	local          bool
	serviceMissing bool
	serviceErr     error
	portMissing    bool
	portName       string
	noSlices       bool  // no EndpointSlice names the service
	noEndpoint     bool  // slices exist, none has a ready address with the port
	endpointErr    error // listing the slices failed
	discoveryURL   string
	discoveryErr   error // the discovery check failed (nil when it passed or was not made)
}

// decideAvailability is the Available condition the facts call for, with kube-aggregator's reasons
// and messages (LastTransitionTime is the caller's).
func decideAvailability(svc *apiregv1.APIService, f availabilityFacts) apiregv1.APIServiceCondition {
	cond := apiregv1.APIServiceCondition{Type: apiregv1.Available, Status: apiregv1.ConditionFalse}
	if f.local || svc.Spec.Service == nil {
		cond.Status, cond.Reason, cond.Message = apiregv1.ConditionTrue, "Local", "Local APIServices are always available"
		return cond
	}
	ref := svc.Spec.Service
	port := int32(443)
	if ref.Port != nil {
		port = *ref.Port
	}
	switch {
	case f.serviceMissing:
		cond.Reason, cond.Message = "ServiceNotFound", fmt.Sprintf("service/%s in %q is not present", ref.Name, ref.Namespace)
	case f.serviceErr != nil:
		cond.Status, cond.Reason = apiregv1.ConditionUnknown, "ServiceAccessError"
		cond.Message = fmt.Sprintf("service/%s in %q cannot be checked due to: %v", ref.Name, ref.Namespace, f.serviceErr)
	case f.portMissing:
		cond.Reason, cond.Message = "ServicePortError", fmt.Sprintf("service/%s in %q is not listening on port %d", ref.Name, ref.Namespace, port)
	case f.endpointErr != nil:
		cond.Status, cond.Reason = apiregv1.ConditionUnknown, "EndpointsAccessError"
		cond.Message = fmt.Sprintf("service/%s in %q cannot be checked due to: %v", ref.Name, ref.Namespace, f.endpointErr)
	case f.noSlices:
		cond.Reason, cond.Message = "EndpointsNotFound", fmt.Sprintf("cannot find endpoints for service/%s in %q", ref.Name, ref.Namespace)
	case f.noEndpoint:
		cond.Reason, cond.Message = "MissingEndpoints", fmt.Sprintf("endpoints for service/%s in %q have no addresses with port name %q", ref.Name, ref.Namespace, f.portName)
	case f.discoveryErr != nil:
		cond.Reason = "FailedDiscoveryCheck"
		cond.Message = fmt.Sprintf("failing or missing response from %s: %v", f.discoveryURL, f.discoveryErr)
	default:
		cond.Status, cond.Reason, cond.Message = apiregv1.ConditionTrue, "Passed", "all checks passed"
	}
	return cond
}

// withCondition is status with cond set: the transition time moves only when the status does.
func withCondition(status apiregv1.APIServiceStatus, cond apiregv1.APIServiceCondition, now time.Time) (apiregv1.APIServiceStatus, bool) {
	out := apiregv1.APIServiceStatus{Conditions: append([]apiregv1.APIServiceCondition(nil), status.Conditions...)}
	for i, c := range out.Conditions {
		if c.Type != cond.Type {
			continue
		}
		if c.Status == cond.Status && c.Reason == cond.Reason && c.Message == cond.Message {
			return status, false
		}
		cond.LastTransitionTime = c.LastTransitionTime
		if c.Status != cond.Status {
			cond.LastTransitionTime = metav1.NewTime(now)
		}
		out.Conditions[i] = cond
		return out, true
	}
	cond.LastTransitionTime = metav1.NewTime(now)
	out.Conditions = append(out.Conditions, cond)
	return out, true
}

// serviceEndpoint finds a ready endpoint (host:port) of the service port: the facts up to, not
// including, the discovery check.
func (s *Server) serviceEndpoint(ctx context.Context, ref *apiregv1.ServiceReference) (string, availabilityFacts) {
	var f availabilityFacts
	port := int32(443)
	if ref.Port != nil {
		port = *ref.Port
	}
	services := s.handlerForGroupResource(schema.GroupResource{Resource: "services"})
	slices := s.handlerForGroupResource(schema.GroupResource{Group: discoveryv1.GroupName, Resource: "endpointslices"})
	if services == nil || slices == nil {
		f.serviceErr = errors.New("services or endpoint slices are not served")
		return "", f
	}
	obj, err := services.st.Get(ctx, ref.Namespace, ref.Name, storage.GetOptions{})
	if apierrors.IsNotFound(err) {
		f.serviceMissing = true
		return "", f
	}
	if err != nil {
		f.serviceErr = err
		return "", f
	}
	svc, _ := obj.(*corev1.Service)
	if svc != nil && svc.Spec.Type != corev1.ServiceTypeExternalName {
		found := false
		for _, p := range svc.Spec.Ports {
			if p.Port == port {
				found, f.portName = true, p.Name
				break
			}
		}
		if !found {
			f.portMissing = true
			return "", f
		}
	}
	list, err := slices.st.List(ctx, ref.Namespace, storage.ListOptions{Recursive: true, Predicate: storage.Predicate{
		Label: labels.SelectorFromSet(labels.Set{discoveryv1.LabelServiceName: ref.Name})}})
	if err != nil {
		f.endpointErr = err
		return "", f
	}
	items := list.(*discoveryv1.EndpointSliceList).Items
	if len(items) == 0 {
		f.noSlices = true
		return "", f
	}
	for _, slice := range items {
		target := int32(0)
		for _, p := range slice.Ports {
			if p.Port != nil && (p.Name == nil && f.portName == "" || p.Name != nil && *p.Name == f.portName) {
				target = *p.Port
			}
		}
		if target == 0 {
			continue
		}
		for _, ep := range slice.Endpoints {
			if ep.Conditions.Ready != nil && !*ep.Conditions.Ready || len(ep.Addresses) == 0 {
				continue
			}
			return net.JoinHostPort(ep.Addresses[0], strconv.Itoa(int(target))), f
		}
	}
	f.noEndpoint = true
	return "", f
}

// checkDiscovery GETs the group version's discovery document from the extension server as
// system:kube-aggregator in system:masters, as kube-aggregator does, and returns its resources.
func (a *aggregator) checkDiscovery(ctx context.Context, transport *http.Transport, endpoint string, gv schema.GroupVersion) (string, []metav1.APIResource, error) {
	u := "https://" + endpoint + "/apis/" + gv.Group + "/" + gv.Version
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return u, nil, err
	}
	for k, vs := range a.identityHeaders(&request.UserInfo{Name: "system:kube-aggregator", Groups: []string{"system:masters"}}) {
		req.Header[k] = vs
	}
	req.Header.Set("Accept", "application/json")
	client := &http.Client{Transport: transport, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		return u, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return u, nil, err
	}
	if resp.StatusCode < http.StatusOK || resp.StatusCode >= http.StatusMultipleChoices {
		return u, nil, fmt.Errorf("bad status from %s: %d", u, resp.StatusCode)
	}
	var list metav1.APIResourceList
	if err := json.Unmarshal(body, &list); err != nil {
		// Available all the same, as upstream judges by the status code; discovery shows no resources.
		a.s.log.Debug("aggregated discovery document does not parse", "url", u, "err", err)
		return u, nil, nil
	}
	return u, list.APIResources, nil
}

// RunAggregation keeps the APIServices' Available conditions and the proxied group versions up to
// date until ctx ends. Every API server runs it: each proxies by its own view, and their status
// writes agree because they decide from the same objects.
func (s *Server) RunAggregation(ctx context.Context) error {
	a := s.agg
	aggregatorSteps := []string{StepAggregatorInformers, StepLocalAvailable, StepRemoteAvailable, StepAPIServiceOpenAPI}
	if a == nil {
		s.StartStepDone(aggregatorSteps...)
		return nil
	}
	inf, err := s.informerFor(apiServiceResource, &apiregv1.APIService{})
	if err != nil {
		return err
	}
	queue := make(chan string, 1024)
	enqueue := func(name string) {
		select {
		case queue <- name:
		default:
			// A full queue: the periodic check catches up.
		}
	}
	nameOf := func(obj interface{}) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		if svc, ok := obj.(*apiregv1.APIService); ok {
			enqueue(svc.Name)
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: nameOf, UpdateFunc: func(_, obj interface{}) { nameOf(obj) }, DeleteFunc: nameOf,
	}); err != nil {
		return fmt.Errorf("aggregation: %w", err)
	}
	// A change of a service or its endpoint slices re-checks the APIServices naming the service.
	byService := func(obj interface{}) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		var ns, name string
		switch o := obj.(type) {
		case *corev1.Service:
			ns, name = o.Namespace, o.Name
		case *discoveryv1.EndpointSlice:
			ns, name = o.Namespace, o.Labels[discoveryv1.LabelServiceName]
		default:
			return
		}
		for _, item := range inf.GetStore().List() {
			svc := item.(*apiregv1.APIService)
			if ref := svc.Spec.Service; ref != nil && ref.Namespace == ns && ref.Name == name {
				enqueue(svc.Name)
			}
		}
	}
	handlers := cache.ResourceEventHandlerFuncs{AddFunc: byService, UpdateFunc: func(_, obj interface{}) { byService(obj) }, DeleteFunc: byService}
	for gr, example := range map[schema.GroupResource]runtime.Object{
		{Resource: "services"}: &corev1.Service{},
		{Group: discoveryv1.GroupName, Resource: "endpointslices"}: &discoveryv1.EndpointSlice{},
	} {
		other, err := s.informerFor(gr, example)
		if err != nil {
			return err
		}
		if _, err := other.AddEventHandler(handlers); err != nil {
			return fmt.Errorf("aggregation: %w", err)
		}
		go other.Run(ctx.Done())
	}
	go inf.Run(ctx.Done())
	go func() {
		// The first availability pass begins once the APIServices are read.
		if cache.WaitFor(ctx, "", inf.HasSyncedChecker()) {
			s.StartStepDone(aggregatorSteps...)
		}
	}()
	ticker := time.NewTicker(a.cfg.CheckInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
			for _, key := range inf.GetStore().ListKeys() {
				enqueue(key)
			}
		case name := <-queue:
			item, exists, err := inf.GetStore().GetByKey(name)
			if err != nil {
				continue
			}
			var svc *apiregv1.APIService
			if exists {
				svc = item.(*apiregv1.APIService)
			}
			if err := a.reconcile(ctx, name, svc); err != nil && ctx.Err() == nil {
				s.log.Debug("reconcile apiservice", "name", name, "err", err)
				time.AfterFunc(retryAfter, func() { enqueue(name) })
			}
		}
	}
}

// informerFor is an informer over the server's own store (no loopback client).
func (s *Server) informerFor(gr schema.GroupResource, example runtime.Object) (cache.SharedIndexInformer, error) {
	lw, err := s.ListWatch(gr)
	if err != nil {
		return nil, fmt.Errorf("aggregation: %w", err)
	}
	return cache.NewSharedIndexInformer(lw, example, 0, cache.Indexers{}), nil
}

// reconcile brings one APIService's route and Available condition up to date (svc nil: deleted).
func (a *aggregator) reconcile(ctx context.Context, name string, svc *apiregv1.APIService) error {
	changed := false
	defer func() {
		if changed {
			a.publishDiscovery()
		}
	}()
	if oldGV, old := a.routeNamed(name); old != nil && (svc == nil || svc.Spec.Service == nil ||
		oldGV != (schema.GroupVersion{Group: svc.Spec.Group, Version: svc.Spec.Version})) {
		changed = a.setRoute(oldGV, nil) || changed
	}
	if svc == nil || svc.DeletionTimestamp != nil {
		return nil
	}
	gv := schema.GroupVersion{Group: svc.Spec.Group, Version: svc.Spec.Version}
	var facts availabilityFacts
	if svc.Spec.Service == nil {
		facts.local = true
	} else {
		rt := &aggRoute{name: svc.Name, spec: svc.Spec}
		endpoint, f := a.resolve(ctx, svc.Spec.Service)
		facts = f
		if endpoint != "" {
			transport, err := a.reuseOrNewTransport(gv, svc.Spec)
			if err != nil {
				facts.discoveryErr = err
			} else {
				rt.endpoint, rt.transport = endpoint, transport
				facts.discoveryURL, rt.resources, facts.discoveryErr = a.checkDiscovery(ctx, transport, endpoint, gv)
			}
		}
		cond := decideAvailability(svc, facts)
		rt.available, rt.reason = cond.Status == apiregv1.ConditionTrue, cond.Reason
		changed = a.setRoute(gv, rt) || changed
	}
	return a.writeCondition(ctx, svc, decideAvailability(svc, facts))
}

// reuseOrNewTransport keeps the route's transport (and its connections) while the TLS settings
// are unchanged.
func (a *aggregator) reuseOrNewTransport(gv schema.GroupVersion, spec apiregv1.APIServiceSpec) (*http.Transport, error) {
	a.mu.RLock()
	old := a.routes[gv]
	a.mu.RUnlock()
	if old != nil && old.transport != nil && old.spec.InsecureSkipTLSVerify == spec.InsecureSkipTLSVerify &&
		string(old.spec.CABundle) == string(spec.CABundle) && *old.spec.Service == *spec.Service {
		return old.transport, nil
	}
	return a.newAggTransport(spec)
}

// writeCondition stores cond in the APIService's status when it differs.
func (a *aggregator) writeCondition(ctx context.Context, svc *apiregv1.APIService, cond apiregv1.APIServiceCondition) error {
	if _, changed := withCondition(svc.Status, cond, a.s.clock.Now()); !changed {
		return nil
	}
	h := a.s.handlerForGroupResource(apiServiceResource)
	if h == nil {
		return fmt.Errorf("%s not served", apiServiceResource)
	}
	err := h.st.Modify(ctx, "", svc.Name, &metav1.Preconditions{UID: &svc.UID}, false, func(current runtime.Object) (runtime.Object, error) {
		cur := current.(*apiregv1.APIService).DeepCopy()
		// Unchanged by now (another API server wrote it): the write is idempotent.
		cur.Status, _ = withCondition(cur.Status, cond, a.s.clock.Now())
		return cur, nil
	})
	if err == nil && cond.Status != apiregv1.ConditionTrue {
		a.s.log.Info("APIService not available", "name", svc.Name, "reason", cond.Reason, "message", cond.Message)
	}
	return err
}
