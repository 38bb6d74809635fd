package policy

import (
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	crdv1 "github.com/skiff-sh/skiff/internal/apis/apiextensionsv1"
	admissioncel "github.com/skiff-sh/skiff/internal/cel"
)

var deploymentKind = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}

// testSchemas serves apps/v1 deployments with a schema of spec.replicas (an integer) and metadata,
// and a params kind with spec.max.
func testSchemas() Schemas {
	str := crdv1.JSONSchemaProps{Type: "string"}
	deployment := &crdv1.JSONSchemaProps{Type: "object", Properties: map[string]crdv1.JSONSchemaProps{
		"apiVersion": str, "kind": str,
		"metadata": {Type: "object", Properties: map[string]crdv1.JSONSchemaProps{"name": str, "namespace": str}},
		"spec":     {Type: "object", Properties: map[string]crdv1.JSONSchemaProps{"replicas": {Type: "integer"}}},
	}}
	params := &crdv1.JSONSchemaProps{Type: "object", Properties: map[string]crdv1.JSONSchemaProps{
		"spec": {Type: "object", Properties: map[string]crdv1.JSONSchemaProps{"max": {Type: "integer"}}},
	}}
	paramsKind := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Limit"}
	return Schemas{
		KindsFor: func(gvr schema.GroupVersionResource) []schema.GroupVersionKind {
			if gvr == deploymentKind.GroupVersion().WithResource("deployments") {
				return []schema.GroupVersionKind{deploymentKind}
			}
			return nil
		},
		KindSchema: func(gvk schema.GroupVersionKind) (*crdv1.JSONSchemaProps, bool) {
			switch gvk {
			case deploymentKind:
				return deployment, true
			case paramsKind:
				return params, true
			}
			return nil, false
		},
	}
}

func typeCheckPolicy(groups, resources []string, paramKind *admissionregistrationv1.ParamKind, validations ...admissionregistrationv1.Validation) *admissionregistrationv1.ValidatingAdmissionPolicy {
	return &admissionregistrationv1.ValidatingAdmissionPolicy{Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
		ParamKind: paramKind,
		MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
			RuleWithOperations: admissionregistrationv1.RuleWithOperations{Rule: admissionregistrationv1.Rule{
				APIGroups: groups, APIVersions: []string{"v1"}, Resources: resources}}}}},
		Validations: validations,
	}}
}

func TestTypeCheck(t *testing.T) {
	base, err := admissioncel.NewEnvWithoutObjects()
	if err != nil {
		t.Fatal(err)
	}
	apps, deployments := []string{"apps"}, []string{"deployments"}
	limit := &admissionregistrationv1.ParamKind{APIVersion: "example.com/v1", Kind: "Limit"}
	type warning struct{ fieldRef, contains string }
	cases := []struct {
		name   string
		policy *admissionregistrationv1.ValidatingAdmissionPolicy
		want   []warning
	}{
		{"types agree", typeCheckPolicy(apps, deployments, nil, admissionregistrationv1.Validation{
			Expression: "object.spec.replicas > 1 && object.metadata.name != ''", MessageExpression: "'got ' + string(object.spec.replicas)"}), nil},
		{"int compared with a string, a string added to an int", typeCheckPolicy(apps, deployments, nil, admissionregistrationv1.Validation{
			Expression: "object.spec.replicas > '1'", MessageExpression: "'wants replicas > 1, got ' + object.spec.replicas"}), []warning{
			{"spec.validations[0].expression", "found no matching overload for '_>_' applied to '(int, string)'"},
			{"spec.validations[0].messageExpression", "found no matching overload for '_+_' applied to '(string, int)'"},
		}},
		{"a field the schema does not declare", typeCheckPolicy(apps, deployments, nil,
			admissionregistrationv1.Validation{Expression: "object.spec.replicas > 1"},
			admissionregistrationv1.Validation{Expression: "object.spec.maxRetries < 10"}), []warning{
			{"spec.validations[1].expression", "undefined field 'maxRetries'"},
		}},
		{"params typed by paramKind", typeCheckPolicy(apps, deployments, limit,
			admissionregistrationv1.Validation{Expression: "object.spec.replicas <= params.spec.max"},
			admissionregistrationv1.Validation{Expression: "params.spec.min > 0"}), []warning{
			{"spec.validations[1].expression", "undefined field 'min'"},
		}},
		{"a wildcard group names no kind", typeCheckPolicy([]string{"*"}, deployments, nil, admissionregistrationv1.Validation{Expression: "object.spec.replicas > '1'"}), nil},
		{"subresources and wildcard resources are left out", typeCheckPolicy(apps, []string{"deployments/scale", "*"}, nil, admissionregistrationv1.Validation{Expression: "object.spec.replicas > '1'"}), nil},
		{"a resource without a schema is not checked", typeCheckPolicy(apps, []string{"widgets"}, nil, admissionregistrationv1.Validation{Expression: "object.spec.replicas > '1'"}), nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := TypeCheck(base, c.policy, testSchemas())
			if got == nil {
				t.Fatal("no typeChecking: the spec waits for it to be set")
			}
			if len(got.ExpressionWarnings) != len(c.want) {
				t.Fatalf("warnings %+v, want %d", got.ExpressionWarnings, len(c.want))
			}
			for i, w := range c.want {
				g := got.ExpressionWarnings[i]
				if g.FieldRef != w.fieldRef || !strings.Contains(g.Warning, w.contains) || !strings.Contains(g.Warning, "apps/v1, Kind=Deployment") {
					t.Errorf("warning %d = %+v, want %s containing %q and the kind", i, g, w.fieldRef, w.contains)
				}
			}
		})
	}
}
