package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"sync"

	celgo "github.com/google/cel-go/cel"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/skiff-sh/skiff/internal/apiserver/admission"
	admissioncel "github.com/skiff-sh/skiff/internal/cel"
	"github.com/skiff-sh/skiff/internal/request"
)

// Config configures the webhook admission plugins.
type Config struct {
	Logger *slog.Logger
	// Scheme defaults objects a mutating webhook has patched, as decoding them would.
	Scheme *runtime.Scheme
}

// Webhooks holds the configuration caches both plugins read. Start connects them to the API
// server once it exists; until their first list is in, matching requests wait (and fail when
// the request's context ends first).
type Webhooks struct {
	log    *slog.Logger
	scheme *runtime.Scheme
	env    *celgo.Env

	ready      chan struct{}
	mutating   *Informer
	validating *Informer

	mu       sync.Mutex
	programs map[string]*admissioncel.Program // compiled match conditions by expression
}

// New builds the plugins' shared state.
func New(cfg Config) (*Webhooks, error) {
	env, err := admissioncel.NewEnv()
	if err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Webhooks{log: log, scheme: cfg.Scheme, env: env, ready: make(chan struct{}), programs: map[string]*admissioncel.Program{}}, nil
}

// Start builds the informers over src and runs them until ctx ends. It returns once they run.
func (w *Webhooks) Start(ctx context.Context, src ListWatchSource) error {
	var err error
	if w.mutating, err = NewInformer(src, schema.GroupResource{Group: admissionregistrationv1.GroupName, Resource: "mutatingwebhookconfigurations"}, &admissionregistrationv1.MutatingWebhookConfiguration{}); err != nil {
		return err
	}
	if w.validating, err = NewInformer(src, schema.GroupResource{Group: admissionregistrationv1.GroupName, Resource: "validatingwebhookconfigurations"}, &admissionregistrationv1.ValidatingWebhookConfiguration{}); err != nil {
		return err
	}
	go w.mutating.Run(ctx)
	go w.validating.Run(ctx)
	close(w.ready)
	return nil
}

// Mutating is the MutatingAdmissionWebhook plugin.
func (w *Webhooks) Mutating() admission.Plugin { return &mutatingPlugin{w: w} }

// Validating is the ValidatingAdmissionWebhook plugin.
func (w *Webhooks) Validating() admission.Plugin { return &validatingPlugin{w: w} }

func (w *Webhooks) hooks(ctx context.Context, mutating bool) ([]hook, error) {
	select {
	case <-w.ready:
	case <-ctx.Done():
		return nil, apierrors.NewInternalError(fmt.Errorf("not yet ready to handle request"))
	}
	inf := w.validating
	if mutating {
		inf = w.mutating
	}
	if err := inf.waitSynced(ctx); err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	var out []hook
	for _, o := range inf.list() {
		switch c := o.(type) {
		case *admissionregistrationv1.MutatingWebhookConfiguration:
			out = append(out, mutatingHooks(c)...)
		case *admissionregistrationv1.ValidatingWebhookConfiguration:
			out = append(out, validatingHooks(c)...)
		}
	}
	return out, nil
}

type mutatingPlugin struct{ w *Webhooks }

func (*mutatingPlugin) Name() string { return "MutatingAdmissionWebhook" }

func (p *mutatingPlugin) Validate(context.Context, *admission.Attributes, admission.Lookup) error {
	return nil
}

// Admit calls the matching mutating webhooks in order, applying each patch before the next call;
// webhooks with reinvocationPolicy IfNeeded are called once more when a later webhook changed the
// object after them.
func (p *mutatingPlugin) Admit(ctx context.Context, a *admission.Attributes, lookup admission.Lookup) error {
	if skip(a) {
		return nil
	}
	hooks, err := p.w.hooks(ctx, true)
	if err != nil {
		return err
	}
	var called []int
	reinvoke := map[int]bool{}
	for i := range hooks {
		changed, invoked, err := p.w.dispatch(ctx, &hooks[i], a, lookup, true)
		if err != nil {
			return err
		}
		if changed {
			for _, j := range called {
				if hooks[j].reinvoke {
					reinvoke[j] = true
				}
			}
		}
		if invoked {
			called = append(called, i)
		}
	}
	for _, i := range called {
		if !reinvoke[i] {
			continue
		}
		if _, _, err := p.w.dispatch(ctx, &hooks[i], a, lookup, true); err != nil {
			return err
		}
	}
	return nil
}

type validatingPlugin struct{ w *Webhooks }

func (*validatingPlugin) Name() string { return "ValidatingAdmissionWebhook" }

func (p *validatingPlugin) Admit(context.Context, *admission.Attributes, admission.Lookup) error {
	return nil
}

// Validate calls the matching validating webhooks in parallel, as Kubernetes does, and returns
// the first failure in configuration order.
func (p *validatingPlugin) Validate(ctx context.Context, a *admission.Attributes, lookup admission.Lookup) error {
	if skip(a) {
		return nil
	}
	hooks, err := p.w.hooks(ctx, false)
	if err != nil {
		return err
	}
	errs := make([]error, len(hooks))
	var wg sync.WaitGroup
	for i := range hooks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, errs[i] = p.w.dispatch(ctx, &hooks[i], a, lookup, false)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// skip: webhooks never see admissionregistration objects; reads are not admitted.
func skip(a *admission.Attributes) bool {
	return IsExempt(a.Resource.GroupResource()) || operation(a.Verb) == ""
}

func operation(verb string) admissionregistrationv1.OperationType {
	switch verb {
	case "create":
		return admissionregistrationv1.Create
	case "update":
		return admissionregistrationv1.Update
	case "delete":
		return admissionregistrationv1.Delete
	case "connect":
		return admissionregistrationv1.Connect
	}
	return ""
}

// dispatch decides whether h applies to the request and calls it. changed reports a mutating
// webhook's patch that changed the object; invoked that the webhook was called.
func (w *Webhooks) dispatch(ctx context.Context, h *hook, a *admission.Attributes, lookup admission.Lookup, mutating bool) (changed, invoked bool, err error) {
	log := w.log.With("webhook", h.name, "configuration", h.configName, "resource", a.Resource.GroupResource().String(), "namespace", a.Namespace, "name", a.Name)
	matched, err := w.matches(ctx, h, a, lookup)
	if err != nil {
		if h.failurePolicy == admissionregistrationv1.Ignore {
			log.Warn("webhook match failed, ignoring (failurePolicy Ignore)", "err", err)
			return false, false, nil
		}
		return false, false, apierrors.NewInternalError(err)
	}
	if !matched {
		return false, false, nil
	}
	if a.DryRun && !noSideEffectsOnDryRun(h.sideEffects) {
		return false, false, apierrors.NewBadRequest(fmt.Sprintf("admission webhook %q does not support dry run", h.name))
	}
	review, err := w.review(a)
	if err != nil {
		return false, false, apierrors.NewInternalError(err)
	}
	resp, err := call(ctx, h, review, lookup)
	if err != nil {
		var ce *callError
		if errors.As(err, &ce) && h.failurePolicy == admissionregistrationv1.Ignore {
			log.Warn("failed calling webhook, failing open", "err", err)
			return false, true, nil
		}
		log.Warn("failed calling webhook, failing closed", "err", err)
		return false, true, apierrors.NewInternalError(err)
	}
	for _, msg := range resp.Warnings {
		admission.AddWarning(ctx, msg)
	}
	if !resp.Allowed {
		return false, true, denied(h.name, resp.Result)
	}
	if !mutating || len(resp.Patch) == 0 {
		return false, true, nil
	}
	if resp.PatchType == nil || *resp.PatchType != admissionv1.PatchTypeJSONPatch {
		err := &callError{webhook: h.name, reason: fmt.Errorf("unsupported patch type %q", deref(resp.PatchType, ""))}
		if h.failurePolicy == admissionregistrationv1.Ignore {
			return false, true, nil
		}
		return false, true, apierrors.NewInternalError(err)
	}
	changed, err = w.applyPatch(a, resp.Patch)
	if err != nil {
		err = &callError{webhook: h.name, reason: err}
		if h.failurePolicy == admissionregistrationv1.Ignore {
			log.Warn("webhook patch failed, ignoring", "err", err)
			return false, true, nil
		}
		return false, true, apierrors.NewInternalError(err)
	}
	return changed, true, nil
}

// matches applies rules, selectors and match conditions.
func (w *Webhooks) matches(ctx context.Context, h *hook, a *admission.Attributes, lookup admission.Lookup) (bool, error) {
	req := Request{Operation: operation(a.Verb), Resource: a.Resource.GroupVersionResource(), Subresource: a.Subresource, Namespaced: a.Resource.Namespaced}
	if !MatchesRules(h.rules, req) {
		return false, nil
	}
	ok, err := w.matchesNamespace(ctx, h.namespaceSelector, a, lookup)
	if err != nil || !ok {
		return false, err
	}
	var labelSets []map[string]string
	for _, o := range []runtime.Object{a.Object, a.OldObject} {
		if o == nil || reflect.ValueOf(o).IsNil() {
			continue
		}
		if m, err := meta.Accessor(o); err == nil {
			labelSets = append(labelSets, m.GetLabels())
		}
	}
	if ok, err := MatchesSelector(h.objectSelector, labelSets...); err != nil || !ok {
		return false, err
	}
	return w.matchConditions(ctx, h, a)
}

// matchesNamespace evaluates the namespace selector against the request's namespace, or, for a
// Namespace itself, against that namespace's labels; other cluster-scoped requests always match.
func (w *Webhooks) matchesNamespace(ctx context.Context, sel *metav1.LabelSelector, a *admission.Attributes, lookup admission.Lookup) (bool, error) {
	if sel == nil || (len(sel.MatchLabels) == 0 && len(sel.MatchExpressions) == 0) {
		return true, nil
	}
	if a.Resource.GroupResource() == (schema.GroupResource{Resource: "namespaces"}) {
		var sets []map[string]string
		for _, o := range []runtime.Object{a.Object, a.OldObject} {
			if ns, ok := o.(*corev1.Namespace); ok && ns != nil {
				sets = append(sets, ns.Labels)
			}
		}
		return MatchesSelector(sel, sets...)
	}
	if !a.Resource.Namespaced || a.Namespace == "" {
		return true, nil
	}
	obj, err := lookup.Get(ctx, "", "namespaces", "", a.Namespace)
	if err != nil {
		return false, fmt.Errorf("namespace %s: %w", a.Namespace, err)
	}
	ns, _ := obj.(*corev1.Namespace)
	return MatchesSelector(sel, ns.Labels)
}

// matchConditions evaluates the webhook's CEL match conditions: all must be true. An error
// counts as a failure of the webhook (failurePolicy decides), as in Kubernetes.
func (w *Webhooks) matchConditions(ctx context.Context, h *hook, a *admission.Attributes) (bool, error) {
	if len(h.matchConditions) == 0 {
		return true, nil
	}
	vars, err := Activation(ctx, a)
	if err != nil {
		return false, err
	}
	budget := int64(admissioncel.RuntimeCostBudget)
	var evalErr error
	for _, mc := range h.matchConditions {
		prg, err := w.program(mc.Expression)
		if err != nil {
			evalErr = fmt.Errorf("matchCondition %q: %w", mc.Name, err)
			continue
		}
		ok, err := prg.EvalBool(vars, &budget)
		if err != nil {
			evalErr = fmt.Errorf("failed to evaluate matchCondition %q: %w", mc.Name, err)
			continue
		}
		if !ok {
			// A false condition wins over errors in the others: the webhook simply does not apply.
			return false, nil
		}
	}
	if evalErr != nil {
		return false, &callError{webhook: h.name, reason: evalErr}
	}
	return true, nil
}

func (w *Webhooks) program(expr string) (*admissioncel.Program, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if p, ok := w.programs[expr]; ok {
		return p, nil
	}
	p, err := admissioncel.Compile(w.env, expr, celgo.BoolType)
	if err != nil {
		return nil, err
	}
	w.programs[expr] = p
	return p, nil
}

// Activation is the CEL variables of a request: object, oldObject and request.
func Activation(ctx context.Context, a *admission.Attributes) (map[string]any, error) {
	req, err := reviewRequest(a, "")
	if err != nil {
		return nil, err
	}
	obj, err := admissioncel.ToValue(withKind(a, a.Object))
	if err != nil {
		return nil, err
	}
	old, err := admissioncel.ToValue(withKind(a, a.OldObject))
	if err != nil {
		return nil, err
	}
	// The request as CEL sees it: the AdmissionRequest without the objects.
	req.Object, req.OldObject = runtime.RawExtension{}, runtime.RawExtension{}
	reqVal, err := admissioncel.ToValue(req)
	if err != nil {
		return nil, err
	}
	vars := map[string]any{admissioncel.VarObject: obj, admissioncel.VarOldObject: old, admissioncel.VarRequest: reqVal}
	// authorizer and authorizer.requestResource: the request's user asking the API server's
	// authorizer (without one in ctx, every check reads errored).
	authz := admissioncel.Authorization{Ctx: ctx, User: a.User}
	authz.Authorizer, _ = request.AuthorizerFrom(ctx)
	vars[admissioncel.VarAuthorizer] = admissioncel.NewAuthorizer(authz)
	var group, resource string
	if a.Resource != nil {
		group, resource = a.Resource.GroupVersion.Group, a.Resource.Plural
	}
	vars[admissioncel.VarRequestResource] = admissioncel.RequestResource(authz, group, resource, a.Subresource, a.Namespace, a.Name)
	return vars, nil
}

func (w *Webhooks) review(a *admission.Attributes) (*admissionv1.AdmissionReview, error) {
	req, err := reviewRequest(a, types.UID(uuid.NewUUID()))
	if err != nil {
		return nil, err
	}
	return &admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "AdmissionReview"},
		Request:  req,
	}, nil
}

// reviewRequest is the AdmissionRequest Kubernetes sends for the write.
func reviewRequest(a *admission.Attributes, uid types.UID) (*admissionv1.AdmissionRequest, error) {
	gvk := a.Resource.GroupVersionKind()
	if !a.Kind.Empty() {
		// A connect's object is its options (PodExecOptions), and Kubernetes names that kind.
		gvk = a.Kind
	}
	gvr := a.Resource.GroupVersionResource()
	kind := metav1.GroupVersionKind{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind}
	res := metav1.GroupVersionResource{Group: gvr.Group, Version: gvr.Version, Resource: gvr.Resource}
	req := &admissionv1.AdmissionRequest{
		UID: uid, Kind: kind, Resource: res, SubResource: a.Subresource,
		RequestKind: &kind, RequestResource: &res, RequestSubResource: a.Subresource,
		Name: a.Name, Namespace: a.Namespace, Operation: admissionv1.Operation(operation(a.Verb)),
		DryRun: &a.DryRun,
	}
	if a.User != nil {
		req.UserInfo = authenticationv1.UserInfo{Username: a.User.Name, UID: a.User.UID, Groups: a.User.Groups}
		if len(a.User.Extra) > 0 {
			req.UserInfo.Extra = map[string]authenticationv1.ExtraValue{}
			for k, v := range a.User.Extra {
				req.UserInfo.Extra[k] = v
			}
		}
	}
	var err error
	if req.Object, err = rawObject(withKind(a, a.Object)); err != nil {
		return nil, err
	}
	if req.OldObject, err = rawObject(withKind(a, a.OldObject)); err != nil {
		return nil, err
	}
	if a.Options != nil {
		opts := a.Options.DeepCopyObject()
		switch opts.(type) {
		case *metav1.CreateOptions:
			opts.GetObjectKind().SetGroupVersionKind(metav1.SchemeGroupVersion.WithKind("CreateOptions"))
		case *metav1.UpdateOptions:
			opts.GetObjectKind().SetGroupVersionKind(metav1.SchemeGroupVersion.WithKind("UpdateOptions"))
		case *metav1.DeleteOptions:
			opts.GetObjectKind().SetGroupVersionKind(metav1.SchemeGroupVersion.WithKind("DeleteOptions"))
		}
		if req.Options, err = rawObject(opts); err != nil {
			return nil, err
		}
	}
	return req, nil
}

// withKind returns a copy of obj with its apiVersion and kind set: stored objects carry none, and
// webhooks and CEL expressions read them.
func withKind(a *admission.Attributes, obj runtime.Object) runtime.Object {
	if obj == nil || reflect.ValueOf(obj).IsNil() {
		return nil
	}
	c := obj.DeepCopyObject()
	if c.GetObjectKind().GroupVersionKind().Kind == "" {
		c.GetObjectKind().SetGroupVersionKind(a.Resource.GroupVersionKind())
	}
	return c
}

func rawObject(obj runtime.Object) (runtime.RawExtension, error) {
	if obj == nil {
		return runtime.RawExtension{}, nil
	}
	data, err := json.Marshal(obj)
	if err != nil {
		return runtime.RawExtension{}, fmt.Errorf("encode %T for webhook: %w", obj, err)
	}
	return runtime.RawExtension{Raw: data}, nil
}

// applyPatch applies a JSONPatch to the request's object in place (the store holds the pointer),
// defaulting the result as decoding would. It reports whether the object changed.
func (w *Webhooks) applyPatch(a *admission.Attributes, patch []byte) (bool, error) {
	if a.Object == nil {
		return false, nil
	}
	original, err := json.Marshal(withKind(a, a.Object))
	if err != nil {
		return false, err
	}
	p, err := jsonpatch.DecodePatch(patch)
	if err != nil {
		return false, fmt.Errorf("decode patch: %w", err)
	}
	patched, err := p.Apply(original)
	if err != nil {
		return false, fmt.Errorf("apply patch: %w", err)
	}
	fresh := reflect.New(reflect.TypeOf(a.Object).Elem()).Interface().(runtime.Object)
	if err := json.Unmarshal(patched, fresh); err != nil {
		return false, fmt.Errorf("decode patched object: %w", err)
	}
	if w.scheme != nil {
		w.scheme.Default(fresh)
	}
	// The in-memory object carries no apiVersion/kind, as before the patch.
	if a.Object.GetObjectKind().GroupVersionKind().Empty() {
		fresh.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	}
	before, _ := json.Marshal(a.Object)
	reflect.ValueOf(a.Object).Elem().Set(reflect.ValueOf(fresh).Elem())
	after, _ := json.Marshal(a.Object)
	return string(before) != string(after), nil
}
