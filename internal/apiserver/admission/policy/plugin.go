package policy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"sort"
	"sync"

	celgo "github.com/google/cel-go/cel"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/skiff-sh/skiff/internal/apiserver/admission"
	"github.com/skiff-sh/skiff/internal/apiserver/admission/webhook"
	admissioncel "github.com/skiff-sh/skiff/internal/cel"
	"github.com/skiff-sh/skiff/internal/registry"
)

// Plugin is the ValidatingAdmissionPolicy admission plugin.
type Plugin struct {
	log   *slog.Logger
	env   *celgo.Env
	clock clock.Clock

	ready     chan struct{}
	policies  cache.SharedIndexInformer
	bindings  cache.SharedIndexInformer
	resources func() []*registry.Resource

	mu       sync.Mutex
	compiled map[types.UID]*Compiled // by policy UID, replaced when the generation changes
}

var _ admission.Plugin = &Plugin{}

// New builds the plugin; Start connects it to the server.
func New(log *slog.Logger) (*Plugin, error) {
	env, err := admissioncel.NewEnv()
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Plugin{log: log, env: env, clock: clock.RealClock{}, ready: make(chan struct{}), compiled: map[types.UID]*Compiled{}}, nil
}

// Start runs the policy and binding informers over the server's store until ctx ends.
func (p *Plugin) Start(ctx context.Context, srv admission.Source) error {
	lw, err := srv.ListWatch(schema.GroupResource{Group: admissionregistrationv1.GroupName, Resource: "validatingadmissionpolicies"})
	if err != nil {
		return err
	}
	p.policies = cache.NewSharedIndexInformer(lw, &admissionregistrationv1.ValidatingAdmissionPolicy{}, 0, cache.Indexers{})
	lw, err = srv.ListWatch(schema.GroupResource{Group: admissionregistrationv1.GroupName, Resource: "validatingadmissionpolicybindings"})
	if err != nil {
		return err
	}
	p.bindings = cache.NewSharedIndexInformer(lw, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}, 0, cache.Indexers{})
	p.resources = srv.Resources
	go p.policies.RunWithContext(ctx)
	go p.bindings.RunWithContext(ctx)
	close(p.ready)
	return nil
}

// Name is Kubernetes' plugin name.
func (*Plugin) Name() string { return "ValidatingAdmissionPolicy" }

// Admit does nothing: policies only validate.
func (*Plugin) Admit(context.Context, *admission.Attributes, admission.Lookup) error {
	return nil
}

// Validate judges the request by every binding whose policy and match resources select it. The
// first Deny failure refuses the request; Warn failures become warnings; Audit ones are logged.
func (p *Plugin) Validate(ctx context.Context, a *admission.Attributes, lookup admission.Lookup) error {
	if webhook.IsExempt(a.Resource.GroupResource()) || op(a.Verb) == "" {
		return nil
	}
	select {
	case <-p.ready:
	case <-ctx.Done():
		return apierrors.NewInternalError(fmt.Errorf("not yet ready to handle request"))
	}
	// The checks alone once synced (informers stay so): cache.WaitFor starts a goroutine per
	// checker, which every request through admission paid.
	synced := p.policies.HasSynced() && p.bindings.HasSynced()
	if !synced && !cache.WaitFor(ctx, "", p.policies.HasSyncedChecker(), p.bindings.HasSyncedChecker()) {
		return apierrors.NewInternalError(fmt.Errorf("not yet ready to handle request"))
	}
	bindings := p.bindings.GetStore().List()
	sort.Slice(bindings, func(i, j int) bool {
		return bindings[i].(*admissionregistrationv1.ValidatingAdmissionPolicyBinding).Name < bindings[j].(*admissionregistrationv1.ValidatingAdmissionPolicyBinding).Name
	})
	var base map[string]any
	var nsObj any
	for _, o := range bindings {
		b := o.(*admissionregistrationv1.ValidatingAdmissionPolicyBinding)
		item, ok, _ := p.policies.GetStore().GetByKey(b.Spec.PolicyName)
		if !ok {
			continue // a binding to a missing policy does nothing, as in Kubernetes
		}
		pol := item.(*admissionregistrationv1.ValidatingAdmissionPolicy)
		if pol.Spec.MatchConstraints == nil {
			continue
		}
		ns, err := p.namespaceLabels(ctx, a, lookup)
		if err != nil {
			return apierrors.NewInternalError(err)
		}
		if !MatchesResources(pol.Spec.MatchConstraints, a, ns) {
			continue
		}
		if b.Spec.MatchResources != nil && !MatchesResources(b.Spec.MatchResources, a, ns) {
			continue
		}
		if base == nil {
			if base, err = webhook.Activation(ctx, a); err != nil {
				return apierrors.NewInternalError(err)
			}
			if nsObj, err = p.namespaceObject(ctx, a, lookup); err != nil {
				return apierrors.NewInternalError(err)
			}
		}
		params, err := p.params(ctx, pol, b, a, lookup)
		if err != nil {
			// A binding that cannot be configured (missing params under Deny, an unknown paramKind)
			// is a policy failure: failurePolicy decides, as in Kubernetes.
			if pol.Spec.FailurePolicy != nil && *pol.Spec.FailurePolicy == admissionregistrationv1.Ignore {
				p.log.Warn("ValidatingAdmissionPolicy binding not configured, ignoring", "policy", pol.Name, "binding", b.Name, "err", err)
				continue
			}
			if err := p.act(ctx, a, pol, b, Failure{Message: err.Error(), Reason: metav1.StatusReasonInvalid}); err != nil {
				return err
			}
			continue
		}
		c := p.compile(pol)
		for _, param := range params {
			vars := map[string]any{}
			for k, v := range base {
				vars[k] = v
			}
			vars[admissioncel.VarParams] = param
			vars[admissioncel.VarNamespaceObject] = nsObj
			d := Decide(c, vars)
			if len(d.AuditAnnotations) > 0 {
				// No audit log yet: the annotations are logged where the audit event would carry them.
				p.log.Info("ValidatingAdmissionPolicy audit annotations", "policy", pol.Name, "binding", b.Name, "namespace", a.Namespace, "name", a.Name, "annotations", d.AuditAnnotations)
			}
			for _, f := range d.Failures {
				if err := p.act(ctx, a, pol, b, f); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// act carries out the binding's validation actions for one failure.
func (p *Plugin) act(ctx context.Context, a *admission.Attributes, pol *admissionregistrationv1.ValidatingAdmissionPolicy, b *admissionregistrationv1.ValidatingAdmissionPolicyBinding, f Failure) error {
	for _, action := range b.Spec.ValidationActions {
		switch action {
		case admissionregistrationv1.Deny:
			return p.deny(a, pol, b, f)
		case admissionregistrationv1.Warn:
			admission.AddWarning(ctx, fmt.Sprintf("Validation failed for ValidatingAdmissionPolicy '%s' with binding '%s': %s", pol.Name, b.Name, f.Message))
		case admissionregistrationv1.Audit:
			// No audit log yet: the failure is logged where an audit annotation would go.
			p.log.Info("ValidatingAdmissionPolicy audit failure", "policy", pol.Name, "binding", b.Name, "namespace", a.Namespace, "name", a.Name, "message", f.Message)
		}
	}
	return nil
}

// deny is Kubernetes' refusal: a Forbidden-shaped error whose reason and code follow the
// validation's reason (Invalid, 422, by default).
func (p *Plugin) deny(a *admission.Attributes, pol *admissionregistrationv1.ValidatingAdmissionPolicy, b *admissionregistrationv1.ValidatingAdmissionPolicyBinding, f Failure) error {
	msg := fmt.Sprintf("ValidatingAdmissionPolicy '%s' with binding '%s' denied request: %s", pol.Name, b.Name, f.Message)
	gr := a.Resource.GroupResource()
	if a.Subresource != "" {
		gr.Resource += "/" + a.Subresource
	}
	err := apierrors.NewForbidden(gr, a.Name, errors.New(msg))
	err.ErrStatus.Reason = f.Reason
	err.ErrStatus.Code = ReasonCode(f.Reason)
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{Message: msg})
	return err
}

func (p *Plugin) compile(pol *admissionregistrationv1.ValidatingAdmissionPolicy) *Compiled {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c, ok := p.compiled[pol.UID]; ok && c.Policy.Generation == pol.Generation && c.Policy.ResourceVersion == pol.ResourceVersion {
		return c
	}
	c := Compile(p.env, pol)
	p.compiled[pol.UID] = c
	return c
}

func op(verb string) admissionregistrationv1.OperationType {
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

// MatchesResources applies match constraints or a binding's match resources: resource rules
// (with resourceNames), exclusions, and the namespace and object selectors. nsLabels are the
// request namespace's labels (nil for cluster-scoped requests).
func MatchesResources(m *admissionregistrationv1.MatchResources, a *admission.Attributes, nsLabels map[string]string) bool {
	req := webhook.Request{Operation: op(a.Verb), Resource: a.Resource.GroupVersionResource(), Subresource: a.Subresource, Namespaced: a.Resource.Namespaced}
	named := func(rules []admissionregistrationv1.NamedRuleWithOperations) bool {
		for i := range rules {
			r := &rules[i]
			if !webhook.MatchesRule(&r.RuleWithOperations, req) {
				continue
			}
			if len(r.ResourceNames) == 0 {
				return true
			}
			for _, n := range r.ResourceNames {
				if n == a.Name {
					return true
				}
			}
		}
		return false
	}
	// A binding without resource rules inherits the policy's: only exclusions and selectors apply.
	if len(m.ResourceRules) > 0 && !named(m.ResourceRules) {
		return false
	}
	if named(m.ExcludeResourceRules) {
		return false
	}
	if m.NamespaceSelector != nil && (a.Resource.Namespaced || a.Resource.GroupResource() == (schema.GroupResource{Resource: "namespaces"})) {
		if ok, err := webhook.MatchesSelector(m.NamespaceSelector, nsLabels); err != nil || !ok {
			return false
		}
	}
	var sets []map[string]string
	for _, o := range []runtime.Object{a.Object, a.OldObject} {
		if o == nil || reflect.ValueOf(o).IsNil() {
			continue
		}
		if acc, err := meta.Accessor(o); err == nil {
			sets = append(sets, acc.GetLabels())
		}
	}
	ok, err := webhook.MatchesSelector(m.ObjectSelector, sets...)
	return err == nil && ok
}

func (p *Plugin) namespaceLabels(ctx context.Context, a *admission.Attributes, lookup admission.Lookup) (map[string]string, error) {
	if a.Resource.GroupResource() == (schema.GroupResource{Resource: "namespaces"}) {
		for _, o := range []runtime.Object{a.Object, a.OldObject} {
			if ns, ok := o.(*corev1.Namespace); ok && ns != nil {
				return ns.Labels, nil
			}
		}
		return nil, nil
	}
	if !a.Resource.Namespaced || a.Namespace == "" {
		return nil, nil
	}
	obj, err := lookup.Get(ctx, "", "namespaces", "", a.Namespace)
	if err != nil {
		return nil, fmt.Errorf("namespace %s: %w", a.Namespace, err)
	}
	return obj.(*corev1.Namespace).Labels, nil
}

func (p *Plugin) namespaceObject(ctx context.Context, a *admission.Attributes, lookup admission.Lookup) (any, error) {
	if !a.Resource.Namespaced || a.Namespace == "" {
		return nil, nil
	}
	obj, err := lookup.Get(ctx, "", "namespaces", "", a.Namespace)
	if err != nil {
		return nil, fmt.Errorf("namespace %s: %w", a.Namespace, err)
	}
	ns := obj.(*corev1.Namespace).DeepCopy()
	ns.APIVersion, ns.Kind = "v1", "Namespace"
	return admissioncel.ToValue(ns)
}

// params returns the CEL values of the binding's params: one nil entry for a policy without
// paramKind; none when the binding allows missing params and there are none.
func (p *Plugin) params(ctx context.Context, pol *admissionregistrationv1.ValidatingAdmissionPolicy, b *admissionregistrationv1.ValidatingAdmissionPolicyBinding, a *admission.Attributes, lookup admission.Lookup) ([]any, error) {
	pk := pol.Spec.ParamKind
	if pk == nil {
		return []any{nil}, nil
	}
	ref := b.Spec.ParamRef
	if ref == nil {
		return nil, fmt.Errorf("failed to configure binding: paramRef is required when paramKind is set")
	}
	gv, err := schema.ParseGroupVersion(pk.APIVersion)
	if err != nil {
		return nil, fmt.Errorf("failed to configure policy: %w", err)
	}
	var res *registry.Resource
	for _, r := range p.resources() {
		if r.GroupVersion == gv && r.Kind == pk.Kind {
			res = r
		}
	}
	if res == nil {
		return nil, fmt.Errorf("failed to configure policy: failed to find resource referenced by paramKind: '%s, Kind=%s'", gv, pk.Kind)
	}
	ns := ref.Namespace
	if res.Namespaced && ns == "" {
		if a.Namespace == "" {
			return nil, fmt.Errorf("failed to configure binding: cannot use namespaced paramRef in policy binding that matches cluster-scoped resources")
		}
		ns = a.Namespace
	}
	var found []runtime.Object
	if ref.Name != "" {
		obj, err := lookup.Get(ctx, gv.Group, res.Plural, ns, ref.Name)
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, err
		}
		if err == nil {
			found = append(found, obj)
		}
	} else {
		sel, err := metav1.LabelSelectorAsSelector(ref.Selector)
		if err != nil {
			return nil, err
		}
		list, err := lookup.List(ctx, gv.Group, res.Plural, ns)
		if err != nil {
			return nil, err
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			return nil, err
		}
		for _, it := range items {
			if acc, err := meta.Accessor(it); err == nil && sel.Matches(labels.Set(acc.GetLabels())) {
				found = append(found, it)
			}
		}
	}
	if len(found) == 0 {
		if ref.ParameterNotFoundAction != nil && *ref.ParameterNotFoundAction == admissionregistrationv1.AllowAction {
			return nil, nil
		}
		return nil, fmt.Errorf("failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction")
	}
	out := make([]any, 0, len(found))
	for _, f := range found {
		f = f.DeepCopyObject()
		f.GetObjectKind().SetGroupVersionKind(gv.WithKind(pk.Kind))
		v, err := admissioncel.ToValue(f)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}
