package ctrlutil

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

func TestExpectations(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	e := NewExpectations(clk)
	if !e.Satisfied("ns/rs") {
		t.Fatal("no record must be satisfied")
	}
	e.ExpectCreations("ns/rs", 2)
	if e.Satisfied("ns/rs") {
		t.Fatal("pending creates must not be satisfied")
	}
	e.CreationObserved("ns/rs")
	if e.Satisfied("ns/rs") {
		t.Fatal("one create still pending")
	}
	e.LowerCreations("ns/rs", 1)
	if !e.Satisfied("ns/rs") {
		t.Fatal("all creates observed")
	}

	e.ExpectDeletions("ns/rs", []string{"ns/a", "ns/b"})
	e.DeletionObserved("ns/rs", "ns/a")
	e.DeletionObserved("ns/rs", "ns/a") // seen twice: deletionTimestamp, then gone
	if e.Satisfied("ns/rs") {
		t.Fatal("ns/b still pending")
	}
	clk.Step(ExpectationsTimeout + time.Second)
	if !e.Satisfied("ns/rs") {
		t.Fatal("expired expectations must be satisfied")
	}
	e.ExpectCreations("ns/rs", 1)
	e.Delete("ns/rs")
	if !e.Satisfied("ns/rs") {
		t.Fatal("deleted record must be satisfied")
	}
}

func TestSlowStartBatch(t *testing.T) {
	tests := []struct {
		name          string
		count, failAt int // failAt: the call number (1-based) that fails; 0 = none
		wantSuccesses int
		wantCalls     int32
	}{
		{name: "all succeed", count: 10, wantSuccesses: 10, wantCalls: 10},
		{name: "zero", count: 0, wantSuccesses: 0, wantCalls: 0},
		// batches 1,2,4: a failure in the third batch stops before the fourth.
		{name: "fail in third batch", count: 10, failAt: 5, wantSuccesses: 6, wantCalls: 7},
		{name: "fail first", count: 10, failAt: 1, wantSuccesses: 0, wantCalls: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls atomic.Int32
			got, err := SlowStartBatch(tt.count, 1, func() error {
				if n := calls.Add(1); tt.failAt != 0 && int(n) == tt.failAt {
					return errors.New("boom")
				}
				return nil
			})
			if (err != nil) != (tt.failAt != 0) {
				t.Fatalf("err = %v", err)
			}
			if got != tt.wantSuccesses || calls.Load() != tt.wantCalls {
				t.Fatalf("successes %d calls %d, want %d %d", got, calls.Load(), tt.wantSuccesses, tt.wantCalls)
			}
		})
	}
}
