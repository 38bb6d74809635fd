package ctrlutil_test

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/skiff-sh/skiff/internal/controller/ctrlutil"
)

// TestRunLevelRetriesAFailedSync: pokes that come while nothing runs fold into one sync; a
// failed sync runs again once the retry period passed on the clock, without a poke.
func TestRunLevelRetriesAFailedSync(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	dirty := make(chan struct{}, 1)
	for range 3 {
		ctrlutil.Poke(dirty) // three changes, one pending poke
	}
	var runs atomic.Int32
	done := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		defer close(done)
		_ = ctrlutil.RunLevel(ctx, dirty, clk, 5*time.Second, func() error {
			if runs.Add(1) == 1 {
				return errors.New("refused")
			}
			return nil
		}, slog.New(slog.DiscardHandler))
	}()
	wait := func(want int32) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for runs.Load() < want {
			if time.Now().After(deadline) {
				t.Fatalf("%d syncs, want %d", runs.Load(), want)
			}
			time.Sleep(time.Millisecond)
		}
	}
	wait(1)
	// The retry waits on the clock: step it once the loop is waiting.
	for !clk.HasWaiters() {
		time.Sleep(time.Millisecond)
	}
	clk.Step(5 * time.Second)
	wait(2)
	cancel()
	<-done
	if n := runs.Load(); n != 2 {
		t.Fatalf("%d syncs for three folded pokes and one retry, want 2", n)
	}
}
