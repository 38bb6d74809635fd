package statusloop

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	testingclock "k8s.io/utils/clock/testing"
)

func TestNeedsRetry(t *testing.T) {
	gr := schema.GroupResource{Resource: "things"}
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	cases := []struct {
		name string
		ctx  context.Context
		err  error
		want bool
	}{
		{"written", context.Background(), nil, false},
		{"conflict", context.Background(), apierrors.NewConflict(gr, "a", errors.New("changed")), false},
		{"gone", context.Background(), apierrors.NewNotFound(gr, "a"), false},
		{"server error", context.Background(), apierrors.NewInternalError(errors.New("boom")), true},
		{"context ended", ended, errors.New("canceled"), false},
	}
	for _, c := range cases {
		if got := NeedsRetry(c.ctx, c.err); got != c.want {
			t.Errorf("%s: NeedsRetry = %v, want %v", c.name, got, c.want)
		}
	}
}

// A pass runs at each kick; one that failed runs again after the retry delay without a kick.
func TestRunRetriesAFailedPass(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	kick := NewKick()
	var passes atomic.Int32
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		Run(ctx, clk, kick, time.Second, func(context.Context) error {
			if passes.Add(1) == 1 {
				return errors.New("write failed")
			}
			return nil
		})
	}()
	kick.Wake()
	kick.Wake() // coalesces with the pending one
	waitFor(t, "the retry timer", clk.HasWaiters)
	clk.Step(time.Second)
	waitFor(t, "the second pass", func() bool { return passes.Load() == 2 })
	cancel()
	<-done
	if clk.HasWaiters() {
		t.Error("a timer is left after a pass that succeeded")
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}
