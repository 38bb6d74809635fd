package builtin

import (
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/skiff-sh/skiff/internal/registry/events"
)

// eventsCodec stores events.k8s.io/v1 Events as core/v1 Events, so both APIs see one collection.
type eventsCodec struct{ inner runtime.Codec }

func (c eventsCodec) Encode(obj runtime.Object, w io.Writer) error {
	ev, ok := obj.(*eventsv1.Event)
	if !ok {
		return fmt.Errorf("events codec: cannot encode %T", obj)
	}
	return c.inner.Encode(events.ToCore(ev), w)
}

func (c eventsCodec) Identifier() runtime.Identifier { return "skiff-events-" + c.inner.Identifier() }

func (c eventsCodec) Decode(data []byte, _ *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	core := &corev1.Event{}
	if _, _, err := c.inner.Decode(data, nil, core); err != nil {
		return nil, nil, err
	}
	converted := events.FromCore(core)
	gvk := eventsv1.SchemeGroupVersion.WithKind("Event")
	if target, ok := into.(*eventsv1.Event); ok && target != nil {
		*target = *converted
		return target, &gvk, nil
	}
	return converted, &gvk, nil
}
