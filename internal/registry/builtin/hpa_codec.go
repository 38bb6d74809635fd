package builtin

import (
	"fmt"
	"io"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/skiff-sh/skiff/internal/registry/autoscaling"
)

// hpaV1Codec stores autoscaling/v1 HorizontalPodAutoscalers as autoscaling/v2, the storage version,
// so both APIs see one collection and v2 fields survive v1 round trips (in annotations).
type hpaV1Codec struct{ inner runtime.Codec }

func (c hpaV1Codec) Encode(obj runtime.Object, w io.Writer) error {
	hpa, ok := obj.(*autoscalingv1.HorizontalPodAutoscaler)
	if !ok {
		return fmt.Errorf("autoscaling/v1 codec: cannot encode %T", obj)
	}
	return c.inner.Encode(autoscaling.ToV2(hpa), w)
}

func (c hpaV1Codec) Identifier() runtime.Identifier {
	return "skiff-hpa-v1-" + c.inner.Identifier()
}

func (c hpaV1Codec) Decode(data []byte, _ *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	stored := &autoscalingv2.HorizontalPodAutoscaler{}
	if _, _, err := c.inner.Decode(data, nil, stored); err != nil {
		return nil, nil, err
	}
	converted := autoscaling.FromV2(stored)
	gvk := autoscalingv1.SchemeGroupVersion.WithKind("HorizontalPodAutoscaler")
	if target, ok := into.(*autoscalingv1.HorizontalPodAutoscaler); ok && target != nil {
		*target = *converted
		return target, &gvk, nil
	}
	return converted, &gvk, nil
}
