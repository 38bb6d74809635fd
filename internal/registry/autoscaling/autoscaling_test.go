package autoscaling

import (
	"context"
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/internal/registry/validationutil/errtest"
)

func hpaV2(mods ...func(*autoscalingv2.HorizontalPodAutoscaler)) *autoscalingv2.HorizontalPodAutoscaler {
	h := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			MinReplicas:    ptr.To[int32](2), MaxReplicas: 10,
			Metrics: []autoscalingv2.MetricSpec{cpu(70)},
		},
	}
	for _, m := range mods {
		m(h)
	}
	return h
}

func cpu(pct int32) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
		Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To(pct)},
	}}
}

func podsMetric() autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{
		Metric: autoscalingv2.MetricIdentifier{Name: "requests_per_second"},
		Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: ptr.To(resource.MustParse("100"))},
	}}
}

func TestValidateHPA(t *testing.T) {
	tests := []struct {
		name string
		obj  *autoscalingv2.HorizontalPodAutoscaler
		want *errtest.Want
	}{
		{"valid", hpaV2(), nil},
		{"pods and external", hpaV2(func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.Metrics = append(h.Spec.Metrics, podsMetric(), autoscalingv2.MetricSpec{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
				Metric: autoscalingv2.MetricIdentifier{Name: "queue_depth"}, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: ptr.To(resource.MustParse("30"))},
			}})
		}), nil},
		{"zero min", hpaV2(func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Spec.MinReplicas = ptr.To[int32](0) }), &errtest.Want{Field: "spec.minReplicas", Type: field.ErrorTypeInvalid, Detail: "must be greater than or equal to 1"}},
		{"zero max", hpaV2(func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Spec.MaxReplicas = 0 }), &errtest.Want{Field: "spec.maxReplicas", Type: field.ErrorTypeInvalid, Detail: "must be greater than 0"}},
		{"max below min", hpaV2(func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Spec.MaxReplicas = 1 }), &errtest.Want{Field: "spec.maxReplicas", Type: field.ErrorTypeInvalid, Detail: "must be greater than or equal to `minReplicas`"}},
		{"no target kind", hpaV2(func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Spec.ScaleTargetRef.Kind = "" }), &errtest.Want{Field: "spec.scaleTargetRef.kind", Type: field.ErrorTypeRequired}},
		{"no metric type", hpaV2(func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Spec.Metrics[0].Type = "" }), &errtest.Want{Field: "spec.metrics[0].type", Type: field.ErrorTypeRequired, Detail: "must specify a metric source type"}},
		{"wrong source", hpaV2(func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.Metrics[0].Type = autoscalingv2.PodsMetricSourceType
		}), &errtest.Want{Field: "spec.metrics[0].pods", Type: field.ErrorTypeRequired, Detail: "must populate information for the given metric source"}},
		{"two sources", hpaV2(func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Spec.Metrics[0].Pods = podsMetric().Pods }), &errtest.Want{Field: "spec.metrics[0].pods", Type: field.ErrorTypeForbidden, Detail: "must populate the given metric source only"}},
		{"resource without target", hpaV2(func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.Metrics[0].Resource.Target = autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType}
		}), &errtest.Want{Field: "spec.metrics[0].resource.target.averageUtilization", Type: field.ErrorTypeRequired, Detail: "must set either a target raw value or a target utilization"}},
		{"zero utilization", hpaV2(func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Spec.Metrics[0] = cpu(0) }), &errtest.Want{Field: "spec.metrics[0].resource.target.averageUtilization", Type: field.ErrorTypeInvalid, Detail: "must be greater than 0"}},
		{"bad target type", hpaV2(func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Spec.Metrics[0].Resource.Target.Type = "Percent" }), &errtest.Want{Field: "spec.metrics[0].resource.target.type", Type: field.ErrorTypeInvalid, Detail: "must be either Utilization, Value, or AverageValue"}},
		{"pods without average", hpaV2(func(h *autoscalingv2.HorizontalPodAutoscaler) {
			m := podsMetric()
			m.Pods.Target = autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: ptr.To(resource.MustParse("1"))}
			h.Spec.Metrics = []autoscalingv2.MetricSpec{m}
		}), &errtest.Want{Field: "spec.metrics[0].pods.target.averageValue", Type: field.ErrorTypeRequired, Detail: "must specify a positive target averageValue"}},
		{"behavior without policies", hpaV2(func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{Policies: []autoscalingv2.HPAScalingPolicy{}}}
		}), &errtest.Want{Field: "spec.behavior.scaleDown.policies", Type: field.ErrorTypeRequired, Detail: "must specify at least one Policy"}},
		{"long window", hpaV2(func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: &autoscalingv2.HPAScalingRules{
				StabilizationWindowSeconds: ptr.To[int32](4000),
				Policies:                   []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: 1, PeriodSeconds: 2000}},
			}}
		}), &errtest.Want{Field: "spec.behavior.scaleUp.stabilizationWindowSeconds", Type: field.ErrorTypeInvalid, Detail: "must be less than or equal to 3600"}},
		{"long period", hpaV2(func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: &autoscalingv2.HPAScalingRules{
				Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: 1, PeriodSeconds: 2000}},
			}}
		}), &errtest.Want{Field: "spec.behavior.scaleUp.policies[0].periodSeconds", Type: field.ErrorTypeInvalid, Detail: "must be less than or equal to 1800"}},
	}
	r := Resources()[0]
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errtest.Check(t, r.Strategy.Validate(context.Background(), tt.obj), tt.want)
		})
	}
	// v1 is checked through its v2 form.
	v1 := Resources()[1]
	bad := FromV2(hpaV2(func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Spec.Metrics = []autoscalingv2.MetricSpec{cpu(0)} }))
	errtest.Check(t, v1.Strategy.Validate(context.Background(), bad), &errtest.Want{Field: "spec.metrics[0].resource.target.averageUtilization", Type: field.ErrorTypeInvalid})
}

func TestDefaults(t *testing.T) {
	s := runtime.NewScheme()
	if err := RegisterDefaults(s); err != nil {
		t.Fatal(err)
	}
	h := &autoscalingv2.HorizontalPodAutoscaler{Spec: autoscalingv2.HorizontalPodAutoscalerSpec{Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{}}}
	s.Default(h)
	if *h.Spec.MinReplicas != 1 || len(h.Spec.Metrics) != 1 || *h.Spec.Metrics[0].Resource.Target.AverageUtilization != 80 {
		t.Fatalf("spec defaults = %+v", h.Spec)
	}
	up, down := h.Spec.Behavior.ScaleUp, h.Spec.Behavior.ScaleDown
	if *up.StabilizationWindowSeconds != 0 || len(up.Policies) != 2 || *down.StabilizationWindowSeconds != 300 || len(down.Policies) != 1 || *down.SelectPolicy != autoscalingv2.MaxChangePolicySelect {
		t.Fatalf("behavior defaults = %+v %+v", up, down)
	}
	v1 := &autoscalingv1.HorizontalPodAutoscaler{}
	s.Default(v1)
	if *v1.Spec.MinReplicas != 1 || v1.Spec.TargetCPUUtilizationPercentage != nil {
		t.Fatalf("v1 defaults = %+v", v1.Spec)
	}
}

func TestConversion(t *testing.T) {
	full := hpaV2(func(h *autoscalingv2.HorizontalPodAutoscaler) {
		h.Annotations = map[string]string{"team": "a"}
		h.Spec.Metrics = []autoscalingv2.MetricSpec{podsMetric(), cpu(70)}
		h.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{
			StabilizationWindowSeconds: ptr.To[int32](60),
			Policies:                   []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PercentScalingPolicy, Value: 10, PeriodSeconds: 60}},
		}}
		h.Status = autoscalingv2.HorizontalPodAutoscalerStatus{
			CurrentReplicas: 3, DesiredReplicas: 4,
			CurrentMetrics: []autoscalingv2.MetricStatus{
				{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricStatus{Metric: autoscalingv2.MetricIdentifier{Name: "requests_per_second"}, Current: autoscalingv2.MetricValueStatus{AverageValue: ptr.To(resource.MustParse("120"))}}},
				{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricStatus{Name: corev1.ResourceCPU, Current: autoscalingv2.MetricValueStatus{AverageUtilization: ptr.To[int32](85), AverageValue: ptr.To(resource.MustParse("850m"))}}},
			},
			Conditions: []autoscalingv2.HorizontalPodAutoscalerCondition{{Type: autoscalingv2.AbleToScale, Status: corev1.ConditionTrue, Reason: "ReadyForNewScale"}},
		}
	})
	v1 := FromV2(full)
	if *v1.Spec.TargetCPUUtilizationPercentage != 70 || *v1.Status.CurrentCPUUtilizationPercentage != 85 {
		t.Fatalf("v1 = %+v", v1)
	}
	for _, k := range []string{MetricSpecsAnnotation, MetricStatusesAnnotation, HorizontalPodAutoscalerConds, BehaviorSpecsAnnotation} {
		if v1.Annotations[k] == "" {
			t.Errorf("v1 lacks annotation %s", k)
		}
	}
	back := ToV2(v1)
	// The cpu metric comes back last, after the ones carried in the annotation.
	if len(back.Spec.Metrics) != 2 || back.Spec.Metrics[1].Resource == nil || !apiequality.Semantic.DeepEqual(back.Spec.Metrics[0], full.Spec.Metrics[0]) {
		t.Fatalf("metrics = %+v", back.Spec.Metrics)
	}
	if !apiequality.Semantic.DeepEqual(back.Spec.Behavior, full.Spec.Behavior) || !apiequality.Semantic.DeepEqual(back.Status.CurrentMetrics, full.Status.CurrentMetrics) ||
		!apiequality.Semantic.DeepEqual(back.Status.Conditions, full.Status.Conditions) {
		t.Fatalf("round trip lost status or behavior: %+v", back)
	}
	if len(back.Annotations) != 1 || back.Annotations["team"] != "a" {
		t.Fatalf("annotations = %v", back.Annotations)
	}

	// A plain v1 object: the CPU target is the one metric.
	plain := &autoscalingv1.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: autoscalingv1.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv1.CrossVersionObjectReference{Kind: "Deployment", Name: "web"},
			MaxReplicas:    5, TargetCPUUtilizationPercentage: ptr.To[int32](50),
		},
		Status: autoscalingv1.HorizontalPodAutoscalerStatus{CurrentCPUUtilizationPercentage: ptr.To[int32](20)},
	}
	v2 := ToV2(plain)
	if len(v2.Spec.Metrics) != 1 || !apiequality.Semantic.DeepEqual(v2.Spec.Metrics[0], cpu(50)) || *v2.Status.CurrentMetrics[0].Resource.Current.AverageUtilization != 20 {
		t.Fatalf("v2 = %+v", v2)
	}
	if again := FromV2(v2); !apiequality.Semantic.DeepEqual(again.Spec, plain.Spec) || again.Annotations[MetricSpecsAnnotation] != "" {
		t.Fatalf("plain round trip = %+v", again)
	}
}
