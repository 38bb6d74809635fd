package metrics

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"

	"github.com/skiff-sh/skiff/internal/registry"
)

// msgReadOnly answers any write that gets past the verb check.
const msgReadOnly = "resource metrics are computed from the kubelets and cannot be written"

// AddToScheme registers the metrics.k8s.io/v1beta1 types.
func AddToScheme(s *runtime.Scheme) error { return metricsv1beta1.AddToScheme(s) }

// Resources are metrics.k8s.io/v1beta1 nodes and pods, read-only.
func Resources() []*registry.Resource {
	gv := metricsv1beta1.SchemeGroupVersion
	return []*registry.Resource{
		{
			GroupVersion: gv, Kind: "NodeMetrics", ListKind: "NodeMetricsList", Plural: "nodes",
			New:      func() runtime.Object { return &metricsv1beta1.NodeMetrics{} },
			NewList:  func() runtime.Object { return &metricsv1beta1.NodeMetricsList{} },
			Strategy: readOnly{}, Verbs: []string{"get", "list"},
			Printer: printer(func(obj runtime.Object) (string, corev1.ResourceList, metav1.Duration, error) {
				m, ok := obj.(*metricsv1beta1.NodeMetrics)
				if !ok {
					return "", nil, metav1.Duration{}, fmt.Errorf("print nodes.metrics.k8s.io: got a %T", obj)
				}
				return m.Name, m.Usage, m.Window, nil
			}),
		},
		{
			GroupVersion: gv, Kind: "PodMetrics", ListKind: "PodMetricsList", Plural: "pods",
			Namespaced: true,
			New:        func() runtime.Object { return &metricsv1beta1.PodMetrics{} },
			NewList:    func() runtime.Object { return &metricsv1beta1.PodMetricsList{} },
			Strategy:   readOnly{}, Verbs: []string{"get", "list"},
			Printer: printer(func(obj runtime.Object) (string, corev1.ResourceList, metav1.Duration, error) {
				m, ok := obj.(*metricsv1beta1.PodMetrics)
				if !ok {
					return "", nil, metav1.Duration{}, fmt.Errorf("print pods.metrics.k8s.io: got a %T", obj)
				}
				sum := corev1.ResourceList{}
				for _, c := range m.Containers {
					for name, q := range c.Usage {
						total := sum[name]
						total.Add(q)
						sum[name] = total
					}
				}
				return m.Name, sum, m.Window, nil
			}),
		},
	}
}

// printer gives metrics-server's columns: name, CPU, memory and window.
func printer(usage func(obj runtime.Object) (string, corev1.ResourceList, metav1.Duration, error)) *registry.TablePrinter {
	return &registry.TablePrinter{
		Columns: []metav1.TableColumnDefinition{
			{Name: "Name", Type: "string", Format: "name", Description: "Name of the resource"},
			{Name: "CPU", Type: "string", Description: "CPU usage"},
			{Name: "Memory", Type: "string", Description: "Memory usage"},
			{Name: "Window", Type: "string", Description: "Interval the usage was measured over"},
		},
		Row: func(obj runtime.Object, _ time.Time) ([]interface{}, error) {
			name, use, window, err := usage(obj)
			if err != nil {
				return nil, err
			}
			cpu, mem := use[corev1.ResourceCPU], use[corev1.ResourceMemory]
			return []interface{}{name, quantityString(cpu), quantityString(mem), window.Duration.String()}, nil
		},
	}
}

func quantityString(q resource.Quantity) string { return q.String() }

// readOnly refuses every write: the resources serve only get and list, so this is a second line
// behind the verb check.
type readOnly struct{}

var _ registry.Strategy = readOnly{}

func (readOnly) PrepareForCreate(context.Context, runtime.Object)                 {}
func (readOnly) PrepareForUpdate(context.Context, runtime.Object, runtime.Object) {}
func (readOnly) Validate(context.Context, runtime.Object) field.ErrorList {
	return field.ErrorList{field.Forbidden(nil, msgReadOnly)}
}
func (readOnly) ValidateUpdate(context.Context, runtime.Object, runtime.Object) field.ErrorList {
	return field.ErrorList{field.Forbidden(nil, msgReadOnly)}
}
func (readOnly) AllowCreateOnUpdate() bool      { return false }
func (readOnly) AllowUnconditionalUpdate() bool { return false }
