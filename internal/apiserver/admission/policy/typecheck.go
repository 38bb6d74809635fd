package policy

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	celgo "github.com/google/cel-go/cel"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/cache"

	crdv1 "github.com/skiff-sh/skiff/internal/apis/apiextensionsv1"
	admissioncel "github.com/skiff-sh/skiff/internal/cel"
	"github.com/skiff-sh/skiff/internal/registry/customresource"
	"github.com/skiff-sh/skiff/internal/statusloop"
)

// maxTypesToCheck is how many kinds a policy's expressions are checked against at most, as
// Kubernetes' type checker bounds it.
const maxTypesToCheck = 10

// Schemas is what type checking reads of the server: the kinds a resource is served as and a
// kind's schema with its references resolved.
type Schemas struct {
	KindsFor   func(schema.GroupVersionResource) []schema.GroupVersionKind
	KindSchema func(schema.GroupVersionKind) (*crdv1.JSONSchemaProps, bool)
}

// TypeCheck is a policy's status.typeChecking, as Kubernetes' policy status controller writes it:
// every validation's expression and messageExpression compiled with object and oldObject typed by
// the schema of each kind the policy's resource rules name (wildcards and subresources left out,
// at most maxTypesToCheck kinds) and params by its paramKind's; a warning per expression that
// fails to compile for some kind, naming the kinds. A kind without a schema is not checked; an
// expression that compiles for every kind has no warning. base is NewEnvWithoutObjects'. It is
// pure.
func TypeCheck(base *celgo.Env, p *admissionregistrationv1.ValidatingAdmissionPolicy, s Schemas) *admissionregistrationv1.TypeChecking {
	out := &admissionregistrationv1.TypeChecking{}
	var envs []kindEnv
	params := paramsSchema(p, s)
	for _, gvk := range kindsToCheck(p, s.KindsFor) {
		schemaOf, ok := s.KindSchema(gvk)
		if !ok {
			continue
		}
		vars := []customresource.TypedVariables{{Names: []string{admissioncel.VarObject, admissioncel.VarOldObject}, Schema: schemaOf, TypeName: "objectType"}}
		vars = append(vars, customresource.TypedVariables{Names: []string{admissioncel.VarParams}, Schema: params, TypeName: "paramsType"})
		env, err := customresource.ExtendTyped(base, vars...)
		if err != nil {
			continue // a kind whose schema cannot make an environment is not checked
		}
		envs = append(envs, kindEnv{gvk: gvk, env: env})
	}
	if len(envs) == 0 {
		return out
	}
	validations := field.NewPath("spec", "validations")
	for i, v := range p.Spec.Validations {
		for _, e := range []struct{ field, expr string }{{"expression", v.Expression}, {"messageExpression", v.MessageExpression}} {
			if e.expr == "" {
				continue
			}
			if warning := checkExpression(envs, e.expr); warning != "" {
				out.ExpressionWarnings = append(out.ExpressionWarnings, admissionregistrationv1.ExpressionWarning{
					FieldRef: validations.Index(i).Child(e.field).String(), Warning: warning})
			}
		}
	}
	return out
}

// kindEnv is the environment an expression is checked in for one kind.
type kindEnv struct {
	gvk schema.GroupVersionKind
	env *celgo.Env
}

// checkExpression compiles expr in each kind's environment; the warning names every kind it fails
// for, with the compiler's issues ("" when it compiles for all).
func checkExpression(envs []kindEnv, expr string) string {
	var msgs []string
	for _, k := range envs {
		if _, iss := k.env.Compile(expr); iss.Err() != nil {
			msgs = append(msgs, fmt.Sprintf("%v: %v\n", k.gvk, iss.Err()))
		}
	}
	return strings.Join(msgs, "\n")
}

// paramsSchema is the schema of the policy's paramKind (nil: params stay dyn).
func paramsSchema(p *admissionregistrationv1.ValidatingAdmissionPolicy, s Schemas) *crdv1.JSONSchemaProps {
	if p.Spec.ParamKind == nil {
		return nil
	}
	gv, err := schema.ParseGroupVersion(p.Spec.ParamKind.APIVersion)
	if err != nil {
		return nil
	}
	out, _ := s.KindSchema(gv.WithKind(p.Spec.ParamKind.Kind))
	return out
}

// kindsToCheck are the kinds of the resources the policy's resource rules name exactly, sorted
// by group, version and kind: a rule with a wildcard group or version names none, wildcard and
// subresource resources are left out.
func kindsToCheck(p *admissionregistrationv1.ValidatingAdmissionPolicy, kindsFor func(schema.GroupVersionResource) []schema.GroupVersionKind) []schema.GroupVersionKind {
	if p.Spec.MatchConstraints == nil {
		return nil
	}
	seen := map[schema.GroupVersionKind]bool{}
	for _, rule := range p.Spec.MatchConstraints.ResourceRules {
		if slices.ContainsFunc(rule.APIGroups, hasWildcard) || slices.ContainsFunc(rule.APIVersions, hasWildcard) {
			continue
		}
		for _, g := range rule.APIGroups {
			for _, v := range rule.APIVersions {
				for _, r := range rule.Resources {
					if strings.ContainsAny(r, "*/") {
						continue
					}
					for _, gvk := range kindsFor(schema.GroupVersionResource{Group: g, Version: v, Resource: r}) {
						seen[gvk] = true
					}
				}
			}
		}
	}
	out := make([]schema.GroupVersionKind, 0, len(seen))
	for gvk := range seen {
		out = append(out, gvk)
	}
	slices.SortFunc(out, func(a, b schema.GroupVersionKind) int {
		return strings.Compare(a.Group+"\x00"+a.Version+"\x00"+a.Kind, b.Group+"\x00"+b.Version+"\x00"+b.Kind)
	})
	return out[:min(len(out), maxTypesToCheck)]
}

func hasWildcard(s string) bool { return strings.Contains(s, "*") }

// StatusWriter writes a policy through its status subresource.
type StatusWriter func(ctx context.Context, p *admissionregistrationv1.ValidatingAdmissionPolicy) error

// typeCheckRetry is how long a status write that failed for another reason than a conflict waits
// before the next pass (a conflict or a deleted policy brings its own informer event).
const typeCheckRetry = time.Second

// StartTypeChecking keeps status.typeChecking and status.observedGeneration of every policy
// current (TypeCheck), as Kubernetes' policy status controller does, until ctx ends. It runs after
// Start, on the same policy cache.
func (p *Plugin) StartTypeChecking(ctx context.Context, schemas Schemas, write StatusWriter) error {
	base, err := admissioncel.NewEnvWithoutObjects()
	if err != nil {
		return err
	}
	kick := statusloop.NewKick()
	if _, err := p.policies.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(any) { kick.Wake() }, UpdateFunc: func(any, any) { kick.Wake() }}); err != nil {
		return fmt.Errorf("policy type checking: %w", err)
	}
	go p.typeCheckLoop(ctx, kick, base, schemas, write)
	return nil
}

// typeCheckLoop writes the status of each policy whose generation was not type-checked yet, at
// each kick until ctx ends.
func (p *Plugin) typeCheckLoop(ctx context.Context, kick statusloop.Kick, base *celgo.Env, schemas Schemas, write StatusWriter) {
	statusloop.Run(ctx, p.clock, kick, typeCheckRetry, func(ctx context.Context) error {
		var failed error
		for _, obj := range p.policies.GetStore().List() {
			pol, ok := obj.(*admissionregistrationv1.ValidatingAdmissionPolicy)
			if !ok || (pol.Status.TypeChecking != nil && pol.Status.ObservedGeneration >= pol.Generation) {
				continue
			}
			next := pol.DeepCopy()
			next.Status.TypeChecking = TypeCheck(base, pol, schemas)
			next.Status.ObservedGeneration = pol.Generation
			if err := write(ctx, next); statusloop.NeedsRetry(ctx, err) {
				p.log.Warn("policy type checking not written", "policy", pol.Name, "err", err)
				failed = err
			}
		}
		return failed
	})
}
