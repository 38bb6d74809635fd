package local

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/skiff-sh/skiff/internal/registry"
)

// Informers builds in-process informers for a set of resources and registers them on informer
// factories, so that a component asking its factory for, say, the pod informer gets one fed by the
// watch cache while its code stays the same as against a remote API server.
type Informers struct {
	entries []entry
}

type entry struct {
	example runtime.Object
	lw      *ListerWatcher
}

// Add serves res from source in every factory Register is later called with.
func (in *Informers) Add(res *registry.Resource, source Source) error {
	lw, err := New(res, source)
	if err != nil {
		return err
	}
	in.entries = append(in.entries, entry{example: res.New(), lw: lw})
	return nil
}

// Len is the number of resources served in process.
func (in *Informers) Len() int { return len(in.entries) }

// Register puts an in-process informer for each added resource into factory, before any component
// asks for one: the factory then hands it out for the resource's Go type (as InformerFor keys them).
// An informer the factory already holds is left alone. A nil receiver registers nothing.
func (in *Informers) Register(factory informers.SharedInformerFactory) {
	if in == nil {
		return
	}
	for _, e := range in.entries {
		factory.InformerFor(e.example, e.lw.newInformer(e.example))
	}
}

// newInformer is the factory's constructor for one resource: the generated informers' indexers
// (by namespace), the factory's resync period, and this ListerWatcher in place of the client.
func (lw *ListerWatcher) newInformer(example runtime.Object) func(kubernetes.Interface, time.Duration) cache.SharedIndexInformer {
	return func(_ kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		return cache.NewSharedIndexInformerWithOptions(lw.listWatch(), example, cache.SharedIndexInformerOptions{
			ResyncPeriod:      resync,
			Indexers:          cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
			ObjectDescription: fmt.Sprintf("%s (in process)", lw.res.GroupResource()),
		})
	}
}

// listWatch adapts lw to cache.ListWatch, which every informer constructor takes (client-go's
// reflector calls the context variants).
func (lw *ListerWatcher) listWatch() *cache.ListWatch {
	return &cache.ListWatch{
		ListWithContextFunc:  lw.ListWithContext,
		WatchFuncWithContext: lw.WatchWithContext,
		DisableChunking:      true,
	}
}
