package rbacescalation

import (
	"context"
	"fmt"
	"reflect"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/skiff-sh/skiff/internal/apiserver/admission"
	"github.com/skiff-sh/skiff/internal/authz/rbac"
	"github.com/skiff-sh/skiff/internal/request"
)

// Name is the plugin's name in skiff's chain; Kubernetes has no admission plugin for this check (it
// is in its RBAC storage), so the name is skiff's.
const Name = "RBACEscalation"

// Plugin is Kubernetes' escalation and bind check on RBAC writes: a Role or ClusterRole may
// only hold rules its writer holds (unless the writer may `escalate` it), and a binding may only
// refer to a role whose rules its writer holds (unless the writer may `bind` it). Kubernetes does
// this in the RBAC storage; here it is a validating step with the same decisions and wording.
type Plugin struct {
	Authorizer request.Authorizer
	Rules      request.RuleLister
}

func (Plugin) Name() string { return Name }

func (Plugin) Admit(context.Context, *admission.Attributes, admission.Lookup) error { return nil }

func (e Plugin) Validate(ctx context.Context, a *admission.Attributes, lookup admission.Lookup) error {
	if a.Resource.GroupVersion.Group != rbacv1.GroupName || a.Subresource != "" || (a.Verb != "create" && a.Verb != "update") || a.User == nil {
		return nil
	}
	gr := a.Resource.GroupResource()
	switch obj := a.Object.(type) {
	case *rbacv1.ClusterRole:
		if old, ok := a.OldObject.(*rbacv1.ClusterRole); ok && reflect.DeepEqual(old.Rules, obj.Rules) && reflect.DeepEqual(old.AggregationRule, obj.AggregationRule) {
			return nil
		}
		if e.may(ctx, a.User, "escalate", "clusterroles", "", obj.Name) {
			return nil
		}
		if obj.AggregationRule != nil {
			return apierrors.NewForbidden(gr, obj.Name, fmt.Errorf("must have cluster-admin privileges to use the aggregationRule"))
		}
		return e.confirmNoEscalation(a.User, "", gr, obj.Name, obj.Rules)
	case *rbacv1.Role:
		if old, ok := a.OldObject.(*rbacv1.Role); ok && reflect.DeepEqual(old.Rules, obj.Rules) {
			return nil
		}
		if e.may(ctx, a.User, "escalate", "roles", obj.Namespace, obj.Name) {
			return nil
		}
		return e.confirmNoEscalation(a.User, obj.Namespace, gr, obj.Name, obj.Rules)
	case *rbacv1.ClusterRoleBinding:
		if a.OldObject != nil {
			return nil // roleRef is immutable; subjects do not grant the writer anything.
		}
		return e.checkBind(ctx, a.User, lookup, gr, "", obj.Name, obj.RoleRef)
	case *rbacv1.RoleBinding:
		if old, ok := a.OldObject.(*rbacv1.RoleBinding); ok && old.RoleRef == obj.RoleRef {
			return nil
		}
		return e.checkBind(ctx, a.User, lookup, gr, obj.Namespace, obj.Name, obj.RoleRef)
	}
	return nil
}

func (e Plugin) may(ctx context.Context, user *request.UserInfo, verb, resource, namespace, name string) bool {
	ok, _ := e.Authorizer.Authorize(ctx, user, &request.RequestInfo{
		IsResourceRequest: true, Verb: verb, APIGroup: rbacv1.GroupName, Resource: resource, Namespace: namespace, Name: name,
	})
	return ok
}

func (e Plugin) checkBind(ctx context.Context, user *request.UserInfo, lookup admission.Lookup, gr schema.GroupResource, namespace, name string, ref rbacv1.RoleRef) error {
	resource := "clusterroles"
	if ref.Kind == "Role" {
		resource = "roles"
	}
	if e.may(ctx, user, "bind", resource, namespace, ref.Name) {
		return nil
	}
	lookupNS := namespace
	if ref.Kind == "ClusterRole" {
		lookupNS = ""
	}
	obj, err := lookup.Get(ctx, rbacv1.GroupName, resource, lookupNS, ref.Name)
	if err != nil {
		return apierrors.NewForbidden(gr, name, err)
	}
	var rules []rbacv1.PolicyRule
	switch role := obj.(type) {
	case *rbacv1.ClusterRole:
		rules = role.Rules
	case *rbacv1.Role:
		rules = role.Rules
	}
	return e.confirmNoEscalation(user, namespace, gr, name, rules)
}

func (e Plugin) confirmNoEscalation(user *request.UserInfo, namespace string, gr schema.GroupResource, name string, rules []rbacv1.PolicyRule) error {
	var owner []rbacv1.PolicyRule
	var errs []error
	if e.Rules != nil {
		owner, errs = e.Rules.RulesFor(user, namespace)
	}
	ok, missing := rbac.Covers(owner, rules)
	if ok {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "user %q (groups=%q) is attempting to grant RBAC permissions not currently held:", user.Name, user.Groups)
	for _, m := range missing {
		b.WriteString("\n" + compactRule(m))
	}
	if len(errs) > 0 {
		fmt.Fprintf(&b, "; resolution errors: %v", errs)
	}
	return apierrors.NewForbidden(gr, name, fmt.Errorf("%s", b.String()))
}

// compactRule prints a rule as Kubernetes' escalation error does.
func compactRule(r rbacv1.PolicyRule) string {
	var parts []string
	add := func(name string, v []string) {
		if len(v) > 0 {
			parts = append(parts, fmt.Sprintf("%s:%q", name, v))
		}
	}
	add("APIGroups", r.APIGroups)
	add("Resources", r.Resources)
	add("ResourceNames", r.ResourceNames)
	add("NonResourceURLs", r.NonResourceURLs)
	add("Verbs", r.Verbs)
	return "{" + strings.Join(parts, ", ") + "}"
}
