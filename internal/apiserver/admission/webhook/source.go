package webhook

import (
	"context"
	"fmt"
	"sort"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
)

// ListWatchSource gives the informer of one resource its list and watch; the API server's
// ListWatch serves it from its own store.
type ListWatchSource func(gr schema.GroupResource) (*cache.ListWatch, error)

// Informer is one resource's informer cache, started by Run.
type Informer struct {
	informer cache.SharedIndexInformer
}

// NewInformer builds the cache of a resource whose objects are of type example.
func NewInformer(src ListWatchSource, gr schema.GroupResource, example runtime.Object) (*Informer, error) {
	lw, err := src(gr)
	if err != nil {
		return nil, fmt.Errorf("informer for %s: %w", gr, err)
	}
	return &Informer{informer: cache.NewSharedIndexInformer(lw, example, 0, cache.Indexers{})}, nil
}

// Run fills and follows the cache until ctx ends.
func (i *Informer) Run(ctx context.Context) { i.informer.RunWithContext(ctx) }

// waitSynced waits until the first list is in, at most until ctx ends; like Kubernetes, admission
// refuses requests it cannot yet judge rather than let them through unexamined.
func (i *Informer) waitSynced(ctx context.Context) error {
	// Once synced, an informer stays so: the check alone, without cache.WaitFor's goroutine and
	// allocations, which every request through admission paid (1 KiB each, two calls a request).
	if i.informer.HasSynced() {
		return nil
	}
	if !cache.WaitFor(ctx, "", i.informer.HasSyncedChecker()) {
		return fmt.Errorf("not yet ready to handle request")
	}
	return nil
}

// list returns the cached objects sorted by name, the order Kubernetes calls configurations in.
func (i *Informer) list() []runtime.Object {
	items := i.informer.GetStore().List()
	out := make([]runtime.Object, 0, len(items))
	for _, it := range items {
		if o, ok := it.(runtime.Object); ok {
			out = append(out, o)
		}
	}
	sort.Slice(out, func(a, b int) bool { return name(out[a]) < name(out[b]) })
	return out
}

func name(o runtime.Object) string {
	switch t := o.(type) {
	case *admissionregistrationv1.MutatingWebhookConfiguration:
		return t.Name
	case *admissionregistrationv1.ValidatingWebhookConfiguration:
		return t.Name
	case *admissionregistrationv1.ValidatingAdmissionPolicy:
		return t.Name
	case *admissionregistrationv1.ValidatingAdmissionPolicyBinding:
		return t.Name
	}
	return ""
}
