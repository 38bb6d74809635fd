package resourcequota

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/skiff-sh/skiff/internal/controller/ctrlutil"
)

// A quota may count any resource the API serves, custom resources included
// (count/widgets.example.com): the counters New builds cover the built-in kinds, and the first
// quota naming another resource starts an informer for it, found by discovery, as upstream's
// controller does for what discovery lists. A resource discovery does not list (yet: a CRD just
// created) is looked up again at most once per rediscoveryInterval.

// rediscoveryInterval bounds how often an unknown count/ name sends the controller to discovery.
const rediscoveryInterval = 5 * time.Second

// errNotSynced asks for the quota's sync to be retried: a resource's informer is filling.
var errNotSynced = errors.New("the counted resource's cache has not synced yet")

// dynamicCounts holds the informers of the resources counted beyond the built-in ones.
type dynamicCounts struct {
	factory  dynamicinformer.DynamicSharedInformerFactory
	discover ctrlutil.DiscoverFunc
	// onDelete starts a recount of the deleted object's namespace.
	onDelete func(any)
	clock    clock.PassiveClock

	mu           sync.Mutex
	ctx          context.Context // Run's, for the informers it starts
	informers    map[schema.GroupResource]cache.SharedIndexInformer
	resources    []ctrlutil.APIResource
	discoveredAt time.Time
}

func newDynamicCounts(client dynamic.Interface, discover ctrlutil.DiscoverFunc, onDelete func(any), clk clock.PassiveClock) *dynamicCounts {
	if client == nil || discover == nil {
		return nil
	}
	return &dynamicCounts{
		factory: dynamicinformer.NewDynamicSharedInformerFactory(client, 0), discover: discover, onDelete: onDelete, clock: clk,
		informers: map[schema.GroupResource]cache.SharedIndexInformer{},
	}
}

// start records the context the informers run under (Run's).
func (d *dynamicCounts) start(ctx context.Context) {
	if d == nil {
		return
	}
	d.mu.Lock()
	d.ctx = ctx
	d.mu.Unlock()
}

// countName parses count/<resource>.<group> (a core resource has no group).
func countName(name corev1.ResourceName) (schema.GroupResource, bool) {
	rest, ok := strings.CutPrefix(string(name), "count/")
	if !ok || rest == "" {
		return schema.GroupResource{}, false
	}
	resource, group, _ := strings.Cut(rest, ".")
	return schema.GroupResource{Group: group, Resource: resource}, true
}

// count counts the objects of name's resource in namespace. known is false for a name that is
// no count/ of a resource discovery lists as namespaced and watchable (it counts nothing, as
// upstream's); errNotSynced while its informer fills.
func (d *dynamicCounts) count(ctx context.Context, name corev1.ResourceName, namespace string) (n int, known bool, err error) {
	gr, ok := countName(name)
	if d == nil || !ok {
		return 0, false, nil
	}
	inf, err := d.informerFor(ctx, gr)
	if inf == nil || err != nil {
		return 0, false, err
	}
	if !inf.HasSynced() {
		return 0, true, errNotSynced
	}
	items, err := inf.GetIndexer().ByIndex(cache.NamespaceIndex, namespace)
	return len(items), true, err
}

func (d *dynamicCounts) informerFor(ctx context.Context, gr schema.GroupResource) (cache.SharedIndexInformer, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if inf, ok := d.informers[gr]; ok {
		return inf, nil
	}
	res, found := d.lookup(gr)
	if !found && d.clock.Since(d.discoveredAt) > rediscoveryInterval {
		resources, err := d.discover(ctx)
		if err != nil && len(resources) == 0 {
			return nil, fmt.Errorf("discover %s: %w", gr, err)
		}
		d.resources, d.discoveredAt = resources, d.clock.Now()
		res, found = d.lookup(gr)
	}
	if !found || !res.Namespaced || !res.Verbs.HasAll("list", "watch") || d.ctx == nil {
		return nil, nil
	}
	inf := d.factory.ForResource(res.GVR).Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: d.onDelete}); err != nil {
		return nil, fmt.Errorf("count %s: %w", gr, err)
	}
	d.informers[gr] = inf
	d.factory.Start(d.ctx.Done())
	return inf, nil
}

func (d *dynamicCounts) lookup(gr schema.GroupResource) (ctrlutil.APIResource, bool) {
	for _, r := range d.resources {
		if r.GVR.GroupResource() == gr {
			return r, true
		}
	}
	return ctrlutil.APIResource{}, false
}

// shutdown stops the informers and waits for them.
func (d *dynamicCounts) shutdown() {
	if d != nil {
		d.factory.Shutdown()
	}
}
