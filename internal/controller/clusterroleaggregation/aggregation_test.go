package clusterroleaggregation

import (
	"reflect"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestAggregatedRules(t *testing.T) {
	get := rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}
	create := rbacv1.PolicyRule{Verbs: []string{"create"}, APIGroups: []string{""}, Resources: []string{"pods"}}
	sel := func(l string) *rbacv1.AggregationRule {
		return &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{l: "true"}}}}
	}
	edit := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "edit", Labels: map[string]string{"to-admin": "true"}}, AggregationRule: sel("to-edit"), Rules: []rbacv1.PolicyRule{get, create}}
	all := []*rbacv1.ClusterRole{
		edit,
		{ObjectMeta: metav1.ObjectMeta{Name: "b-extra", Labels: map[string]string{"to-edit": "true"}}, Rules: []rbacv1.PolicyRule{create}},
		{ObjectMeta: metav1.ObjectMeta{Name: "a-view", Labels: map[string]string{"to-edit": "true"}}, Rules: []rbacv1.PolicyRule{get, get}},
		{ObjectMeta: metav1.ObjectMeta{Name: "unrelated"}, Rules: []rbacv1.PolicyRule{{Verbs: []string{"*"}}}},
	}
	got, err := AggregatedRules(edit, all)
	if err != nil {
		t.Fatal(err)
	}
	if want := []rbacv1.PolicyRule{get, create}; !reflect.DeepEqual(got, want) {
		t.Errorf("edit = %v, want %v", got, want)
	}
	admin := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "admin"}, AggregationRule: sel("to-admin")}
	got, err = AggregatedRules(admin, append(all, admin))
	if err != nil {
		t.Fatal(err)
	}
	if want := []rbacv1.PolicyRule{get, create}; !reflect.DeepEqual(got, want) {
		t.Errorf("admin (through edit) = %v, want %v", got, want)
	}
}
