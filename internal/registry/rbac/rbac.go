package rbac

import (
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/skiff-sh/skiff/internal/registry"
	vu "github.com/skiff-sh/skiff/internal/registry/validationutil"
)

var roleRefPath = field.NewPath("roleRef")

// Resources returns the rbac.authorization.k8s.io/v1 resources. Names are path segments (they may
// hold ':' as in "system:node"), and PUT creates, as Kubernetes allows for RBAC reconciliation.
func Resources() []*registry.Resource {
	gv := rbacv1.SchemeGroupVersion
	return []*registry.Resource{
		{
			GroupVersion: gv, Kind: "Role", ListKind: "RoleList", Plural: "roles", Singular: "role", Namespaced: true,
			New:     func() runtime.Object { return &rbacv1.Role{} },
			NewList: func() runtime.Object { return &rbacv1.RoleList{} },
			Strategy: &vu.Strategy[*rbacv1.Role]{
				Namespaced: true, NameFn: vu.PathSegmentName,
				ValidateObject: func(r *rbacv1.Role) field.ErrorList { return validateRules(r.Rules, true) },
				CreateOnUpdate: true, UnconditionalUpdate: true,
			},
		},
		{
			GroupVersion: gv, Kind: "ClusterRole", ListKind: "ClusterRoleList", Plural: "clusterroles", Singular: "clusterrole",
			New:     func() runtime.Object { return &rbacv1.ClusterRole{} },
			NewList: func() runtime.Object { return &rbacv1.ClusterRoleList{} },
			Strategy: &vu.Strategy[*rbacv1.ClusterRole]{
				NameFn:         vu.PathSegmentName,
				ValidateObject: ValidateClusterRole,
				CreateOnUpdate: true, UnconditionalUpdate: true,
			},
		},
		{
			GroupVersion: gv, Kind: "RoleBinding", ListKind: "RoleBindingList", Plural: "rolebindings", Singular: "rolebinding", Namespaced: true,
			New:     func() runtime.Object { return &rbacv1.RoleBinding{} },
			NewList: func() runtime.Object { return &rbacv1.RoleBindingList{} },
			Strategy: &vu.Strategy[*rbacv1.RoleBinding]{
				Namespaced: true, NameFn: vu.PathSegmentName,
				ValidateObject: func(b *rbacv1.RoleBinding) field.ErrorList {
					return validateBinding(b.RoleRef, b.Subjects, true)
				},
				ValidateChange: func(b, old *rbacv1.RoleBinding) field.ErrorList { return roleRefUnchanged(b.RoleRef, old.RoleRef) },
				CreateOnUpdate: true, UnconditionalUpdate: true,
			},
		},
		{
			GroupVersion: gv, Kind: "ClusterRoleBinding", ListKind: "ClusterRoleBindingList", Plural: "clusterrolebindings", Singular: "clusterrolebinding",
			New:     func() runtime.Object { return &rbacv1.ClusterRoleBinding{} },
			NewList: func() runtime.Object { return &rbacv1.ClusterRoleBindingList{} },
			Strategy: &vu.Strategy[*rbacv1.ClusterRoleBinding]{
				NameFn: vu.PathSegmentName,
				ValidateObject: func(b *rbacv1.ClusterRoleBinding) field.ErrorList {
					return validateBinding(b.RoleRef, b.Subjects, false)
				},
				ValidateChange: func(b, old *rbacv1.ClusterRoleBinding) field.ErrorList {
					return roleRefUnchanged(b.RoleRef, old.RoleRef)
				},
				CreateOnUpdate: true, UnconditionalUpdate: true,
			},
		},
	}
}

// RegisterDefaults registers the binding defaults on s: roleRef.apiGroup and the subjects' apiGroup
// (rbac.authorization.k8s.io for User and Group, "" for ServiceAccount).
func RegisterDefaults(s *runtime.Scheme) error {
	if s == nil {
		return fmt.Errorf("register rbac.authorization.k8s.io/v1 defaults: nil scheme")
	}
	s.AddTypeDefaultingFunc(&rbacv1.RoleBinding{}, func(o any) {
		b := o.(*rbacv1.RoleBinding)
		DefaultBinding(&b.RoleRef, b.Subjects)
	})
	s.AddTypeDefaultingFunc(&rbacv1.RoleBindingList{}, func(o any) {
		l := o.(*rbacv1.RoleBindingList)
		for i := range l.Items {
			DefaultBinding(&l.Items[i].RoleRef, l.Items[i].Subjects)
		}
	})
	s.AddTypeDefaultingFunc(&rbacv1.ClusterRoleBinding{}, func(o any) {
		b := o.(*rbacv1.ClusterRoleBinding)
		DefaultBinding(&b.RoleRef, b.Subjects)
	})
	s.AddTypeDefaultingFunc(&rbacv1.ClusterRoleBindingList{}, func(o any) {
		l := o.(*rbacv1.ClusterRoleBindingList)
		for i := range l.Items {
			DefaultBinding(&l.Items[i].RoleRef, l.Items[i].Subjects)
		}
	})
	return nil
}

// DefaultBinding fills the API groups a binding may leave out.
func DefaultBinding(ref *rbacv1.RoleRef, subjects []rbacv1.Subject) {
	if ref.APIGroup == "" {
		ref.APIGroup = rbacv1.GroupName
	}
	for i := range subjects {
		s := &subjects[i]
		if s.APIGroup == "" && (s.Kind == rbacv1.UserKind || s.Kind == rbacv1.GroupKind) {
			s.APIGroup = rbacv1.GroupName
		}
	}
}

// ValidateClusterRole checks the rules and the aggregation selectors.
func ValidateClusterRole(r *rbacv1.ClusterRole) field.ErrorList {
	errs := validateRules(r.Rules, false)
	if r.AggregationRule != nil {
		p := field.NewPath("aggregationRule", "clusterRoleSelectors")
		if len(r.AggregationRule.ClusterRoleSelectors) == 0 {
			errs = append(errs, field.Required(p, "at least one clusterRoleSelector required if aggregationRule is non-nil"))
		}
		for i := range r.AggregationRule.ClusterRoleSelectors {
			sel := &r.AggregationRule.ClusterRoleSelectors[i]
			errs = append(errs, metav1validation.ValidateLabelSelector(sel, metav1validation.LabelSelectorValidationOptions{}, p.Index(i))...)
			if _, err := metav1.LabelSelectorAsSelector(sel); err != nil {
				errs = append(errs, field.Invalid(p.Index(i), sel, "invalid label selector."))
			}
		}
	}
	return errs
}

func validateRules(rules []rbacv1.PolicyRule, namespaced bool) field.ErrorList {
	var errs field.ErrorList
	for i, rule := range rules {
		errs = append(errs, ValidatePolicyRule(rule, namespaced, field.NewPath("rules").Index(i))...)
	}
	return errs
}

// ValidatePolicyRule checks one rule: verbs are required; a rule names either resources (with API
// groups) or non-resource URLs, and namespaced rules cannot name URLs.
func ValidatePolicyRule(rule rbacv1.PolicyRule, namespaced bool, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(rule.Verbs) == 0 {
		errs = append(errs, field.Required(fldPath.Child("verbs"), "verbs must contain at least one value"))
	}
	if len(rule.NonResourceURLs) > 0 {
		if namespaced {
			errs = append(errs, field.Invalid(fldPath.Child("nonResourceURLs"), rule.NonResourceURLs, "namespaced rules cannot apply to non-resource URLs"))
		}
		if len(rule.APIGroups) > 0 || len(rule.Resources) > 0 || len(rule.ResourceNames) > 0 {
			errs = append(errs, field.Invalid(fldPath.Child("nonResourceURLs"), rule.NonResourceURLs, "rules cannot apply to both regular resources and non-resource URLs"))
		}
		return errs
	}
	if len(rule.APIGroups) == 0 {
		errs = append(errs, field.Required(fldPath.Child("apiGroups"), "resource rules must supply at least one api group"))
	}
	if len(rule.Resources) == 0 {
		errs = append(errs, field.Required(fldPath.Child("resources"), "resource rules must supply at least one resource"))
	}
	return errs
}

// validateBinding checks the roleRef (a RoleBinding may name a Role or a ClusterRole, a
// ClusterRoleBinding only a ClusterRole) and the subjects.
func validateBinding(ref rbacv1.RoleRef, subjects []rbacv1.Subject, namespaced bool) field.ErrorList {
	var errs field.ErrorList
	if ref.APIGroup != rbacv1.GroupName {
		errs = append(errs, field.NotSupported(roleRefPath.Child("apiGroup"), ref.APIGroup, []string{rbacv1.GroupName}))
	}
	kinds := []string{"ClusterRole"}
	if namespaced {
		kinds = []string{"Role", "ClusterRole"}
	}
	if ref.Kind != "ClusterRole" && (!namespaced || ref.Kind != "Role") {
		errs = append(errs, field.NotSupported(roleRefPath.Child("kind"), ref.Kind, kinds))
	}
	if ref.Name == "" {
		errs = append(errs, field.Required(roleRefPath.Child("name"), ""))
	} else {
		for _, msg := range vu.PathSegmentName(ref.Name, false) {
			errs = append(errs, field.Invalid(roleRefPath.Child("name"), ref.Name, msg))
		}
	}
	for i, s := range subjects {
		errs = append(errs, ValidateSubject(s, namespaced, field.NewPath("subjects").Index(i))...)
	}
	return errs
}

// ValidateSubject checks one binding subject. A ServiceAccount in a ClusterRoleBinding needs a namespace.
func ValidateSubject(s rbacv1.Subject, namespaced bool, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.Name == "" {
		errs = append(errs, field.Required(fldPath.Child("name"), ""))
	}
	switch s.Kind {
	case rbacv1.ServiceAccountKind:
		if s.Name != "" {
			for _, msg := range validation.IsDNS1123Subdomain(s.Name) {
				errs = append(errs, field.Invalid(fldPath.Child("name"), s.Name, msg))
			}
		}
		if s.APIGroup != "" {
			errs = append(errs, field.NotSupported(fldPath.Child("apiGroup"), s.APIGroup, []string{""}))
		}
		if !namespaced && s.Namespace == "" {
			errs = append(errs, field.Required(fldPath.Child("namespace"), ""))
		}
	case rbacv1.UserKind, rbacv1.GroupKind:
		if s.APIGroup != rbacv1.GroupName {
			errs = append(errs, field.NotSupported(fldPath.Child("apiGroup"), s.APIGroup, []string{rbacv1.GroupName}))
		}
	default:
		errs = append(errs, field.NotSupported(fldPath.Child("kind"), s.Kind, []string{rbacv1.ServiceAccountKind, rbacv1.UserKind, rbacv1.GroupKind}))
	}
	return errs
}

func roleRefUnchanged(ref, old rbacv1.RoleRef) field.ErrorList {
	if ref != old {
		return field.ErrorList{field.Invalid(roleRefPath, ref, "cannot change roleRef")}
	}
	return nil
}
