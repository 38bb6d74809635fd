package flowcontrol

import (
	"context"
	"fmt"
	"sync"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/skiff-sh/skiff/internal/statusloop"
)

// ListWatchSource gives an informer its list and watch of one resource; the API server's
// ListWatch serves it from its own store.
type ListWatchSource func(gr schema.GroupResource) (*cache.ListWatch, error)

var (
	flowSchemas    = schema.GroupResource{Group: flowcontrolv1.GroupName, Resource: "flowschemas"}
	priorityLevels = schema.GroupResource{Group: flowcontrolv1.GroupName, Resource: "prioritylevelconfigurations"}
)

// Start follows the FlowSchema and PriorityLevelConfiguration objects until ctx ends: every change
// rebuilds the configuration (Update) and, with a write, brings each schema's Dangling status
// condition up to date (DanglingStatus; writeStatus). Until both caches have synced, requests run
// unqueued.
func (c *Controller) Start(ctx context.Context, src ListWatchSource, write StatusWriter) error {
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
	snapshot := func() ([]*flowcontrolv1.PriorityLevelConfiguration, []*flowcontrolv1.FlowSchema) {
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
		return levels, schemas
	}
	synced := func() bool { return fsInf.HasSynced() && plInf.HasSynced() }
	// kick asks the status writer for a pass.
	kick := statusloop.NewKick()
	var mu sync.Mutex // one rebuild at a time, so a stale snapshot never lands last
	resync := func() {
		mu.Lock()
		defer mu.Unlock()
		if !synced() {
			return
		}
		levels, schemas := snapshot()
		c.Update(levels, schemas)
		c.log.Debug("flow control configuration", "flowSchemas", len(schemas), "priorityLevels", len(levels))
		kick.Wake()
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
		if cache.WaitFor(ctx, "", fsInf.HasSyncedChecker(), plInf.HasSyncedChecker()) {
			resync()
		}
	}()
	if write != nil {
		go c.writeStatus(ctx, kick, snapshot, write)
	}
	return nil
}

// statusRetry is how long a status write that failed for another reason than a conflict waits
// before the next pass (a conflict or a deleted schema brings its own informer event).
const statusRetry = time.Second

// writeStatus carries out DanglingStatus's plan at each kick until ctx ends.
func (c *Controller) writeStatus(ctx context.Context, kick statusloop.Kick, snapshot func() ([]*flowcontrolv1.PriorityLevelConfiguration, []*flowcontrolv1.FlowSchema), write StatusWriter) {
	statusloop.Run(ctx, c.clock, kick, statusRetry, func(ctx context.Context) error {
		var failed error
		levels, schemas := snapshot()
		for _, fs := range DanglingStatus(levels, schemas, c.clock.Now()) {
			if err := write(ctx, fs); statusloop.NeedsRetry(ctx, err) {
				c.log.Warn("flow schema status not written", "flowSchema", fs.Name, "err", err)
				failed = err
			}
		}
		return failed
	})
}
