package validationutil

import (
	"context"
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/skiff-sh/skiff/internal/registry/validationutil/errtest"
)

func TestIntOrPercent(t *testing.T) {
	tests := []struct {
		in       intstr.IntOrString
		value    int
		valid    bool
		over100  bool
		isPctVal bool
	}{
		{intstr.FromInt32(3), 3, true, false, false},
		{intstr.FromInt32(-1), -1, false, false, false},
		{intstr.FromString("25%"), 25, true, false, true},
		{intstr.FromString("101%"), 101, true, true, true},
		{intstr.FromString("abc"), 0, false, false, false},
		{intstr.FromString("5"), 0, false, false, false},
	}
	p := field.NewPath("x")
	for _, tt := range tests {
		if got := IntOrPercentValue(tt.in); got != tt.value {
			t.Errorf("%v: value %d, want %d", tt.in, got, tt.value)
		}
		if errs := NonNegativeIntOrPercent(tt.in, p); (len(errs) == 0) != tt.valid {
			t.Errorf("%v: errors %v, want valid=%v", tt.in, errs, tt.valid)
		}
		if errs := NotMoreThan100Percent(tt.in, p); (len(errs) > 0) != tt.over100 {
			t.Errorf("%v: over-100 errors %v", tt.in, errs)
		}
		if _, ok := PercentValue(tt.in); ok != tt.isPctVal {
			t.Errorf("%v: percent %v", tt.in, ok)
		}
	}
}

func TestEndpointIP(t *testing.T) {
	p := field.NewPath("ip")
	errtest.Check(t, EndpointIP("10.1.2.3", p), nil)
	errtest.Check(t, EndpointIP("2001:db8::1", p), nil)
	errtest.Check(t, EndpointIP("0.0.0.0", p), &errtest.Want{Field: "ip", Type: field.ErrorTypeInvalid, Detail: "may not be unspecified (0.0.0.0)"})
	errtest.Check(t, EndpointIP("::1", p), &errtest.Want{Field: "ip", Type: field.ErrorTypeInvalid, Detail: "loopback"})
	errtest.Check(t, EndpointIP("fe80::1", p), &errtest.Want{Field: "ip", Type: field.ErrorTypeInvalid, Detail: "link-local range"})
	errtest.Check(t, EndpointIP("224.0.0.1", p), &errtest.Want{Field: "ip", Type: field.ErrorTypeInvalid, Detail: "link-local multicast"})
	errtest.Check(t, EndpointIP("x", p), &errtest.Want{Field: "ip", Type: field.ErrorTypeInvalid, Detail: "must be a valid IP address"})
}

func TestPodTemplateFallback(t *testing.T) {
	var none PodTemplate
	tmpl := &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"bad key!": "v"}}}
	none.ApplyDefaults(tmpl) // no hook: nothing happens, no panic
	errs := none.ValidateTemplate(tmpl, field.NewPath("spec", "template"))
	errtest.Check(t, errs, &errtest.Want{Field: "spec.template.labels", Type: field.ErrorTypeInvalid})
	errtest.Check(t, errs, &errtest.Want{Field: "spec.template.spec.containers", Type: field.ErrorTypeRequired})
}

func TestGenericStrategy(t *testing.T) {
	ctx := context.Background()
	s := &Strategy[*appsv1.DaemonSet]{
		APIVersion:  "apps/v1",
		Namespaced:  true,
		ClearStatus: func(d *appsv1.DaemonSet) { d.Status = appsv1.DaemonSetStatus{} },
		KeepStatus:  func(d, old *appsv1.DaemonSet) { d.Status = old.Status },
		SpecEqual:   func(d, old *appsv1.DaemonSet) bool { return d.Spec.MinReadySeconds == old.Spec.MinReadySeconds },
	}
	// Wrong types never panic: preparation is skipped and validation reports an internal error.
	s.PrepareForCreate(ctx, &appsv1.Deployment{})
	s.PrepareForUpdate(ctx, &appsv1.Deployment{}, &appsv1.DaemonSet{})
	errtest.Check(t, s.Validate(ctx, &appsv1.Deployment{}), &errtest.Want{Field: "<nil>", Type: field.ErrorTypeInternal, Detail: "expected *v1.DaemonSet, got *v1.Deployment"})
	errtest.Check(t, s.ValidateUpdate(ctx, &appsv1.DaemonSet{}, &appsv1.Deployment{}), &errtest.Want{Field: "<nil>", Type: field.ErrorTypeInternal})

	reset := s.GetResetFields()["apps/v1"]
	if reset == nil || !reset.Has(fieldpath.MakePathOrDie("status")) {
		t.Fatalf("reset fields = %v", s.GetResetFields())
	}
	st := &StatusStrategy[*appsv1.DaemonSet]{APIVersion: "apps/v1", KeepSpec: func(d, old *appsv1.DaemonSet) { d.Spec = old.Spec }}
	if !st.GetResetFields()["apps/v1"].Has(fieldpath.MakePathOrDie("spec")) {
		t.Fatalf("status reset fields = %v", st.GetResetFields())
	}
	if (&Strategy[*appsv1.ControllerRevision]{APIVersion: "apps/v1"}).GetResetFields() != nil {
		t.Fatal("type without status resets fields")
	}
	old := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "n", ResourceVersion: "1", Labels: map[string]string{"k": "v"}, Generation: 4}}
	upd := old.DeepCopy()
	upd.Labels = nil
	upd.Spec.MinReadySeconds = 9
	upd.Status.NumberReady = 2
	upd.Annotations = map[string]string{"a": "b"}
	st.PrepareForUpdate(ctx, upd, old)
	// The default keeps metadata changes (Kubernetes' status strategies restore only the spec).
	if upd.Labels != nil || upd.Annotations["a"] != "b" || upd.Spec.MinReadySeconds != 0 || upd.Status.NumberReady != 2 || upd.Generation != 4 {
		t.Fatalf("status prepare = %+v", upd)
	}
	for _, tc := range []struct {
		metadata        StatusMetadata
		labels, annotes bool // whether the stored labels / annotations come back
	}{
		{StatusKeepsMetadata, false, false},
		{StatusResetsLabels, true, false},
		{StatusResetsMetadata, true, true},
	} {
		st.Metadata = tc.metadata
		old.Annotations = map[string]string{"a": "old"}
		upd := old.DeepCopy()
		upd.Labels, upd.Annotations = map[string]string{"k": "new"}, map[string]string{"a": "new"}
		st.PrepareForUpdate(ctx, upd, old)
		if got := upd.Labels["k"] == "v"; got != tc.labels {
			t.Errorf("metadata %d: labels %v", tc.metadata, upd.Labels)
		}
		if got := upd.Annotations["a"] == "old"; got != tc.annotes {
			t.Errorf("metadata %d: annotations %v", tc.metadata, upd.Annotations)
		}
	}
}

func TestWorkloadSelector(t *testing.T) {
	sel := field.NewPath("spec", "selector")
	lbl := field.NewPath("spec", "template", "metadata", "labels")
	match := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"a", "b"}}}}
	errtest.Check(t, WorkloadSelector(match, map[string]string{"app": "b"}, "deployment", sel, lbl), nil)
	errtest.Check(t, WorkloadSelector(match, map[string]string{"app": "c"}, "deployment", sel, lbl), &errtest.Want{Field: "spec.template.metadata.labels", Type: field.ErrorTypeInvalid, Detail: SelectorMismatchMsg})
	errtest.Check(t, WorkloadSelector(nil, nil, "deployment", sel, lbl), &errtest.Want{Field: "spec.selector", Type: field.ErrorTypeRequired})
	errtest.Check(t, WorkloadSelector(&metav1.LabelSelector{}, nil, "daemonset", sel, lbl), &errtest.Want{Field: "spec.selector", Type: field.ErrorTypeInvalid, Detail: "empty selector is invalid for daemonset"})
}

func TestPathSegmentName(t *testing.T) {
	tests := []struct {
		name   string
		prefix bool
		want   []string
	}{
		{"system:node", false, nil},
		{".", false, []string{"may not be '.'"}},
		{"..", false, []string{"may not be '..'"}},
		{"..", true, nil},
		{"a/b%c", false, []string{"may not contain '/'", "may not contain '%'"}},
		{"a%", true, []string{"may not contain '%'"}},
	}
	for _, tt := range tests {
		if got := PathSegmentName(tt.name, tt.prefix); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("PathSegmentName(%q, %v) = %q, want %q", tt.name, tt.prefix, got, tt.want)
		}
	}
}
