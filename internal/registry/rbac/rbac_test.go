package rbac

import (
	"context"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/skiff-sh/skiff/internal/registry"
	"github.com/skiff-sh/skiff/internal/registry/validationutil/errtest"
)

func resource(t *testing.T, plural string) *registry.Resource {
	t.Helper()
	for _, r := range Resources() {
		if r.Plural == plural {
			return r
		}
	}
	t.Fatalf("no resource %s", plural)
	return nil
}

var readPods = rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list"}}

func TestValidateRoles(t *testing.T) {
	role := func(rules ...rbacv1.PolicyRule) *rbacv1.Role {
		return &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "pod-reader", Namespace: "default"}, Rules: rules}
	}
	clusterRole := func(mod func(*rbacv1.ClusterRole)) *rbacv1.ClusterRole {
		r := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "system:pod-reader"}, Rules: []rbacv1.PolicyRule{readPods}}
		if mod != nil {
			mod(r)
		}
		return r
	}
	tests := []struct {
		name     string
		resource string
		obj      runtime.Object
		want     *errtest.Want
	}{
		{"valid role", "roles", role(readPods), nil},
		{"valid cluster role with colon and urls", "clusterroles", clusterRole(func(r *rbacv1.ClusterRole) {
			r.Rules = append(r.Rules, rbacv1.PolicyRule{NonResourceURLs: []string{"/healthz"}, Verbs: []string{"get"}})
		}), nil},
		{"name with slash", "clusterroles", clusterRole(func(r *rbacv1.ClusterRole) { r.Name = "a/b" }), &errtest.Want{Field: "metadata.name", Type: field.ErrorTypeInvalid, Detail: "may not contain '/'"}},
		{"name dot", "roles", &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "..", Namespace: "default"}}, &errtest.Want{Field: "metadata.name", Type: field.ErrorTypeInvalid, Detail: "may not be '..'"}},
		{"no verbs", "roles", role(rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}}), &errtest.Want{Field: "rules[0].verbs", Type: field.ErrorTypeRequired, Detail: "verbs must contain at least one value"}},
		{"no api groups", "roles", role(rbacv1.PolicyRule{Resources: []string{"pods"}, Verbs: []string{"get"}}), &errtest.Want{Field: "rules[0].apiGroups", Type: field.ErrorTypeRequired, Detail: "resource rules must supply at least one api group"}},
		{"no resources", "roles", role(rbacv1.PolicyRule{APIGroups: []string{""}, Verbs: []string{"get"}}), &errtest.Want{Field: "rules[0].resources", Type: field.ErrorTypeRequired, Detail: "resource rules must supply at least one resource"}},
		{"namespaced urls", "roles", role(rbacv1.PolicyRule{NonResourceURLs: []string{"/x"}, Verbs: []string{"get"}}), &errtest.Want{Field: "rules[0].nonResourceURLs", Type: field.ErrorTypeInvalid, Detail: "namespaced rules cannot apply to non-resource URLs"}},
		{"urls and resources", "clusterroles", clusterRole(func(r *rbacv1.ClusterRole) { r.Rules[0].NonResourceURLs = []string{"/x"} }), &errtest.Want{Field: "rules[0].nonResourceURLs", Type: field.ErrorTypeInvalid, Detail: "rules cannot apply to both regular resources and non-resource URLs"}},
		{"empty aggregation", "clusterroles", clusterRole(func(r *rbacv1.ClusterRole) { r.AggregationRule = &rbacv1.AggregationRule{} }), &errtest.Want{Field: "aggregationRule.clusterRoleSelectors", Type: field.ErrorTypeRequired, Detail: "at least one clusterRoleSelector required"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errtest.Check(t, resource(t, tt.resource).Strategy.Validate(context.Background(), tt.obj), tt.want)
		})
	}
}

func TestBindings(t *testing.T) {
	s := runtime.NewScheme()
	if err := rbacv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := RegisterDefaults(s); err != nil {
		t.Fatal(err)
	}
	rb := func(mod func(*rbacv1.RoleBinding)) *rbacv1.RoleBinding {
		b := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "read-pods", Namespace: "default"},
			RoleRef:    rbacv1.RoleRef{Kind: "Role", Name: "pod-reader"},
			Subjects:   []rbacv1.Subject{{Kind: "User", Name: "jane"}, {Kind: "ServiceAccount", Name: "default"}, {Kind: "Group", Name: "devs"}},
		}
		s.Default(b)
		if mod != nil {
			mod(b)
		}
		return b
	}
	crb := func(mod func(*rbacv1.ClusterRoleBinding)) *rbacv1.ClusterRoleBinding {
		b := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "system:read"},
			RoleRef:    rbacv1.RoleRef{Kind: "ClusterRole", Name: "view"},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "default", Namespace: "kube-system"}},
		}
		s.Default(b)
		if mod != nil {
			mod(b)
		}
		return b
	}
	d := rb(nil)
	if d.RoleRef.APIGroup != rbacv1.GroupName || d.Subjects[0].APIGroup != rbacv1.GroupName || d.Subjects[1].APIGroup != "" || d.Subjects[2].APIGroup != rbacv1.GroupName {
		t.Fatalf("defaults = %+v", d)
	}
	tests := []struct {
		name     string
		resource string
		obj      runtime.Object
		want     *errtest.Want
	}{
		{"valid rolebinding", "rolebindings", rb(nil), nil},
		{"rolebinding to clusterrole", "rolebindings", rb(func(b *rbacv1.RoleBinding) { b.RoleRef.Kind = "ClusterRole" }), nil},
		{"valid clusterrolebinding", "clusterrolebindings", crb(nil), nil},
		{"bad ref kind", "rolebindings", rb(func(b *rbacv1.RoleBinding) { b.RoleRef.Kind = "Pod" }), &errtest.Want{Field: "roleRef.kind", Type: field.ErrorTypeNotSupported, Detail: `"Role", "ClusterRole"`}},
		{"cluster binding to role", "clusterrolebindings", crb(func(b *rbacv1.ClusterRoleBinding) { b.RoleRef.Kind = "Role" }), &errtest.Want{Field: "roleRef.kind", Type: field.ErrorTypeNotSupported, Detail: `"ClusterRole"`}},
		{"bad ref group", "rolebindings", rb(func(b *rbacv1.RoleBinding) { b.RoleRef.APIGroup = "apps" }), &errtest.Want{Field: "roleRef.apiGroup", Type: field.ErrorTypeNotSupported}},
		{"no ref name", "rolebindings", rb(func(b *rbacv1.RoleBinding) { b.RoleRef.Name = "" }), &errtest.Want{Field: "roleRef.name", Type: field.ErrorTypeRequired}},
		{"subject no name", "rolebindings", rb(func(b *rbacv1.RoleBinding) { b.Subjects[0].Name = "" }), &errtest.Want{Field: "subjects[0].name", Type: field.ErrorTypeRequired}},
		{"subject bad kind", "rolebindings", rb(func(b *rbacv1.RoleBinding) { b.Subjects[0].Kind = "Robot" }), &errtest.Want{Field: "subjects[0].kind", Type: field.ErrorTypeNotSupported}},
		{"sa with group", "rolebindings", rb(func(b *rbacv1.RoleBinding) { b.Subjects[1].APIGroup = "rbac.authorization.k8s.io" }), &errtest.Want{Field: "subjects[1].apiGroup", Type: field.ErrorTypeNotSupported}},
		{"sa bad name", "rolebindings", rb(func(b *rbacv1.RoleBinding) { b.Subjects[1].Name = "Bad_Name" }), &errtest.Want{Field: "subjects[1].name", Type: field.ErrorTypeInvalid}},
		{"cluster sa without namespace", "clusterrolebindings", crb(func(b *rbacv1.ClusterRoleBinding) { b.Subjects[0].Namespace = "" }), &errtest.Want{Field: "subjects[0].namespace", Type: field.ErrorTypeRequired}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errtest.Check(t, resource(t, tt.resource).Strategy.Validate(context.Background(), tt.obj), tt.want)
		})
	}

	ctx := context.Background()
	old := rb(func(b *rbacv1.RoleBinding) { b.ResourceVersion = "1" })
	moreSubjects := old.DeepCopy()
	moreSubjects.Subjects = append(moreSubjects.Subjects, rbacv1.Subject{Kind: "User", Name: "bob", APIGroup: rbacv1.GroupName})
	errtest.Check(t, resource(t, "rolebindings").Strategy.ValidateUpdate(ctx, moreSubjects, old), nil)
	rerouted := old.DeepCopy()
	rerouted.RoleRef.Name = "admin"
	errtest.Check(t, resource(t, "rolebindings").Strategy.ValidateUpdate(ctx, rerouted, old), &errtest.Want{Field: "roleRef", Type: field.ErrorTypeInvalid, Detail: "cannot change roleRef"})
	oldC := crb(func(b *rbacv1.ClusterRoleBinding) { b.ResourceVersion = "1" })
	reroutedC := oldC.DeepCopy()
	reroutedC.RoleRef.Name = "edit"
	errtest.Check(t, resource(t, "clusterrolebindings").Strategy.ValidateUpdate(ctx, reroutedC, oldC), &errtest.Want{Field: "roleRef", Type: field.ErrorTypeInvalid, Detail: "cannot change roleRef"})
}

func TestResourceScopes(t *testing.T) {
	want := map[string]bool{"roles": true, "rolebindings": true, "clusterroles": false, "clusterrolebindings": false}
	for _, r := range Resources() {
		if want[r.Plural] != r.Namespaced || !r.Strategy.AllowCreateOnUpdate() {
			t.Errorf("%s: namespaced %v createOnUpdate %v", r.Plural, r.Namespaced, r.Strategy.AllowCreateOnUpdate())
		}
	}
}
