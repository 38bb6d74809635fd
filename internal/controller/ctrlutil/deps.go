package ctrlutil

import (
	"context"
	"log/slog"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
)

// Deps is what every controller is built from. The manager fills it once and
// hands the same informer factory to all controllers so they share caches.
type Deps struct {
	Client    kubernetes.Interface
	Informers informers.SharedInformerFactory
	Clock     clock.WithTicker
	// Recorder writes Events; the manager uses a broadcaster sinking into the
	// API, tests use record.NewFakeRecorder.
	Recorder record.EventRecorder
	// QueueMetrics, when set, receives the work queues' metrics.
	QueueMetrics workqueue.MetricsProvider
	// Observe, when set, is told the outcome of every reconcile.
	Observe ReconcileObserver
	// Logger receives the controller's logs, already tagged with its name; nil discards them.
	Logger *slog.Logger
}

// Log is deps' logger, or one that discards (tests that do not care leave Logger nil).
func (d Deps) Log() *slog.Logger {
	if d.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return d.Logger
}

// ReconcileObserver is told the result of one reconcile of one controller.
type ReconcileObserver func(controller string, err error)

// Runner is a built controller: Run blocks until ctx is done, running the given
// number of workers once the informer caches the controller needs have synced.
type Runner interface {
	Run(ctx context.Context, workers int)
}
