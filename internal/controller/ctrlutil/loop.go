package ctrlutil

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// Loop is the rate-limited work queue of one controller and the reconcile it
// drives. Event handlers call Enqueue; workers call Reconcile for each key.
type Loop struct {
	Name      string
	Queue     workqueue.TypedRateLimitingInterface[string]
	Reconcile func(ctx context.Context, key string) error
	observe   ReconcileObserver
	log       *slog.Logger
}

// NewLoop builds a loop named after its controller; the name labels the queue
// metrics and the reconcile counts.
func NewLoop(name string, deps Deps, reconcile func(ctx context.Context, key string) error) *Loop {
	cfg := workqueue.TypedRateLimitingQueueConfig[string]{Name: name, MetricsProvider: deps.QueueMetrics, Clock: deps.Clock}
	return &Loop{
		Name:      name,
		Queue:     workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](), cfg),
		Reconcile: reconcile,
		observe:   deps.Observe,
		log:       deps.Log(),
	}
}

// Enqueue adds the namespace/name key of obj (which may be a tombstone).
func (l *Loop) Enqueue(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		utilruntime.HandleError(fmt.Errorf("%s: key for %T: %w", l.Name, obj, err))
		return
	}
	l.Queue.Add(key)
}

// EnqueueAfter adds key after d, for time-based requeues (deadlines, minReadySeconds).
func (l *Loop) EnqueueAfter(key string, d time.Duration) {
	l.Queue.AddAfter(key, d)
}

// Run waits for the informers to sync, then runs workers until ctx is done.
func (l *Loop) Run(ctx context.Context, workers int, synced ...cache.InformerSynced) {
	defer utilruntime.HandleCrash()
	defer l.Queue.ShutDown()
	l.log.Debug("starting controller", "workers", workers)
	defer l.log.Debug("stopped controller")
	if !WaitForCaches(ctx, l.log, synced...) {
		return
	}
	if workers < 1 {
		workers = 1
	}
	// The workers are this call's: it returns only once they have, so a stopped controller
	// leaves nothing running behind it.
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() { wait.UntilWithContext(ctx, l.worker, time.Second) })
	}
	<-ctx.Done()
	l.Queue.ShutDown() // wakes the workers waiting in Get
	wg.Wait()
}

func (l *Loop) worker(ctx context.Context) {
	for l.ProcessNext(ctx) {
	}
}

// ProcessNext handles one key; it returns false once the queue is shut down.
// Exported so tests can drive the loop step by step.
func (l *Loop) ProcessNext(ctx context.Context) bool {
	key, shutdown := l.Queue.Get()
	if shutdown {
		return false
	}
	defer l.Queue.Done(key)
	err := l.Reconcile(ctx, key)
	if l.observe != nil {
		l.observe(l.Name, err)
	}
	if err == nil {
		l.Queue.Forget(key)
		return true
	}
	// A conflict is routine (another writer got there first; the retry reads the new state), so is
	// an informer that does not show the controller's own last writes yet, and so is a reconcile
	// cut short by the controller stopping: all are logged at debug; anything else is worth an
	// operator's attention.
	level := slog.LevelError
	if apierrors.IsConflict(err) || errors.Is(err, ErrStaleSlices) || ctx.Err() != nil {
		level = slog.LevelDebug
	}
	l.log.Log(ctx, level, "reconcile failed, requeuing", "key", key, "err", err)
	l.Queue.AddRateLimited(key)
	return true
}

// WaitForCaches waits until the informers have synced, as cache.WaitForNamedCacheSync does, but a
// wait cut short by a stop is no error (client-go's logs one, and a clean stop should print none).
func WaitForCaches(ctx context.Context, log *slog.Logger, synced ...cache.InformerSynced) bool {
	if cache.WaitForCacheSync(ctx.Done(), synced...) {
		return true
	}
	if ctx.Err() == nil {
		log.Error("informer caches did not sync")
	} else {
		log.Debug("stopped before the informer caches synced")
	}
	return false
}
