package local

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
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

// Only is the subset of in for the given resources (nil when none of them is served in process).
// A factory starts every informer registered on it, asked for or not, so each component registers
// only the resources it reads: an unread informer would still hold a map of every object and
// handle every change (the nodes' Leases alone change thousands of times a minute in a large
// cluster).
func (in *Informers) Only(resources ...schema.GroupResource) *Informers {
	if in == nil {
		return nil
	}
	out := &Informers{}
	for _, e := range in.entries {
		for _, gr := range resources {
			if e.lw.res.GroupResource() == gr {
				out.entries = append(out.entries, e)
				break
			}
		}
	}
	if len(out.entries) == 0 {
		return nil
	}
	return out
}

// Register puts an in-process informer for each added resource into factory, before any component
// asks for one: the factory then hands it out for the resource's Go type (as InformerFor keys them).
// An informer the factory already holds is left alone. A nil receiver registers nothing.
func (in *Informers) Register(factory informers.SharedInformerFactory) {
	in.RegisterFiltered(factory, nil)
}

// RegisterFiltered is Register for a factory whose lists and watches tweak narrows, as
// informers.WithTweakListOptions does for a client's (a kubelet's pods by spec.nodeName); a nil
// tweak changes nothing.
func (in *Informers) RegisterFiltered(factory informers.SharedInformerFactory, tweak func(*metav1.ListOptions)) {
	if in == nil {
		return
	}
	for _, e := range in.entries {
		factory.InformerFor(e.example, e.lw.newInformer(e.example, tweak))
	}
}

// newInformer is the factory's constructor for one resource: the generated informers' indexers
// (by namespace), the factory's resync period, and this ListerWatcher in place of the client.
func (lw *ListerWatcher) newInformer(example runtime.Object, tweak func(*metav1.ListOptions)) func(kubernetes.Interface, time.Duration) cache.SharedIndexInformer {
	return func(_ kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		return cache.NewSharedIndexInformerWithOptions(lw.listWatch(tweak), example, cache.SharedIndexInformerOptions{
			ResyncPeriod:      resync,
			Indexers:          cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
			ObjectDescription: fmt.Sprintf("%s (in process)", lw.res.GroupResource()),
		})
	}
}

// listWatch adapts lw to cache.ListWatch, which every informer constructor takes (client-go's
// reflector calls the context variants), with tweak applied to every list's and watch's options.
func (lw *ListerWatcher) listWatch(tweak func(*metav1.ListOptions)) *cache.ListWatch {
	if tweak == nil {
		tweak = func(*metav1.ListOptions) {}
	}
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			tweak(&opts)
			return lw.ListWithContext(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			tweak(&opts)
			return lw.WatchWithContext(ctx, opts)
		},
		DisableChunking: true,
	}
}

// ListWatch is the list and watch of resource gr in process, for an informer built before the
// watch caches existed (nil when gr is not served here; nil receiver: nil).
func (in *Informers) ListWatch(gr schema.GroupResource) *cache.ListWatch {
	if in == nil {
		return nil
	}
	for _, e := range in.entries {
		if e.lw.res.GroupResource() == gr {
			return e.lw.listWatch(nil)
		}
	}
	return nil
}
