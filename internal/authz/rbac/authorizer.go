package rbac

import (
	"context"
	"fmt"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	rbaclisters "k8s.io/client-go/listers/rbac/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/skiff-sh/skiff/internal/request"
)

// Listers are the informer caches the authorizer reads.
type Listers struct {
	Roles               rbaclisters.RoleLister
	RoleBindings        rbaclisters.RoleBindingLister
	ClusterRoles        rbaclisters.ClusterRoleLister
	ClusterRoleBindings rbaclisters.ClusterRoleBindingLister
	// ClusterRoleBindingsBySubject and RoleBindingsBySubject, when set, are the binding informers'
	// indexers with SubjectIndexers added: a request then looks at the bindings of its user and
	// groups only, instead of listing (and copying) every binding of the cluster.
	ClusterRoleBindingsBySubject cache.Indexer
	RoleBindingsBySubject        cache.Indexer
}

// SubjectIndex is the index of bindings by whom they bind (see SubjectIndexers).
const SubjectIndex = "rbac.skiff.sh/subject"

// SubjectIndexers index ClusterRoleBindings and RoleBindings by subject: a binding's namespace
// ("" for a ClusterRoleBinding), then "u:" and a user name or "g:" and a group name. A
// ServiceAccount subject is the user name its tokens carry, in the binding's namespace when it
// names none, as AppliesTo matches it.
func SubjectIndexers() cache.Indexers {
	return cache.Indexers{SubjectIndex: func(obj any) ([]string, error) {
		switch b := obj.(type) {
		case *rbacv1.ClusterRoleBinding:
			return subjectKeys("", b.Subjects), nil
		case *rbacv1.RoleBinding:
			return subjectKeys(b.Namespace, b.Subjects), nil
		}
		return nil, nil
	}}
}

func subjectKeys(namespace string, subjects []rbacv1.Subject) []string {
	keys := make([]string, 0, len(subjects))
	for _, s := range subjects {
		switch s.Kind {
		case rbacv1.UserKind:
			keys = append(keys, userKey(namespace, s.Name))
		case rbacv1.GroupKind:
			keys = append(keys, groupKey(namespace, s.Name))
		case rbacv1.ServiceAccountKind:
			ns := s.Namespace
			if ns == "" {
				ns = namespace
			}
			if ns != "" {
				keys = append(keys, userKey(namespace, "system:serviceaccount:"+ns+":"+s.Name))
			}
		}
	}
	return keys
}

func userKey(namespace, name string) string  { return namespace + "/u:" + name }
func groupKey(namespace, name string) string { return namespace + "/g:" + name }

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
	crbs, err := a.clusterRoleBindings(user)
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
	rbs, err := a.roleBindings(user, namespace)
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

// clusterRoleBindings are the ClusterRoleBindings that may apply to user: those the subject index
// holds under its name or one of its groups, or, without the index, all of them.
func (a *Authorizer) clusterRoleBindings(user *request.UserInfo) ([]*rbacv1.ClusterRoleBinding, error) {
	if a.l.ClusterRoleBindingsBySubject == nil {
		return a.l.ClusterRoleBindings.List(labels.Everything())
	}
	return bySubject[*rbacv1.ClusterRoleBinding](a.l.ClusterRoleBindingsBySubject, user, "")
}

// roleBindings are the RoleBindings in namespace that may apply to user (all of the namespace's
// without the index).
func (a *Authorizer) roleBindings(user *request.UserInfo, namespace string) ([]*rbacv1.RoleBinding, error) {
	if a.l.RoleBindingsBySubject == nil {
		return a.l.RoleBindings.RoleBindings(namespace).List(labels.Everything())
	}
	return bySubject[*rbacv1.RoleBinding](a.l.RoleBindingsBySubject, user, namespace)
}

// bySubject gathers the bindings indexed under user's name and groups in namespace, each once.
func bySubject[T interface {
	*rbacv1.ClusterRoleBinding | *rbacv1.RoleBinding
}](indexer cache.Indexer, user *request.UserInfo, namespace string) ([]T, error) {
	var out []T
	add := func(key string) error {
		objs, err := indexer.ByIndex(SubjectIndex, key)
		if err != nil {
			return err
		}
		for _, o := range objs {
			if b, ok := o.(T); ok && !slices.Contains(out, b) {
				out = append(out, b)
			}
		}
		return nil
	}
	if err := add(userKey(namespace, user.Name)); err != nil {
		return nil, fmt.Errorf("bindings of user %q: %w", user.Name, err)
	}
	for _, g := range user.Groups {
		if err := add(groupKey(namespace, g)); err != nil {
			return nil, fmt.Errorf("bindings of group %q: %w", g, err)
		}
	}
	return out, nil
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
