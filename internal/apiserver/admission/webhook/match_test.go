package webhook

import (
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

func rule(ops []admissionregistrationv1.OperationType, groups, versions, resources []string, scope admissionregistrationv1.ScopeType) admissionregistrationv1.RuleWithOperations {
	return admissionregistrationv1.RuleWithOperations{Operations: ops, Rule: admissionregistrationv1.Rule{APIGroups: groups, APIVersions: versions, Resources: resources, Scope: ptr.To(scope)}}
}

func TestMatchesRule(t *testing.T) {
	create := []admissionregistrationv1.OperationType{admissionregistrationv1.Create}
	all := []admissionregistrationv1.OperationType{admissionregistrationv1.OperationAll}
	pods := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	deploy := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	nodes := schema.GroupVersionResource{Version: "v1", Resource: "nodes"}
	any := []string{"*"}
	for _, tc := range []struct {
		name string
		rule admissionregistrationv1.RuleWithOperations
		req  Request
		want bool
	}{
		{"exact", rule(create, []string{""}, []string{"v1"}, []string{"pods"}, "*"), Request{Operation: "CREATE", Resource: pods, Namespaced: true}, true},
		{"other operation", rule(create, any, any, any, "*"), Request{Operation: "UPDATE", Resource: pods, Namespaced: true}, false},
		{"operation *", rule(all, any, any, any, "*"), Request{Operation: "DELETE", Resource: pods, Namespaced: true}, true},
		{"other group", rule(all, []string{"apps"}, any, any, "*"), Request{Operation: "CREATE", Resource: pods, Namespaced: true}, false},
		{"other version", rule(all, any, []string{"v2"}, any, "*"), Request{Operation: "CREATE", Resource: deploy, Namespaced: true}, false},
		{"* is not subresources", rule(all, any, any, any, "*"), Request{Operation: "UPDATE", Resource: pods, Subresource: "status", Namespaced: true}, false},
		{"*/* is everything", rule(all, any, any, []string{"*/*"}, "*"), Request{Operation: "UPDATE", Resource: pods, Subresource: "status", Namespaced: true}, true},
		{"pods/* is pods' subresources", rule(all, any, any, []string{"pods/*"}, "*"), Request{Operation: "UPDATE", Resource: pods, Subresource: "status", Namespaced: true}, true},
		{"pods/* is not pods", rule(all, any, any, []string{"pods/*"}, "*"), Request{Operation: "UPDATE", Resource: pods, Namespaced: true}, false},
		{"*/status", rule(all, any, any, []string{"*/status"}, "*"), Request{Operation: "UPDATE", Resource: deploy, Subresource: "status", Namespaced: true}, true},
		{"*/status is not scale", rule(all, any, any, []string{"*/status"}, "*"), Request{Operation: "UPDATE", Resource: deploy, Subresource: "scale", Namespaced: true}, false},
		{"pods/status exact", rule(all, any, any, []string{"pods/status"}, "*"), Request{Operation: "UPDATE", Resource: pods, Subresource: "status", Namespaced: true}, true},
		{"Cluster scope skips namespaced", rule(all, any, any, any, "Cluster"), Request{Operation: "CREATE", Resource: pods, Namespaced: true}, false},
		{"Cluster scope takes nodes", rule(all, any, any, any, "Cluster"), Request{Operation: "CREATE", Resource: nodes}, true},
		{"Namespaced scope skips nodes", rule(all, any, any, any, "Namespaced"), Request{Operation: "CREATE", Resource: nodes}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := MatchesRule(&tc.rule, tc.req); got != tc.want {
				t.Fatalf("MatchesRule = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestMatchesSelector(t *testing.T) {
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}}
	notIn := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "skip", Operator: metav1.LabelSelectorOpDoesNotExist}}}
	for _, tc := range []struct {
		name string
		sel  *metav1.LabelSelector
		sets []map[string]string
		want bool
	}{
		{"nil selects all", nil, nil, true},
		{"empty selects all", &metav1.LabelSelector{}, []map[string]string{{"x": "y"}}, true},
		{"new object matches", sel, []map[string]string{{"a": "b"}}, true},
		{"old object matches", sel, []map[string]string{{"a": "c"}, {"a": "b"}}, true},
		{"neither", sel, []map[string]string{{"a": "c"}}, false},
		{"unlabelled object and DoesNotExist", notIn, []map[string]string{nil}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := MatchesSelector(tc.sel, tc.sets...)
			if err != nil || got != tc.want {
				t.Fatalf("MatchesSelector = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

func TestExempt(t *testing.T) {
	if !IsExempt(schema.GroupResource{Group: "admissionregistration.k8s.io", Resource: "validatingwebhookconfigurations"}) || IsExempt(schema.GroupResource{Resource: "pods"}) {
		t.Fatal("exemption wrong")
	}
}
