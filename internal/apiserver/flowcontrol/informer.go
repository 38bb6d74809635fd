package flowcontrol

import (
	"context"
	"fmt"
	"sync"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
)

// ListWatchSource gives an informer its list and watch of one resource; the API server's
// ListWatch serves it from its own store.
type ListWatchSource func(gr schema.GroupResource) (*cache.ListWatch, error)

var (
	flowSchemas    = schema.GroupResource{Group: flowcontrolv1.GroupName, Resource: "flowschemas"}
	priorityLevels = schema.GroupResource{Group: flowcontrolv1.GroupName, Resource: "prioritylevelconfigurations"}
)

// Start follows the FlowSchema and PriorityLevelConfiguration objects until ctx ends: every change
// rebuilds the configuration (Update). Until both caches have synced, requests run unqueued.
func (c *Controller) Start(ctx context.Context, src ListWatchSource) error {
	lwFS, err := src(flowSchemas)
	if err != nil {
		return fmt.Errorf("flow control: %w", err)
	}
	lwPL, err := src(priorityLevels)
	if err != nil {
		return fmt.Errorf("flow control: %w", err)
	}
	fsInf := cache.NewSharedIndexInformer(lwFS, &flowcontrolv1.FlowSchema{}, 0, cache.Indexers{})
	plInf := cache.NewSharedIndexInformer(lwPL, &flowcontrolv1.PriorityLevelConfiguration{}, 0, cache.Indexers{})
	var mu sync.Mutex // one rebuild at a time, so a stale snapshot never lands last
	resync := func() {
		mu.Lock()
		defer mu.Unlock()
		if !fsInf.HasSynced() || !plInf.HasSynced() {
			return
		}
		var levels []*flowcontrolv1.PriorityLevelConfiguration
		for _, o := range plInf.GetStore().List() {
			if pl, ok := o.(*flowcontrolv1.PriorityLevelConfiguration); ok {
				levels = append(levels, pl)
			}
		}
		var schemas []*flowcontrolv1.FlowSchema
		for _, o := range fsInf.GetStore().List() {
			if fs, ok := o.(*flowcontrolv1.FlowSchema); ok {
				schemas = append(schemas, fs)
			}
		}
		c.Update(levels, schemas)
		c.log.Debug("flow control configuration", "flowSchemas", len(schemas), "priorityLevels", len(levels))
	}
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { resync() },
		UpdateFunc: func(any, any) { resync() },
		DeleteFunc: func(any) { resync() },
	}
	for _, inf := range []cache.SharedIndexInformer{fsInf, plInf} {
		if _, err := inf.AddEventHandler(handler); err != nil {
			return fmt.Errorf("flow control: %w", err)
		}
		go inf.RunWithContext(ctx)
	}
	go func() {
		// Both caches synced (handlers may have run before the other cache was complete).
		if cache.WaitForCacheSync(ctx.Done(), fsInf.HasSynced, plInf.HasSynced) {
			resync()
		}
	}()
	return nil
}
