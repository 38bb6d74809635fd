package autoscaling

import (
	"encoding/json"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
)

// The annotations through which autoscaling/v1 carries what only v2 can express.
const (
	MetricSpecsAnnotation        = "autoscaling.alpha.kubernetes.io/metrics"
	MetricStatusesAnnotation     = "autoscaling.alpha.kubernetes.io/current-metrics"
	HorizontalPodAutoscalerConds = "autoscaling.alpha.kubernetes.io/conditions"
	BehaviorSpecsAnnotation      = "autoscaling.alpha.kubernetes.io/behavior"
	roundTripAnnotationCount     = 4
)

// ToV2 converts an autoscaling/v1 object to autoscaling/v2: the CPU target becomes the last
// metric, after any metrics, current metrics, conditions and behavior decoded from the v1
// annotations, which are then dropped.
func ToV2(in *autoscalingv1.HorizontalPodAutoscaler) *autoscalingv2.HorizontalPodAutoscaler {
	out := &autoscalingv2.HorizontalPodAutoscaler{
		TypeMeta:   autoscalingv2SchemeTypeMeta(),
		ObjectMeta: *in.ObjectMeta.DeepCopy(),
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference(in.Spec.ScaleTargetRef),
			MinReplicas:    copyInt32(in.Spec.MinReplicas),
			MaxReplicas:    in.Spec.MaxReplicas,
		},
		Status: autoscalingv2.HorizontalPodAutoscalerStatus{
			ObservedGeneration: copyInt64(in.Status.ObservedGeneration),
			LastScaleTime:      in.Status.LastScaleTime.DeepCopy(),
			CurrentReplicas:    in.Status.CurrentReplicas,
			DesiredReplicas:    in.Status.DesiredReplicas,
		},
	}
	ann := in.Annotations
	var specs []autoscalingv1.MetricSpec
	if decode(ann[MetricSpecsAnnotation], &specs) {
		for _, s := range specs {
			out.Spec.Metrics = append(out.Spec.Metrics, metricSpecToV2(s))
		}
	}
	if in.Spec.TargetCPUUtilizationPercentage != nil {
		out.Spec.Metrics = append(out.Spec.Metrics, autoscalingv2.MetricSpec{
			Type: autoscalingv2.ResourceMetricSourceType,
			Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{
				Type: autoscalingv2.UtilizationMetricType, AverageUtilization: copyInt32(in.Spec.TargetCPUUtilizationPercentage),
			}},
		})
	}
	var statuses []autoscalingv1.MetricStatus
	if decode(ann[MetricStatusesAnnotation], &statuses) {
		for _, s := range statuses {
			out.Status.CurrentMetrics = append(out.Status.CurrentMetrics, metricStatusToV2(s))
		}
	} else if in.Status.CurrentCPUUtilizationPercentage != nil {
		out.Status.CurrentMetrics = []autoscalingv2.MetricStatus{{
			Type: autoscalingv2.ResourceMetricSourceType,
			Resource: &autoscalingv2.ResourceMetricStatus{Name: corev1.ResourceCPU, Current: autoscalingv2.MetricValueStatus{
				AverageUtilization: copyInt32(in.Status.CurrentCPUUtilizationPercentage),
			}},
		}}
	}
	var conditions []autoscalingv1.HorizontalPodAutoscalerCondition
	if decode(ann[HorizontalPodAutoscalerConds], &conditions) {
		for _, c := range conditions {
			out.Status.Conditions = append(out.Status.Conditions, autoscalingv2.HorizontalPodAutoscalerCondition{
				Type: autoscalingv2.HorizontalPodAutoscalerConditionType(c.Type), Status: c.Status,
				LastTransitionTime: c.LastTransitionTime, Reason: c.Reason, Message: c.Message,
			})
		}
	}
	behavior := &autoscalingv2.HorizontalPodAutoscalerBehavior{}
	if decode(ann[BehaviorSpecsAnnotation], behavior) {
		out.Spec.Behavior = behavior
	}
	if len(out.Annotations) > 0 {
		for _, k := range []string{MetricSpecsAnnotation, MetricStatusesAnnotation, HorizontalPodAutoscalerConds, BehaviorSpecsAnnotation} {
			delete(out.Annotations, k)
		}
		if len(out.Annotations) == 0 {
			out.Annotations = nil
		}
	}
	return out
}

// FromV2 converts an autoscaling/v2 object to autoscaling/v1: a cpu utilization metric becomes
// targetCPUUtilizationPercentage, and the other metrics, current metrics, conditions and behavior
// are kept in annotations so that a v1 client's update does not lose them.
func FromV2(in *autoscalingv2.HorizontalPodAutoscaler) *autoscalingv1.HorizontalPodAutoscaler {
	out := &autoscalingv1.HorizontalPodAutoscaler{
		TypeMeta:   autoscalingv1SchemeTypeMeta(),
		ObjectMeta: *in.ObjectMeta.DeepCopy(),
		Spec: autoscalingv1.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv1.CrossVersionObjectReference(in.Spec.ScaleTargetRef),
			MinReplicas:    copyInt32(in.Spec.MinReplicas),
			MaxReplicas:    in.Spec.MaxReplicas,
		},
		Status: autoscalingv1.HorizontalPodAutoscalerStatus{
			ObservedGeneration: copyInt64(in.Status.ObservedGeneration),
			LastScaleTime:      in.Status.LastScaleTime.DeepCopy(),
			CurrentReplicas:    in.Status.CurrentReplicas,
			DesiredReplicas:    in.Status.DesiredReplicas,
		},
	}
	var others []autoscalingv1.MetricSpec
	for _, m := range in.Spec.Metrics {
		if isCPUUtilization(m) && out.Spec.TargetCPUUtilizationPercentage == nil {
			out.Spec.TargetCPUUtilizationPercentage = copyInt32(m.Resource.Target.AverageUtilization)
			continue
		}
		others = append(others, metricSpecFromV2(m))
	}
	var current []autoscalingv1.MetricStatus
	for _, s := range in.Status.CurrentMetrics {
		if s.Type == autoscalingv2.ResourceMetricSourceType && s.Resource != nil && s.Resource.Name == corev1.ResourceCPU && s.Resource.Current.AverageUtilization != nil {
			out.Status.CurrentCPUUtilizationPercentage = copyInt32(s.Resource.Current.AverageUtilization)
		}
		current = append(current, metricStatusFromV2(s))
	}
	var conditions []autoscalingv1.HorizontalPodAutoscalerCondition
	for _, c := range in.Status.Conditions {
		conditions = append(conditions, autoscalingv1.HorizontalPodAutoscalerCondition{
			Type: autoscalingv1.HorizontalPodAutoscalerConditionType(c.Type), Status: c.Status,
			LastTransitionTime: c.LastTransitionTime, Reason: c.Reason, Message: c.Message,
		})
	}
	set := func(key string, v any, present bool) {
		if !present {
			return
		}
		data, err := json.Marshal(v)
		if err != nil {
			return
		}
		if out.Annotations == nil {
			out.Annotations = make(map[string]string, roundTripAnnotationCount)
		}
		out.Annotations[key] = string(data)
	}
	set(MetricSpecsAnnotation, others, len(others) > 0)
	set(MetricStatusesAnnotation, current, len(current) > 0)
	set(HorizontalPodAutoscalerConds, conditions, len(conditions) > 0)
	set(BehaviorSpecsAnnotation, in.Spec.Behavior, in.Spec.Behavior != nil)
	return out
}

func isCPUUtilization(m autoscalingv2.MetricSpec) bool {
	return m.Type == autoscalingv2.ResourceMetricSourceType && m.Resource != nil && m.Resource.Name == corev1.ResourceCPU &&
		m.Resource.Target.AverageUtilization != nil
}

// decode unmarshals an annotation's JSON; an absent or malformed annotation is ignored, as
// Kubernetes ignores it.
func decode(data string, into any) bool {
	if data == "" {
		return false
	}
	return json.Unmarshal([]byte(data), into) == nil
}

func metricSpecToV2(in autoscalingv1.MetricSpec) autoscalingv2.MetricSpec {
	out := autoscalingv2.MetricSpec{Type: autoscalingv2.MetricSourceType(in.Type)}
	switch {
	case in.Object != nil:
		t := autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: qval(in.Object.TargetValue)}
		if in.Object.AverageValue != nil {
			t = autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: qcopy(in.Object.AverageValue)}
		}
		out.Object = &autoscalingv2.ObjectMetricSource{
			DescribedObject: autoscalingv2.CrossVersionObjectReference(in.Object.Target),
			Metric:          autoscalingv2.MetricIdentifier{Name: in.Object.MetricName, Selector: in.Object.Selector.DeepCopy()},
			Target:          t,
		}
	case in.Pods != nil:
		out.Pods = &autoscalingv2.PodsMetricSource{
			Metric: autoscalingv2.MetricIdentifier{Name: in.Pods.MetricName, Selector: in.Pods.Selector.DeepCopy()},
			Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: qval(in.Pods.TargetAverageValue)},
		}
	case in.Resource != nil:
		out.Resource = &autoscalingv2.ResourceMetricSource{Name: in.Resource.Name, Target: resourceTargetToV2(in.Resource.TargetAverageUtilization, qcopy(in.Resource.TargetAverageValue))}
	case in.ContainerResource != nil:
		c := in.ContainerResource
		out.ContainerResource = &autoscalingv2.ContainerResourceMetricSource{Name: c.Name, Container: c.Container, Target: resourceTargetToV2(c.TargetAverageUtilization, qcopy(c.TargetAverageValue))}
	case in.External != nil:
		e := in.External
		t := autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: qcopy(e.TargetValue)}
		if e.TargetAverageValue != nil {
			t = autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: qcopy(e.TargetAverageValue)}
		}
		out.External = &autoscalingv2.ExternalMetricSource{Metric: autoscalingv2.MetricIdentifier{Name: e.MetricName, Selector: e.MetricSelector.DeepCopy()}, Target: t}
	}
	return out
}

func resourceTargetToV2(utilization *int32, averageValue *resource.Quantity) autoscalingv2.MetricTarget {
	if utilization != nil {
		return autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: copyInt32(utilization)}
	}
	return autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: averageValue}
}

func metricStatusToV2(in autoscalingv1.MetricStatus) autoscalingv2.MetricStatus {
	out := autoscalingv2.MetricStatus{Type: autoscalingv2.MetricSourceType(in.Type)}
	switch {
	case in.Object != nil:
		out.Object = &autoscalingv2.ObjectMetricStatus{
			DescribedObject: autoscalingv2.CrossVersionObjectReference(in.Object.Target),
			Metric:          autoscalingv2.MetricIdentifier{Name: in.Object.MetricName, Selector: in.Object.Selector.DeepCopy()},
			Current:         autoscalingv2.MetricValueStatus{Value: qval(in.Object.CurrentValue), AverageValue: qcopy(in.Object.AverageValue)},
		}
	case in.Pods != nil:
		out.Pods = &autoscalingv2.PodsMetricStatus{
			Metric:  autoscalingv2.MetricIdentifier{Name: in.Pods.MetricName, Selector: in.Pods.Selector.DeepCopy()},
			Current: autoscalingv2.MetricValueStatus{AverageValue: qval(in.Pods.CurrentAverageValue)},
		}
	case in.Resource != nil:
		out.Resource = &autoscalingv2.ResourceMetricStatus{Name: in.Resource.Name, Current: autoscalingv2.MetricValueStatus{
			AverageUtilization: copyInt32(in.Resource.CurrentAverageUtilization), AverageValue: qval(in.Resource.CurrentAverageValue),
		}}
	case in.ContainerResource != nil:
		c := in.ContainerResource
		out.ContainerResource = &autoscalingv2.ContainerResourceMetricStatus{Name: c.Name, Container: c.Container, Current: autoscalingv2.MetricValueStatus{
			AverageUtilization: copyInt32(c.CurrentAverageUtilization), AverageValue: qval(c.CurrentAverageValue),
		}}
	case in.External != nil:
		e := in.External
		out.External = &autoscalingv2.ExternalMetricStatus{
			Metric:  autoscalingv2.MetricIdentifier{Name: e.MetricName, Selector: e.MetricSelector.DeepCopy()},
			Current: autoscalingv2.MetricValueStatus{Value: qval(e.CurrentValue), AverageValue: qcopy(e.CurrentAverageValue)},
		}
	}
	return out
}

func metricSpecFromV2(in autoscalingv2.MetricSpec) autoscalingv1.MetricSpec {
	out := autoscalingv1.MetricSpec{Type: autoscalingv1.MetricSourceType(in.Type)}
	switch {
	case in.Object != nil:
		o := in.Object
		out.Object = &autoscalingv1.ObjectMetricSource{
			Target: autoscalingv1.CrossVersionObjectReference(o.DescribedObject), MetricName: o.Metric.Name, Selector: o.Metric.Selector.DeepCopy(),
			TargetValue: qderef(o.Target.Value), AverageValue: qcopy(o.Target.AverageValue),
		}
	case in.Pods != nil:
		out.Pods = &autoscalingv1.PodsMetricSource{MetricName: in.Pods.Metric.Name, Selector: in.Pods.Metric.Selector.DeepCopy(), TargetAverageValue: qderef(in.Pods.Target.AverageValue)}
	case in.Resource != nil:
		out.Resource = &autoscalingv1.ResourceMetricSource{
			Name: in.Resource.Name, TargetAverageUtilization: copyInt32(in.Resource.Target.AverageUtilization), TargetAverageValue: qcopy(in.Resource.Target.AverageValue),
		}
	case in.ContainerResource != nil:
		c := in.ContainerResource
		out.ContainerResource = &autoscalingv1.ContainerResourceMetricSource{
			Name: c.Name, Container: c.Container, TargetAverageUtilization: copyInt32(c.Target.AverageUtilization), TargetAverageValue: qcopy(c.Target.AverageValue),
		}
	case in.External != nil:
		e := in.External
		out.External = &autoscalingv1.ExternalMetricSource{
			MetricName: e.Metric.Name, MetricSelector: e.Metric.Selector.DeepCopy(), TargetValue: qcopy(e.Target.Value), TargetAverageValue: qcopy(e.Target.AverageValue),
		}
	}
	return out
}

func metricStatusFromV2(in autoscalingv2.MetricStatus) autoscalingv1.MetricStatus {
	out := autoscalingv1.MetricStatus{Type: autoscalingv1.MetricSourceType(in.Type)}
	switch {
	case in.Object != nil:
		o := in.Object
		out.Object = &autoscalingv1.ObjectMetricStatus{
			Target: autoscalingv1.CrossVersionObjectReference(o.DescribedObject), MetricName: o.Metric.Name, Selector: o.Metric.Selector.DeepCopy(),
			CurrentValue: qderef(o.Current.Value), AverageValue: qcopy(o.Current.AverageValue),
		}
	case in.Pods != nil:
		out.Pods = &autoscalingv1.PodsMetricStatus{MetricName: in.Pods.Metric.Name, Selector: in.Pods.Metric.Selector.DeepCopy(), CurrentAverageValue: qderef(in.Pods.Current.AverageValue)}
	case in.Resource != nil:
		out.Resource = &autoscalingv1.ResourceMetricStatus{
			Name: in.Resource.Name, CurrentAverageUtilization: copyInt32(in.Resource.Current.AverageUtilization), CurrentAverageValue: qderef(in.Resource.Current.AverageValue),
		}
	case in.ContainerResource != nil:
		c := in.ContainerResource
		out.ContainerResource = &autoscalingv1.ContainerResourceMetricStatus{
			Name: c.Name, Container: c.Container, CurrentAverageUtilization: copyInt32(c.Current.AverageUtilization), CurrentAverageValue: qderef(c.Current.AverageValue),
		}
	case in.External != nil:
		e := in.External
		out.External = &autoscalingv1.ExternalMetricStatus{
			MetricName: e.Metric.Name, MetricSelector: e.Metric.Selector.DeepCopy(), CurrentValue: qderef(e.Current.Value), CurrentAverageValue: qcopy(e.Current.AverageValue),
		}
	}
	return out
}

func copyInt32(p *int32) *int32 {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

func copyInt64(p *int64) *int64 {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// qcopy copies an optional quantity.
func qcopy(p *resource.Quantity) *resource.Quantity {
	if p == nil {
		return nil
	}
	c := p.DeepCopy()
	return &c
}

// qval makes a required quantity optional.
func qval(q resource.Quantity) *resource.Quantity {
	c := q.DeepCopy()
	return &c
}

// qderef makes an optional quantity required (zero when unset).
func qderef(p *resource.Quantity) resource.Quantity {
	if p == nil {
		return resource.Quantity{}
	}
	return p.DeepCopy()
}

func autoscalingv1SchemeTypeMeta() metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: autoscalingv1.SchemeGroupVersion.String(), Kind: "HorizontalPodAutoscaler"}
}

func autoscalingv2SchemeTypeMeta() metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: autoscalingv2.SchemeGroupVersion.String(), Kind: "HorizontalPodAutoscaler"}
}
