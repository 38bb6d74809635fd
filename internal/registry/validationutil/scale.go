package validationutil

import (
	"fmt"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/skiff-sh/skiff/internal/registry"
)

// ScaleFuncs reads the parts of a workload a Scale exposes.
type ScaleFuncs[T Object] struct {
	SpecReplicas   func(obj T) int32
	StatusReplicas func(obj T) int32
	Selector       func(obj T) *metav1.LabelSelector
	SetReplicas    func(obj T, replicas int32)
}

// ScaleAccessor builds a registry.ScaleAccessor: the Scale carries the object's name, namespace,
// uid, resourceVersion and creationTimestamp, and status.selector is the label selector in its
// string form, as autoscaling/v1 defines it.
func ScaleAccessor[T Object](f ScaleFuncs[T]) *registry.ScaleAccessor {
	return &registry.ScaleAccessor{
		Get: func(obj runtime.Object) (*autoscalingv1.Scale, error) {
			o, ok := obj.(T)
			if !ok {
				var want T
				return nil, fmt.Errorf("scale: expected %T, got %T", want, obj)
			}
			selector := ""
			if ls := f.Selector(o); ls != nil {
				sel, err := metav1.LabelSelectorAsSelector(ls)
				if err != nil {
					return nil, fmt.Errorf("scale of %s/%s: convert selector: %w", o.GetNamespace(), o.GetName(), err)
				}
				selector = sel.String()
			}
			return &autoscalingv1.Scale{
				TypeMeta: metav1.TypeMeta{APIVersion: "autoscaling/v1", Kind: "Scale"},
				ObjectMeta: metav1.ObjectMeta{
					Name:              o.GetName(),
					Namespace:         o.GetNamespace(),
					UID:               o.GetUID(),
					ResourceVersion:   o.GetResourceVersion(),
					CreationTimestamp: o.GetCreationTimestamp(),
				},
				Spec:   autoscalingv1.ScaleSpec{Replicas: f.SpecReplicas(o)},
				Status: autoscalingv1.ScaleStatus{Replicas: f.StatusReplicas(o), Selector: selector},
			}, nil
		},
		SetReplicas: func(obj runtime.Object, replicas int32) error {
			o, ok := obj.(T)
			if !ok {
				var want T
				return fmt.Errorf("scale: expected %T, got %T", want, obj)
			}
			f.SetReplicas(o, replicas)
			return nil
		},
	}
}
