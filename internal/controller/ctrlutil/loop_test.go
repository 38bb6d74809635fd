package ctrlutil

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

// TestRunWaitsForItsWorkers: Run returns only after its workers did, so a controller that is
// stopped leaves no reconcile running behind it.
func TestRunWaitsForItsWorkers(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	l := NewLoop("test", Deps{Clock: clocktesting.NewFakeClock(metav1.Now().Time)}, func(ctx context.Context, _ string) error {
		close(entered)
		<-ctx.Done()
		<-release // a reconcile still finishing its work after the stop
		return nil
	})
	l.Queue.Add("ns/name")
	ctx, cancel := context.WithCancel(context.Background())
	runDone := make(chan struct{})
	go func() {
		defer close(runDone)
		l.Run(ctx, 2)
	}()
	<-entered
	cancel()
	// Without the wait, Run returns at once; a loaded machine may hide that in this window (a
	// false pass, never a false failure).
	select {
	case <-runDone:
		t.Fatal("Run returned while a worker was still reconciling")
	case <-time.After(200 * time.Millisecond):
	}
	close(release)
	<-runDone
}
