package admissionregistration

import (
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func validWebhook() admissionregistrationv1.ValidatingWebhook {
	return admissionregistrationv1.ValidatingWebhook{
		Name:                    "check.example.com",
		ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://127.0.0.1:8443/validate")},
		Rules:                   []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{"CREATE"}, Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}},
		SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
		AdmissionReviewVersions: []string{"v1"},
	}
}

func TestValidateValidatingWebhookConfiguration(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(w *admissionregistrationv1.ValidatingWebhook)
		want   string // substring of the aggregated error; "" means valid
	}{
		{name: "valid", mutate: func(*admissionregistrationv1.ValidatingWebhook) {}},
		{name: "name not fully qualified", mutate: func(w *admissionregistrationv1.ValidatingWebhook) { w.Name = "check" },
			want: "webhooks[0].name: Invalid value: \"check\": should be a domain with at least three segments separated by dots"},
		{name: "sideEffects required", mutate: func(w *admissionregistrationv1.ValidatingWebhook) { w.SideEffects = nil },
			want: "webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun"},
		{name: "sideEffects Some is v1beta1 only", mutate: func(w *admissionregistrationv1.ValidatingWebhook) {
			w.SideEffects = ptr.To(admissionregistrationv1.SideEffectClassSome)
		},
			want: `webhooks[0].sideEffects: Unsupported value: "Some": supported values: "None", "NoneOnDryRun"`},
		{name: "admissionReviewVersions required", mutate: func(w *admissionregistrationv1.ValidatingWebhook) { w.AdmissionReviewVersions = nil },
			want: "webhooks[0].admissionReviewVersions: Required value: must specify one of v1, v1beta1"},
		{name: "unknown review version only", mutate: func(w *admissionregistrationv1.ValidatingWebhook) { w.AdmissionReviewVersions = []string{"v2"} },
			want: "must include at least one of v1, v1beta1"},
		{name: "timeout too long", mutate: func(w *admissionregistrationv1.ValidatingWebhook) { w.TimeoutSeconds = ptr.To(int32(31)) },
			want: "webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value must be between 1 and 30 seconds"},
		{name: "http url", mutate: func(w *admissionregistrationv1.ValidatingWebhook) { w.ClientConfig.URL = ptr.To("http://example.com/") },
			want: "'https' is the only allowed URL scheme"},
		{name: "service with an empty path", mutate: func(w *admissionregistrationv1.ValidatingWebhook) {
			w.ClientConfig.URL = nil
			w.ClientConfig.Service = &admissionregistrationv1.ServiceReference{Namespace: "a", Name: "b", Path: ptr.To("")}
		}},
		{name: "service path without a leading slash", mutate: func(w *admissionregistrationv1.ValidatingWebhook) {
			w.ClientConfig.URL = nil
			w.ClientConfig.Service = &admissionregistrationv1.ServiceReference{Namespace: "a", Name: "b", Path: ptr.To("hook")}
		}, want: "webhooks[0].clientConfig.service.path: Invalid value: \"hook\": must start with a '/'"},
		{name: "url and service", mutate: func(w *admissionregistrationv1.ValidatingWebhook) {
			w.ClientConfig.Service = &admissionregistrationv1.ServiceReference{Namespace: "a", Name: "b"}
		}, want: "webhooks[0].clientConfig: Required value: exactly one of url or service is required"},
		{name: "wildcard operation with others", mutate: func(w *admissionregistrationv1.ValidatingWebhook) {
			w.Rules[0].Operations = []admissionregistrationv1.OperationType{"*", "CREATE"}
		}, want: "if '*' is present, must not specify other operations"},
		{name: "*/* with others", mutate: func(w *admissionregistrationv1.ValidatingWebhook) { w.Rules[0].Resources = []string{"*/*", "pods"} },
			want: "if '*/*' is present, must not specify other resources"},
		{name: "pods/* covers pods/status", mutate: func(w *admissionregistrationv1.ValidatingWebhook) {
			w.Rules[0].Resources = []string{"pods/*", "pods/status"}
		},
			want: "if 'pods/*' is present, must not specify pods/status"},
		{name: "bad scope", mutate: func(w *admissionregistrationv1.ValidatingWebhook) {
			w.Rules[0].Scope = ptr.To(admissionregistrationv1.ScopeType("Everywhere"))
		},
			want: `webhooks[0].rules[0].scope: Unsupported value: "Everywhere"`},
		{name: "match condition without expression", mutate: func(w *admissionregistrationv1.ValidatingWebhook) {
			w.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "x"}}
		}, want: "webhooks[0].matchConditions[0].expression: Required value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := validWebhook()
			tc.mutate(&w)
			c := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Webhooks: []admissionregistrationv1.ValidatingWebhook{w}}
			DefaultValidatingWebhookConfiguration(c)
			got := ValidateValidatingWebhookConfiguration(c).ToAggregate()
			switch {
			case tc.want == "" && got != nil:
				t.Fatalf("unexpected errors: %v", got)
			case tc.want != "" && (got == nil || !strings.Contains(got.Error(), tc.want)):
				t.Fatalf("errors %v, want one containing %q", got, tc.want)
			}
		})
	}
}

func TestDefaults(t *testing.T) {
	c := &admissionregistrationv1.MutatingWebhookConfiguration{Webhooks: []admissionregistrationv1.MutatingWebhook{{
		Rules:        []admissionregistrationv1.RuleWithOperations{{}},
		ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Name: "s", Namespace: "n"}},
	}}}
	DefaultMutatingWebhookConfiguration(c)
	w := c.Webhooks[0]
	if *w.FailurePolicy != admissionregistrationv1.Fail || *w.MatchPolicy != admissionregistrationv1.Equivalent || *w.TimeoutSeconds != 10 ||
		*w.ReinvocationPolicy != admissionregistrationv1.NeverReinvocationPolicy || w.NamespaceSelector == nil || w.ObjectSelector == nil ||
		*w.Rules[0].Scope != admissionregistrationv1.AllScopes || *w.ClientConfig.Service.Port != 443 || w.SideEffects != nil {
		t.Fatalf("defaults: %+v", w)
	}
}

func TestValidateBinding(t *testing.T) {
	for _, tc := range []struct {
		name    string
		actions []admissionregistrationv1.ValidationAction
		want    string
	}{
		{name: "deny", actions: []admissionregistrationv1.ValidationAction{"Deny"}},
		{name: "none", want: "spec.validationActions: Required value: at least one validation action is required"},
		{name: "deny and warn", actions: []admissionregistrationv1.ValidationAction{"Deny", "Warn"}, want: "must not contain both Deny and Warn"},
		{name: "duplicate", actions: []admissionregistrationv1.ValidationAction{"Audit", "Audit"}, want: "spec.validationActions[1]: Duplicate value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "p", ValidationActions: tc.actions}}
			got := ValidateValidatingAdmissionPolicyBinding(b).ToAggregate()
			if (tc.want == "") != (got == nil) || (got != nil && !strings.Contains(got.Error(), tc.want)) {
				t.Fatalf("errors %v, want %q", got, tc.want)
			}
		})
	}
}

func TestValidatePolicyNeedsValidations(t *testing.T) {
	p := &admissionregistrationv1.ValidatingAdmissionPolicy{Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
		MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: validWebhook().Rules[0]}}},
	}}
	DefaultValidatingAdmissionPolicy(p)
	got := ValidateValidatingAdmissionPolicy(p).ToAggregate()
	if got == nil || !strings.Contains(got.Error(), "validations or auditAnnotations must contain at least one item") {
		t.Fatalf("errors %v", got)
	}
}

func TestCompilerRefusesBadExpressions(t *testing.T) {
	c, err := NewCompiler()
	if err != nil {
		t.Fatal(err)
	}
	p := &admissionregistrationv1.ValidatingAdmissionPolicy{Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
		Validations: []admissionregistrationv1.Validation{
			{Expression: "object.spec.replicas <= 3"},
			{Expression: "object.spec.replicas <="},
			{Expression: "'not a bool'"},
			{Expression: "true", MessageExpression: "1"},
		},
	}}
	errs := c.Policy(p)
	if len(errs) != 3 {
		t.Fatalf("errors %v, want 3", errs)
	}
	for i, want := range []string{"spec.validations[1].expression: Invalid value: \"object.spec.replicas <=\": compilation failed: ", "spec.validations[2].expression", "spec.validations[3].messageExpression"} {
		if !strings.Contains(errs[i].Error(), want) {
			t.Errorf("error %d = %v, want %q", i, errs[i], want)
		}
	}
}
