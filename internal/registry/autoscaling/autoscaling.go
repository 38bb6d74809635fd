package autoscaling

import (
	"fmt"
	"k8s.io/apimachinery/pkg/conversion"
	"strings"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/validate/content"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/internal/registry"
	vu "github.com/skiff-sh/skiff/internal/registry/validationutil"
)

// Kubernetes' defaults and bounds for horizontal pod autoscalers.
const (
	defaultCPUUtilization         int32 = 80
	defaultMinReplicas            int32 = 1
	maxStabilizationWindowSeconds int32 = 3600
	maxPolicyPeriodSeconds        int32 = 1800
	scaleUpPodsValue              int32 = 4
	scaleUpPercentValue           int32 = 100
	scaleDownPercentValue         int32 = 100
	defaultPolicyPeriodSeconds    int32 = 15
	defaultScaleDownStabilization int32 = 300
)

var (
	metricSourceTypes = []string{string(autoscalingv2.ContainerResourceMetricSourceType), string(autoscalingv2.ExternalMetricSourceType),
		string(autoscalingv2.ObjectMetricSourceType), string(autoscalingv2.PodsMetricSourceType), string(autoscalingv2.ResourceMetricSourceType)}
	selectPolicies = []string{string(autoscalingv2.DisabledPolicySelect), string(autoscalingv2.MaxChangePolicySelect), string(autoscalingv2.MinChangePolicySelect)}
	policyTypes    = []string{string(autoscalingv2.PercentScalingPolicy), string(autoscalingv2.PodsScalingPolicy)}
)

// Resources returns horizontalpodautoscalers as autoscaling/v2 and autoscaling/v1; both keep their
// objects under the same key (the storage codec stores v1 writes as v2).
func Resources() []*registry.Resource {
	v2 := autoscalingv2.SchemeGroupVersion
	v1 := autoscalingv1.SchemeGroupVersion
	all := []string{"all"}
	return []*registry.Resource{
		{
			GroupVersion: v2, Kind: "HorizontalPodAutoscaler", ListKind: "HorizontalPodAutoscalerList",
			Plural: "horizontalpodautoscalers", Singular: "horizontalpodautoscaler", ShortNames: []string{"hpa"}, Categories: all, Namespaced: true,
			New:     func() runtime.Object { return &autoscalingv2.HorizontalPodAutoscaler{} },
			NewList: func() runtime.Object { return &autoscalingv2.HorizontalPodAutoscalerList{} },
			Strategy: &vu.Strategy[*autoscalingv2.HorizontalPodAutoscaler]{
				Namespaced: true,
				APIVersion: v2.String(),
				ClearStatus: func(h *autoscalingv2.HorizontalPodAutoscaler) {
					h.Status = autoscalingv2.HorizontalPodAutoscalerStatus{}
				},
				KeepStatus: func(h, old *autoscalingv2.HorizontalPodAutoscaler) { h.Status = old.Status },
				ValidateObject: func(h *autoscalingv2.HorizontalPodAutoscaler) field.ErrorList {
					return ValidateSpec(&h.Spec, field.NewPath("spec"))
				},
				UnconditionalUpdate: true,
			},
			Status: &vu.StatusStrategy[*autoscalingv2.HorizontalPodAutoscaler]{
				APIVersion: v2.String(),
				KeepSpec:   func(h, old *autoscalingv2.HorizontalPodAutoscaler) { h.Spec = old.Spec },
				ValidateStatus: func(h, _ *autoscalingv2.HorizontalPodAutoscaler) field.ErrorList {
					return validateStatus(&h.Status, field.NewPath("status"))
				},
			},
		},
		{
			GroupVersion: v1, Kind: "HorizontalPodAutoscaler", ListKind: "HorizontalPodAutoscalerList",
			Plural: "horizontalpodautoscalers", Singular: "horizontalpodautoscaler", ShortNames: []string{"hpa"}, Categories: all, Namespaced: true,
			New:     func() runtime.Object { return &autoscalingv1.HorizontalPodAutoscaler{} },
			NewList: func() runtime.Object { return &autoscalingv1.HorizontalPodAutoscalerList{} },
			Strategy: &vu.Strategy[*autoscalingv1.HorizontalPodAutoscaler]{
				Namespaced: true,
				APIVersion: v1.String(),
				ClearStatus: func(h *autoscalingv1.HorizontalPodAutoscaler) {
					h.Status = autoscalingv1.HorizontalPodAutoscalerStatus{}
				},
				KeepStatus: func(h, old *autoscalingv1.HorizontalPodAutoscaler) { h.Status = old.Status },
				// A v1 object is checked as the v2 object it is stored as, with v2's field paths,
				// as Kubernetes checks its internal version.
				ValidateObject: func(h *autoscalingv1.HorizontalPodAutoscaler) field.ErrorList {
					return ValidateSpec(&ToV2(h).Spec, field.NewPath("spec"))
				},
				UnconditionalUpdate: true,
			},
			Status: &vu.StatusStrategy[*autoscalingv1.HorizontalPodAutoscaler]{
				APIVersion: v1.String(),
				KeepSpec: func(h, old *autoscalingv1.HorizontalPodAutoscaler) {
					h.Spec = old.Spec
					// The v1 spec continues in the annotations: keep the stored ones.
					for _, k := range []string{MetricSpecsAnnotation, BehaviorSpecsAnnotation} {
						if v, ok := old.Annotations[k]; ok {
							if h.Annotations == nil {
								h.Annotations = map[string]string{}
							}
							h.Annotations[k] = v
						} else {
							delete(h.Annotations, k)
						}
					}
				},
				ValidateStatus: func(h, _ *autoscalingv1.HorizontalPodAutoscaler) field.ErrorList {
					return validateStatus(&ToV2(h).Status, field.NewPath("status"))
				},
				// The v1 status continues in annotations (current metrics, conditions): /status
				// keeps metadata changes (the default).
			},
		},
	}
}

// RegisterDefaults registers the autoscaling/v1 and autoscaling/v2 defaulting functions on s.
func RegisterDefaults(s *runtime.Scheme) error {
	if s == nil {
		return fmt.Errorf("register autoscaling defaults: nil scheme")
	}
	s.AddTypeDefaultingFunc(&autoscalingv2.HorizontalPodAutoscaler{}, func(o any) { DefaultV2(o.(*autoscalingv2.HorizontalPodAutoscaler)) })
	s.AddTypeDefaultingFunc(&autoscalingv2.HorizontalPodAutoscalerList{}, func(o any) {
		l := o.(*autoscalingv2.HorizontalPodAutoscalerList)
		for i := range l.Items {
			DefaultV2(&l.Items[i])
		}
	})
	s.AddTypeDefaultingFunc(&autoscalingv1.HorizontalPodAutoscaler{}, func(o any) { DefaultV1(o.(*autoscalingv1.HorizontalPodAutoscaler)) })
	s.AddTypeDefaultingFunc(&autoscalingv1.HorizontalPodAutoscalerList{}, func(o any) {
		l := o.(*autoscalingv1.HorizontalPodAutoscalerList)
		for i := range l.Items {
			DefaultV1(&l.Items[i])
		}
	})
	// The field manager converts the live object to each managed-fields entry's version (an
	// autoscaler written through v1 and then v2); without these the scheme answers "unknown
	// conversion" and the write goes untracked. The conversions are the codec's (ToV2, FromV2).
	if err := s.AddConversionFunc((*autoscalingv1.HorizontalPodAutoscaler)(nil), (*autoscalingv2.HorizontalPodAutoscaler)(nil), func(a, b any, _ conversion.Scope) error {
		*b.(*autoscalingv2.HorizontalPodAutoscaler) = *ToV2(a.(*autoscalingv1.HorizontalPodAutoscaler))
		return nil
	}); err != nil {
		return fmt.Errorf("register autoscaling v1 to v2 conversion: %w", err)
	}
	if err := s.AddConversionFunc((*autoscalingv2.HorizontalPodAutoscaler)(nil), (*autoscalingv1.HorizontalPodAutoscaler)(nil), func(a, b any, _ conversion.Scope) error {
		*b.(*autoscalingv1.HorizontalPodAutoscaler) = *FromV2(a.(*autoscalingv2.HorizontalPodAutoscaler))
		return nil
	}); err != nil {
		return fmt.Errorf("register autoscaling v2 to v1 conversion: %w", err)
	}
	return nil
}

// DefaultV1 sets minReplicas 1; the CPU target stays unset (the controller assumes 80%).
func DefaultV1(h *autoscalingv1.HorizontalPodAutoscaler) {
	if h.Spec.MinReplicas == nil {
		h.Spec.MinReplicas = ptr.To(defaultMinReplicas)
	}
}

// DefaultV2 sets minReplicas 1, an 80% CPU utilization metric when no metric is given, and the
// scale-up and scale-down rules of a behavior that is given.
func DefaultV2(h *autoscalingv2.HorizontalPodAutoscaler) {
	if h.Spec.MinReplicas == nil {
		h.Spec.MinReplicas = ptr.To(defaultMinReplicas)
	}
	if len(h.Spec.Metrics) == 0 {
		h.Spec.Metrics = []autoscalingv2.MetricSpec{{
			Type: autoscalingv2.ResourceMetricSourceType,
			Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{
				Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To(defaultCPUUtilization),
			}},
		}}
	}
	if b := h.Spec.Behavior; b != nil {
		b.ScaleUp = defaultRules(b.ScaleUp, 0, []autoscalingv2.HPAScalingPolicy{
			{Type: autoscalingv2.PodsScalingPolicy, Value: scaleUpPodsValue, PeriodSeconds: defaultPolicyPeriodSeconds},
			{Type: autoscalingv2.PercentScalingPolicy, Value: scaleUpPercentValue, PeriodSeconds: defaultPolicyPeriodSeconds},
		})
		b.ScaleDown = defaultRules(b.ScaleDown, defaultScaleDownStabilization, []autoscalingv2.HPAScalingPolicy{
			{Type: autoscalingv2.PercentScalingPolicy, Value: scaleDownPercentValue, PeriodSeconds: defaultPolicyPeriodSeconds},
		})
	}
}

// defaultRules fills what a rule leaves unset: the stabilization window, selectPolicy Max and the
// policies.
func defaultRules(r *autoscalingv2.HPAScalingRules, window int32, policies []autoscalingv2.HPAScalingPolicy) *autoscalingv2.HPAScalingRules {
	if r == nil {
		r = &autoscalingv2.HPAScalingRules{}
	}
	if r.StabilizationWindowSeconds == nil {
		r.StabilizationWindowSeconds = ptr.To(window)
	}
	if r.SelectPolicy == nil {
		r.SelectPolicy = ptr.To(autoscalingv2.MaxChangePolicySelect)
	}
	if r.Policies == nil {
		r.Policies = policies
	}
	return r
}

// ValidateSpec checks the replica bounds, the target reference, the metrics and the behavior.
func ValidateSpec(spec *autoscalingv2.HorizontalPodAutoscalerSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if spec.MinReplicas != nil && *spec.MinReplicas < 1 {
		errs = append(errs, field.Invalid(fldPath.Child("minReplicas"), *spec.MinReplicas, "must be greater than or equal to 1"))
	}
	if spec.MaxReplicas < 1 {
		errs = append(errs, field.Invalid(fldPath.Child("maxReplicas"), spec.MaxReplicas, "must be greater than 0"))
	}
	if spec.MinReplicas != nil && spec.MaxReplicas < *spec.MinReplicas {
		errs = append(errs, field.Invalid(fldPath.Child("maxReplicas"), spec.MaxReplicas, "must be greater than or equal to `minReplicas`"))
	}
	errs = append(errs, validateReference(spec.ScaleTargetRef, fldPath.Child("scaleTargetRef"))...)
	for i := range spec.Metrics {
		errs = append(errs, validateMetricSpec(&spec.Metrics[i], fldPath.Child("metrics").Index(i))...)
	}
	if b := spec.Behavior; b != nil {
		errs = append(errs, validateRules(b.ScaleUp, fldPath.Child("behavior", "scaleUp"))...)
		errs = append(errs, validateRules(b.ScaleDown, fldPath.Child("behavior", "scaleDown"))...)
	}
	return errs
}

func validateReference(ref autoscalingv2.CrossVersionObjectReference, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, f := range []struct{ name, value string }{{"kind", ref.Kind}, {"name", ref.Name}} {
		if f.value == "" {
			errs = append(errs, field.Required(fldPath.Child(f.name), ""))
			continue
		}
		for _, msg := range content.IsPathSegmentName(f.value) {
			errs = append(errs, field.Invalid(fldPath.Child(f.name), f.value, msg))
		}
	}
	return errs
}

// validateMetricSpec requires a known type and exactly the matching source.
func validateMetricSpec(spec *autoscalingv2.MetricSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if spec.Type == "" {
		errs = append(errs, field.Required(fldPath.Child("type"), "must specify a metric source type"))
	}
	if !sets.New(metricSourceTypes...).Has(string(spec.Type)) {
		errs = append(errs, field.NotSupported(fldPath.Child("type"), spec.Type, metricSourceTypes))
	}
	present := sets.New[string]()
	if spec.Object != nil {
		present.Insert("object")
		errs = append(errs, validateObjectSource(spec.Object, fldPath.Child("object"))...)
	}
	if spec.Pods != nil {
		present.Insert("pods")
		errs = append(errs, validatePodsSource(spec.Pods, fldPath.Child("pods"))...)
	}
	if spec.Resource != nil {
		present.Insert("resource")
		errs = append(errs, validateResourceSource(string(spec.Resource.Name), "", false, spec.Resource.Target, fldPath.Child("resource"))...)
	}
	if spec.ContainerResource != nil {
		present.Insert("containerResource")
		c := spec.ContainerResource
		errs = append(errs, validateResourceSource(string(c.Name), c.Container, true, c.Target, fldPath.Child("containerResource"))...)
	}
	if spec.External != nil {
		present.Insert("external")
		errs = append(errs, validateExternalSource(spec.External, fldPath.Child("external"))...)
	}
	expected := string(spec.Type)
	if expected != "" {
		expected = strings.ToLower(expected[:1]) + expected[1:]
	}
	if expected != "" && !present.Has(expected) {
		errs = append(errs, field.Required(fldPath.Child(expected), "must populate information for the given metric source"))
	}
	present.Delete(expected)
	for _, typ := range sets.List(present) {
		errs = append(errs, field.Forbidden(fldPath.Child(typ), "must populate the given metric source only"))
	}
	return errs
}

func validateMetricIdentifier(id autoscalingv2.MetricIdentifier, fldPath *field.Path) field.ErrorList {
	if id.Name == "" {
		return field.ErrorList{field.Required(fldPath.Child("name"), "must specify a metric name")}
	}
	var errs field.ErrorList
	for _, msg := range content.IsPathSegmentName(id.Name) {
		errs = append(errs, field.Invalid(fldPath.Child("name"), id.Name, msg))
	}
	return errs
}

func validateMetricTarget(t autoscalingv2.MetricTarget, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if t.Type == "" {
		errs = append(errs, field.Required(fldPath.Child("type"), "must specify a metric target type"))
	}
	if t.Type != autoscalingv2.UtilizationMetricType && t.Type != autoscalingv2.ValueMetricType && t.Type != autoscalingv2.AverageValueMetricType {
		errs = append(errs, field.Invalid(fldPath.Child("type"), t.Type, "must be either Utilization, Value, or AverageValue"))
	}
	if t.Value != nil && t.Value.Sign() != 1 {
		errs = append(errs, field.Invalid(fldPath.Child("value"), t.Value.String(), "must be positive"))
	}
	if t.AverageValue != nil && t.AverageValue.Sign() != 1 {
		errs = append(errs, field.Invalid(fldPath.Child("averageValue"), t.AverageValue.String(), "must be positive"))
	}
	if t.AverageUtilization != nil && *t.AverageUtilization < 1 {
		errs = append(errs, field.Invalid(fldPath.Child("averageUtilization"), *t.AverageUtilization, "must be greater than 0"))
	}
	return errs
}

func validateObjectSource(src *autoscalingv2.ObjectMetricSource, fldPath *field.Path) field.ErrorList {
	errs := validateReference(src.DescribedObject, fldPath.Child("describedObject"))
	errs = append(errs, validateMetricIdentifier(src.Metric, fldPath.Child("metric"))...)
	errs = append(errs, validateMetricTarget(src.Target, fldPath.Child("target"))...)
	if src.Target.Value == nil && src.Target.AverageValue == nil {
		errs = append(errs, field.Required(fldPath.Child("target", "averageValue"), "must set either a target value or averageValue"))
	}
	return errs
}

func validatePodsSource(src *autoscalingv2.PodsMetricSource, fldPath *field.Path) field.ErrorList {
	errs := validateMetricIdentifier(src.Metric, fldPath.Child("metric"))
	errs = append(errs, validateMetricTarget(src.Target, fldPath.Child("target"))...)
	if src.Target.AverageValue == nil {
		errs = append(errs, field.Required(fldPath.Child("target", "averageValue"), "must specify a positive target averageValue"))
	}
	return errs
}

// validateResourceSource checks a (container) resource metric: the name, the container where it
// is one, and exactly one of a utilization and an average value.
func validateResourceSource(name, container string, isContainer bool, target autoscalingv2.MetricTarget, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if name == "" {
		errs = append(errs, field.Required(fldPath.Child("name"), "must specify a resource name"))
	}
	if isContainer {
		if container == "" {
			errs = append(errs, field.Required(fldPath.Child("container"), "must specify a container"))
		} else {
			errs = append(errs, vu.DNSLabel(container, fldPath.Child("container"))...)
		}
	}
	errs = append(errs, validateMetricTarget(target, fldPath.Child("target"))...)
	if target.AverageUtilization == nil && target.AverageValue == nil {
		errs = append(errs, field.Required(fldPath.Child("target", "averageUtilization"), "must set either a target raw value or a target utilization"))
	}
	if target.AverageUtilization != nil && target.AverageValue != nil {
		errs = append(errs, field.Forbidden(fldPath.Child("target", "averageValue"), "may not set both a target raw value and a target utilization"))
	}
	return errs
}

func validateExternalSource(src *autoscalingv2.ExternalMetricSource, fldPath *field.Path) field.ErrorList {
	errs := validateMetricIdentifier(src.Metric, fldPath.Child("metric"))
	errs = append(errs, validateMetricTarget(src.Target, fldPath.Child("target"))...)
	if src.Target.Value == nil && src.Target.AverageValue == nil {
		errs = append(errs, field.Required(fldPath.Child("target", "averageValue"), "must set either a target value for metric or a per-pod target"))
	}
	if src.Target.Value != nil && src.Target.AverageValue != nil {
		errs = append(errs, field.Forbidden(fldPath.Child("target", "value"), "may not set both a target value for metric and a per-pod target"))
	}
	return errs
}

func validateRules(r *autoscalingv2.HPAScalingRules, fldPath *field.Path) field.ErrorList {
	if r == nil {
		return nil
	}
	var errs field.ErrorList
	if w := r.StabilizationWindowSeconds; w != nil {
		if *w < 0 {
			errs = append(errs, field.Invalid(fldPath.Child("stabilizationWindowSeconds"), *w, "must be greater than or equal to zero"))
		}
		if *w > maxStabilizationWindowSeconds {
			errs = append(errs, field.Invalid(fldPath.Child("stabilizationWindowSeconds"), *w, fmt.Sprintf("must be less than or equal to %v", maxStabilizationWindowSeconds)))
		}
	}
	if p := r.SelectPolicy; p != nil && !sets.New(selectPolicies...).Has(string(*p)) {
		errs = append(errs, field.NotSupported(fldPath.Child("selectPolicy"), *p, selectPolicies))
	}
	policiesPath := fldPath.Child("policies")
	if len(r.Policies) == 0 {
		errs = append(errs, field.Required(policiesPath, "must specify at least one Policy"))
	}
	for i, p := range r.Policies {
		pp := policiesPath.Index(i)
		if p.Type != autoscalingv2.PodsScalingPolicy && p.Type != autoscalingv2.PercentScalingPolicy {
			errs = append(errs, field.NotSupported(pp.Child("type"), p.Type, policyTypes))
		}
		if p.Value <= 0 {
			errs = append(errs, field.Invalid(pp.Child("value"), p.Value, "must be greater than zero"))
		}
		if p.PeriodSeconds <= 0 {
			errs = append(errs, field.Invalid(pp.Child("periodSeconds"), p.PeriodSeconds, "must be greater than zero"))
		}
		if p.PeriodSeconds > maxPolicyPeriodSeconds {
			errs = append(errs, field.Invalid(pp.Child("periodSeconds"), p.PeriodSeconds, fmt.Sprintf("must be less than or equal to %v", maxPolicyPeriodSeconds)))
		}
	}
	return errs
}

func validateStatus(s *autoscalingv2.HorizontalPodAutoscalerStatus, fldPath *field.Path) field.ErrorList {
	errs := apivalidation.ValidateNonnegativeField(int64(s.CurrentReplicas), fldPath.Child("currentReplicas"))
	return append(errs, apivalidation.ValidateNonnegativeField(int64(s.DesiredReplicas), fldPath.Child("desiredReplicas"))...)
}
