package policy

import (
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	admissioncel "github.com/skiff-sh/skiff/internal/cel"
)

func TestDecide(t *testing.T) {
	env, err := admissioncel.NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	object := map[string]any{
		"metadata": map[string]any{"name": "web", "labels": map[string]any{"team": "a"}},
		"spec":     map[string]any{"replicas": int64(5), "image": "registry.example.com/web:1.2", "memory": "512Mi"},
	}
	forbidden := metav1.StatusReasonForbidden
	for _, tc := range []struct {
		name        string
		spec        admissionregistrationv1.ValidatingAdmissionPolicySpec
		wantMatched bool
		want        []Failure
	}{
		{name: "passes", spec: spec(val("object.spec.replicas <= 5", "")), wantMatched: true},
		{name: "message", spec: spec(val("object.spec.replicas <= 3", "too many")), wantMatched: true,
			want: []Failure{{Message: "too many", Reason: metav1.StatusReasonInvalid}}},
		{name: "default message", spec: spec(val("object.spec.replicas <= 3", "")), wantMatched: true,
			want: []Failure{{Message: "failed expression: object.spec.replicas <= 3", Reason: metav1.StatusReasonInvalid}}},
		{name: "messageExpression and reason", spec: spec(admissionregistrationv1.Validation{
			Expression: "object.spec.replicas <= 3", Message: "m", MessageExpression: "'got ' + string(object.spec.replicas)", Reason: &forbidden,
		}), wantMatched: true, want: []Failure{{Message: "got 5", Reason: metav1.StatusReasonForbidden}}},
		{name: "empty messageExpression falls back", spec: spec(admissionregistrationv1.Validation{
			Expression: "false", Message: "fallback", MessageExpression: "''",
		}), wantMatched: true, want: []Failure{{Message: "fallback", Reason: metav1.StatusReasonInvalid}}},
		{name: "match condition excludes", spec: func() admissionregistrationv1.ValidatingAdmissionPolicySpec {
			s := spec(val("false", "never"))
			s.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "team-b", Expression: "object.metadata.labels.team == 'b'"}}
			return s
		}()},
		{name: "variables", spec: func() admissionregistrationv1.ValidatingAdmissionPolicySpec {
			s := spec(val("variables.double > 8", ""))
			s.Variables = []admissionregistrationv1.Variable{{Name: "double", Expression: "object.spec.replicas * 2"}}
			return s
		}(), wantMatched: true},
		{name: "error fails closed", spec: spec(val("object.spec.missing > 1", "")), wantMatched: true,
			want: []Failure{{Message: "expression 'object.spec.missing > 1' resulted in error: no such key: missing", Reason: metav1.StatusReasonInvalid}}},
		{name: "error ignored", spec: func() admissionregistrationv1.ValidatingAdmissionPolicySpec {
			s := spec(val("object.spec.missing > 1", ""))
			s.FailurePolicy = ptr.To(admissionregistrationv1.Ignore)
			return s
		}(), wantMatched: true},
		{name: "compile error fails closed", spec: spec(val("object.spec.replicas >", "")), wantMatched: true,
			want: []Failure{{Message: "compilation failed: ", Reason: metav1.StatusReasonInvalid}}},
		{name: "library: regex, lists, quantity, url, ip", spec: spec(
			val("object.spec.image.find('[0-9.]+$') == '1.2'", "regex"),
			val("[1, 2, 3].isSorted() && [3, 1].sum() == 4 && [4, 2].min() == 2 && [1, 2, 1].lastIndexOf(1) == 2", "lists"),
			val("quantity(object.spec.memory).isLessThan(quantity('1Gi')) && quantity('1k').asInteger() == 1000", "quantity"),
			val("url('https://example.com:8443/a?b=c').getPort() == '8443' && url('https://example.com/a?b=c').getQuery()['b'] == ['c']", "url"),
			val("cidr('10.0.0.0/8').containsIP(ip('10.1.2.3')) && isIP('::1')", "ip"),
			val("'a,b'.split(',').size() == 2 && sets.contains([1, 2], [1])", "strings and sets"),
		), wantMatched: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &admissionregistrationv1.ValidatingAdmissionPolicy{Spec: tc.spec}
			if p.Spec.FailurePolicy == nil {
				p.Spec.FailurePolicy = ptr.To(admissionregistrationv1.Fail)
			}
			d := Decide(Compile(env, p), map[string]any{admissioncel.VarObject: object, admissioncel.VarOldObject: nil, admissioncel.VarParams: nil})
			if d.Matched != tc.wantMatched || len(d.Failures) != len(tc.want) {
				t.Fatalf("decision %+v, want matched %v and failures %+v", d, tc.wantMatched, tc.want)
			}
			for i, f := range d.Failures {
				if !strings.HasPrefix(f.Message, tc.want[i].Message) || f.Reason != tc.want[i].Reason {
					t.Fatalf("failure %d = %+v, want %+v", i, f, tc.want[i])
				}
			}
		})
	}
}

func spec(vals ...admissionregistrationv1.Validation) admissionregistrationv1.ValidatingAdmissionPolicySpec {
	return admissionregistrationv1.ValidatingAdmissionPolicySpec{Validations: vals}
}

func val(expr, msg string) admissionregistrationv1.Validation {
	return admissionregistrationv1.Validation{Expression: expr, Message: msg}
}

func TestReasonCode(t *testing.T) {
	for r, want := range map[metav1.StatusReason]int32{"Invalid": 422, "Forbidden": 403, "Unauthorized": 401, "RequestEntityTooLarge": 413} {
		if got := ReasonCode(r); got != want {
			t.Errorf("ReasonCode(%s) = %d, want %d", r, got, want)
		}
	}
}

func TestDecideAuditAnnotations(t *testing.T) {
	env, err := admissioncel.NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	p := &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
		FailurePolicy: ptr.To(admissionregistrationv1.Fail),
		AuditAnnotations: []admissionregistrationv1.AuditAnnotation{
			{Key: "replicas", ValueExpression: "'replicas: ' + string(object.spec.replicas)"},
			{Key: "absent", ValueExpression: "null"},
		},
	}}
	d := Decide(Compile(env, p), map[string]any{admissioncel.VarObject: map[string]any{"spec": map[string]any{"replicas": int64(4)}}})
	if len(d.Failures) != 0 || len(d.AuditAnnotations) != 1 || d.AuditAnnotations["p/replicas"] != "replicas: 4" {
		t.Fatalf("decision %+v", d)
	}
}
