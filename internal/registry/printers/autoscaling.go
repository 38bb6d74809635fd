package printers

import (
	"fmt"
	"strings"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/skiff-sh/skiff/internal/registry"
	"github.com/skiff-sh/skiff/internal/registry/autoscaling"
)

// maxListedHPAMetrics is how many targets a row shows before "+ N more...".
const maxListedHPAMetrics = 2

// horizontalPodAutoscalerPrinter prints both served versions alike: a v1 object is printed as the
// v2 object it is stored as.
func horizontalPodAutoscalerPrinter() *registry.TablePrinter {
	spec := autoscalingv2.HorizontalPodAutoscalerSpec{}.SwaggerDoc()
	return &registry.TablePrinter{
		Columns: []metav1.TableColumnDefinition{
			nameColumn(),
			column("Reference", columnTypeString, spec["scaleTargetRef"]),
			column("Targets", columnTypeString, spec["metrics"]),
			column("MinPods", columnTypeString, spec["minReplicas"]),
			column("MaxPods", columnTypeString, spec["maxReplicas"]),
			column("Replicas", columnTypeString, autoscalingv2.HorizontalPodAutoscalerStatus{}.SwaggerDoc()["currentReplicas"]),
			ageColumn(),
		},
		Row: func(obj runtime.Object, now time.Time) ([]interface{}, error) {
			var h *autoscalingv2.HorizontalPodAutoscaler
			switch o := obj.(type) {
			case *autoscalingv2.HorizontalPodAutoscaler:
				h = o
			case *autoscalingv1.HorizontalPodAutoscaler:
				h = autoscaling.ToV2(o)
			default:
				return nil, fmt.Errorf("print horizontalpodautoscalers: got a %T", obj)
			}
			minPods := unsetCell
			if h.Spec.MinReplicas != nil {
				minPods = fmt.Sprintf("%d", *h.Spec.MinReplicas)
			}
			return []interface{}{
				h.Name, h.Spec.ScaleTargetRef.Kind + "/" + h.Spec.ScaleTargetRef.Name, hpaTargets(h.Spec.Metrics, h.Status.CurrentMetrics),
				minPods, int64(h.Spec.MaxReplicas), int64(h.Status.CurrentReplicas), age(h.CreationTimestamp, now),
			}, nil
		},
	}
}

// hpaTargets prints each metric as current/target, the current value read from the status entry
// at the same index ("<unknown>" without one); resource metrics carry their name ("cpu: 40%/80%").
func hpaTargets(specs []autoscalingv2.MetricSpec, statuses []autoscalingv2.MetricStatus) string {
	if len(specs) == 0 {
		return noneCell
	}
	list := make([]string, 0, len(specs))
	for i, spec := range specs {
		var status *autoscalingv2.MetricStatus
		if i < len(statuses) {
			status = &statuses[i]
		}
		list = append(list, hpaTarget(spec, status))
	}
	if len(list) > maxListedHPAMetrics {
		return fmt.Sprintf("%s + %d more...", strings.Join(list[:maxListedHPAMetrics], ", "), len(list)-maxListedHPAMetrics)
	}
	return strings.Join(list, ", ")
}

func hpaTarget(spec autoscalingv2.MetricSpec, status *autoscalingv2.MetricStatus) string {
	current := unknownCell
	switch spec.Type {
	case autoscalingv2.ExternalMetricSourceType:
		if spec.External == nil {
			break
		}
		var cur *autoscalingv2.MetricValueStatus
		if status != nil && status.External != nil {
			cur = &status.External.Current
		}
		return valueTarget(spec.External.Target, cur)
	case autoscalingv2.ObjectMetricSourceType:
		if spec.Object == nil {
			break
		}
		var cur *autoscalingv2.MetricValueStatus
		if status != nil && status.Object != nil {
			cur = &status.Object.Current
		}
		return valueTarget(spec.Object.Target, cur)
	case autoscalingv2.PodsMetricSourceType:
		if spec.Pods == nil {
			break
		}
		if status != nil && status.Pods != nil && status.Pods.Current.AverageValue != nil {
			current = status.Pods.Current.AverageValue.String()
		}
		return current + "/" + quantityCell(spec.Pods.Target.AverageValue)
	case autoscalingv2.ResourceMetricSourceType:
		if spec.Resource == nil {
			break
		}
		var cur *autoscalingv2.MetricValueStatus
		if status != nil && status.Resource != nil {
			cur = &status.Resource.Current
		}
		return string(spec.Resource.Name) + ": " + resourceTarget(spec.Resource.Target, cur)
	case autoscalingv2.ContainerResourceMetricSourceType:
		if spec.ContainerResource == nil {
			break
		}
		var cur *autoscalingv2.MetricValueStatus
		if status != nil && status.ContainerResource != nil {
			cur = &status.ContainerResource.Current
		}
		return string(spec.ContainerResource.Name) + ": " + resourceTarget(spec.ContainerResource.Target, cur)
	}
	return "<unknown type>"
}

// valueTarget prints an object or external metric: by average value ("(avg)") or by value.
func valueTarget(target autoscalingv2.MetricTarget, cur *autoscalingv2.MetricValueStatus) string {
	current := unknownCell
	if target.AverageValue != nil {
		if cur != nil && cur.AverageValue != nil {
			current = cur.AverageValue.String()
		}
		return fmt.Sprintf("%s/%s (avg)", current, target.AverageValue.String())
	}
	if cur != nil && cur.Value != nil {
		current = cur.Value.String()
	}
	return current + "/" + quantityCell(target.Value)
}

// resourceTarget prints a resource metric by average value, or by utilization ("<auto>" when the
// target has none).
func resourceTarget(target autoscalingv2.MetricTarget, cur *autoscalingv2.MetricValueStatus) string {
	current := unknownCell
	if target.AverageValue != nil {
		if cur != nil && cur.AverageValue != nil {
			current = cur.AverageValue.String()
		}
		return current + "/" + target.AverageValue.String()
	}
	if cur != nil && cur.AverageUtilization != nil {
		current = fmt.Sprintf("%d%%", *cur.AverageUtilization)
	}
	want := "<auto>"
	if target.AverageUtilization != nil {
		want = fmt.Sprintf("%d%%", *target.AverageUtilization)
	}
	return current + "/" + want
}

// quantityCell prints an optional quantity ("<unset>" when absent).
func quantityCell(q *resource.Quantity) string {
	if q == nil {
		return unsetCell
	}
	return q.String()
}
