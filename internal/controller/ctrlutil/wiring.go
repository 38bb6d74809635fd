package ctrlutil

import (
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// Wiring registers a controller's event handlers on the informers it watches and collects their
// HasSynced, so the caches Run waits for are exactly the ones the handlers were put on: a
// controller that reads an informer's lister must Watch it, with nil handlers when none of its
// events should enqueue. It is used once, in the controller's New.
type Wiring struct {
	name   string
	synced []cache.InformerSynced
	errs   []error
}

// NewWiring starts the wiring of the named controller; the name goes into registration errors.
func NewWiring(name string) *Wiring { return &Wiring{name: name} }

// Watch adds inf to the caches to wait for and, when h is not nil, registers h on it.
func (w *Wiring) Watch(inf cache.SharedIndexInformer, h cache.ResourceEventHandler) *Wiring {
	w.synced = append(w.synced, inf.HasSynced)
	if h == nil {
		return w
	}
	if _, err := inf.AddEventHandler(h); err != nil {
		w.errs = append(w.errs, err)
	}
	return w
}

// Done returns the caches to wait for, or the registrations that failed.
func (w *Wiring) Done() ([]cache.InformerSynced, error) {
	if err := errors.Join(w.errs...); err != nil {
		return nil, fmt.Errorf("%s controller handler: %w", w.name, err)
	}
	return w.synced, nil
}

// Events says which of an informer's notifications a handler acts on.
type Events int

// The notifications of an informer; combine them with |.
const (
	OnAdd Events = 1 << iota
	OnUpdate
	OnDelete
	OnAll = OnAdd | OnUpdate | OnDelete
)

// On calls fn with the object of each notification in events: the new object of an update, the
// object or its tombstone of a delete (fn unwraps what it needs, as Loop.Enqueue does).
func On(events Events, fn func(obj any)) cache.ResourceEventHandlerFuncs {
	var h cache.ResourceEventHandlerFuncs
	if events&OnAdd != 0 {
		h.AddFunc = fn
	}
	if events&OnUpdate != 0 {
		h.UpdateFunc = func(_, obj any) { fn(obj) }
	}
	if events&OnDelete != 0 {
		h.DeleteFunc = fn
	}
	return h
}

// Unwrap returns obj as a T, looking inside the tombstone a delete carries when the informer missed
// the object's final state.
func Unwrap[T any](obj any) (T, bool) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	v, ok := obj.(T)
	return v, ok
}

// OwnerKey is the namespace/name key of the object's controller when that controller is of kind
// (a pod's DaemonSet, a Job's CronJob); obj may be a tombstone. The owner is matched by kind alone,
// as the controllers' handlers did: the sync reads the owner and checks its UID when it claims.
func OwnerKey(obj any, kind string) (string, metav1.Object, bool) {
	o, ok := Unwrap[metav1.Object](obj)
	if !ok {
		return "", nil, false
	}
	ref := metav1.GetControllerOfNoCopy(o)
	if ref == nil || ref.Kind != kind {
		return "", nil, false
	}
	return o.GetNamespace() + "/" + ref.Name, o, true
}

// EnqueueOwner queues the controller of kind of each object the handler sees.
func (l *Loop) EnqueueOwner(kind string) func(obj any) {
	return func(obj any) {
		if key, _, ok := OwnerKey(obj, kind); ok {
			l.Queue.Add(key)
		}
	}
}

// PodServiceHandlers queue the Services that select a pod: on add and delete those matching its
// labels, on update those matching its old labels and those matching its new ones, so a Service
// the pod leaves is synced as well as the one it joins. The endpoint and EndpointSlice
// controllers share it.
func (l *Loop) PodServiceHandlers(services corelisters.ServiceLister) cache.ResourceEventHandlerFuncs {
	enqueue := func(objs ...any) {
		for _, obj := range objs {
			if pod, ok := Unwrap[*corev1.Pod](obj); ok {
				for _, key := range ServiceKeysForPod(services, pod) {
					l.Queue.Add(key)
				}
			}
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { enqueue(obj) },
		UpdateFunc: func(old, obj any) { enqueue(old, obj) },
		DeleteFunc: func(obj any) { enqueue(obj) },
	}
}

// SliceServiceKey is the namespace/name of the Service an EndpointSlice managed by managedBy
// belongs to; obj may be a tombstone. Slices of other managers, or without a service-name label,
// have none: a controller puts back only what it wrote.
func SliceServiceKey(obj any, managedBy string) (string, bool) {
	s, ok := Unwrap[*discoveryv1.EndpointSlice](obj)
	if !ok || s.Labels[discoveryv1.LabelManagedBy] != managedBy {
		return "", false
	}
	svc := s.Labels[discoveryv1.LabelServiceName]
	if svc == "" {
		return "", false
	}
	return s.Namespace + "/" + svc, true
}

// EnqueueSliceService queues the Service of each EndpointSlice managed by managedBy the handler sees.
func (l *Loop) EnqueueSliceService(managedBy string) func(obj any) {
	return func(obj any) {
		if key, ok := SliceServiceKey(obj, managedBy); ok {
			l.Queue.Add(key)
		}
	}
}
