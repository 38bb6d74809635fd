package rbac

import (
	"context"
	"fmt"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	rbaclisters "k8s.io/client-go/listers/rbac/v1"

	"github.com/skiff-sh/skiff/internal/apiserver/request"
)

// Listers are the informer caches the authorizer reads.
type Listers struct {
	Roles               rbaclisters.RoleLister
	RoleBindings        rbaclisters.RoleBindingLister
	ClusterRoles        rbaclisters.ClusterRoleLister
	ClusterRoleBindings rbaclisters.ClusterRoleBindingLister
}

// Authorizer is the RBAC authorizer.
type Authorizer struct {
	l Listers
}

// New returns an RBAC authorizer over the given caches.
func New(l Listers) *Authorizer { return &Authorizer{l: l} }

// Authorize allows the request when a rule bound to the user matches it. The reason of a denial
// names the bindings whose roles could not be read, as Kubernetes reports them ("RBAC: ...").
func (a *Authorizer) Authorize(_ context.Context, user *request.UserInfo, info *request.RequestInfo) (bool, string) {
	allowed, by := false, ""
	var errs []string
	a.visit(user, info.Namespace, func(source string, rule *rbacv1.PolicyRule, err error) bool {
		if err != nil {
			errs = append(errs, err.Error())
			return true
		}
		if RuleAllows(info, rule) {
			allowed, by = true, source
			return false
		}
		return true
	})
	if allowed {
		// As Kubernetes words it; SubjectAccessReviews report it.
		return true, "RBAC: allowed by " + by
	}
	if len(errs) == 0 {
		return false, ""
	}
	return false, "RBAC: " + strings.Join(errs, ", ")
}

// RulesFor returns every rule the user holds in namespace (cluster-wide rules included) and the
// errors met resolving them, for SelfSubjectRulesReview and the escalation check.
func (a *Authorizer) RulesFor(user *request.UserInfo, namespace string) ([]rbacv1.PolicyRule, []error) {
	var rules []rbacv1.PolicyRule
	var errs []error
	a.VisitRules(user, namespace, func(rule *rbacv1.PolicyRule, err error) bool {
		if err != nil {
			errs = append(errs, err)
		} else {
			rules = append(rules, *rule)
		}
		return true
	})
	return rules, errs
}

// VisitRules calls visit with every rule bound to user: first those of ClusterRoleBindings, then
// those of RoleBindings in namespace (when not empty). visit returns false to stop.
func (a *Authorizer) VisitRules(user *request.UserInfo, namespace string, visit func(*rbacv1.PolicyRule, error) bool) {
	a.visit(user, namespace, func(_ string, rule *rbacv1.PolicyRule, err error) bool { return visit(rule, err) })
}

// visit is VisitRules that also names the binding each rule comes through.
func (a *Authorizer) visit(user *request.UserInfo, namespace string, visit func(source string, rule *rbacv1.PolicyRule, err error) bool) {
	crbs, err := a.l.ClusterRoleBindings.List(labels.Everything())
	if err != nil {
		if !visit("", nil, fmt.Errorf("list clusterrolebindings: %w", err)) {
			return
		}
	}
	for _, b := range crbs {
		if !AppliesTo(user, b.Subjects, "") {
			continue
		}
		rules, err := a.roleRules(b.RoleRef, "")
		if err != nil {
			if !visit("", nil, fmt.Errorf("clusterrolebinding %q: %w", b.Name, err)) {
				return
			}
			continue
		}
		source := fmt.Sprintf("ClusterRoleBinding %q of %s %q to %s", b.Name, b.RoleRef.Kind, b.RoleRef.Name, describeSubject(user, b.Subjects, ""))
		for i := range rules {
			if !visit(source, &rules[i], nil) {
				return
			}
		}
	}
	if namespace == "" {
		return
	}
	rbs, err := a.l.RoleBindings.RoleBindings(namespace).List(labels.Everything())
	if err != nil {
		if !visit("", nil, fmt.Errorf("list rolebindings in %q: %w", namespace, err)) {
			return
		}
	}
	for _, b := range rbs {
		if !AppliesTo(user, b.Subjects, namespace) {
			continue
		}
		rules, err := a.roleRules(b.RoleRef, namespace)
		if err != nil {
			if !visit("", nil, fmt.Errorf("rolebinding %q in namespace %q: %w", b.Name, namespace, err)) {
				return
			}
			continue
		}
		source := fmt.Sprintf("RoleBinding %q of %s %q to %s", b.Name+"/"+namespace, b.RoleRef.Kind, b.RoleRef.Name, describeSubject(user, b.Subjects, namespace))
		for i := range rules {
			if !visit(source, &rules[i], nil) {
				return
			}
		}
	}
}

// roleRules resolves a binding's roleRef; the returned slice belongs to the cache and is not changed.
func (a *Authorizer) roleRules(ref rbacv1.RoleRef, namespace string) ([]rbacv1.PolicyRule, error) {
	switch ref.Kind {
	case "ClusterRole":
		r, err := a.l.ClusterRoles.Get(ref.Name)
		if err != nil {
			return nil, err
		}
		return r.Rules, nil
	case "Role":
		if namespace == "" {
			return nil, fmt.Errorf("a Role is referenced outside a namespace")
		}
		r, err := a.l.Roles.Roles(namespace).Get(ref.Name)
		if err != nil {
			return nil, err
		}
		return r.Rules, nil
	}
	return nil, apierrors.NewBadRequest(fmt.Sprintf("unsupported role reference kind %q", ref.Kind))
}

// describeSubject names the subject through which a binding applies to user, as Kubernetes'
// allow reasons do (`User "x"`, `Group "g"`, `ServiceAccount "name/namespace"`).
func describeSubject(user *request.UserInfo, subjects []rbacv1.Subject, namespace string) string {
	for i := range subjects {
		s := &subjects[i]
		if !subjectMatches(user, s, namespace) {
			continue
		}
		if s.Kind == rbacv1.ServiceAccountKind {
			ns := s.Namespace
			if ns == "" {
				ns = namespace
			}
			return fmt.Sprintf("%s %q", s.Kind, s.Name+"/"+ns)
		}
		return fmt.Sprintf("%s %q", s.Kind, s.Name)
	}
	return ""
}
