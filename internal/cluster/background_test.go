package cluster

import (
	"context"
	"log/slog"
	"testing"
	"time"
)

// TestStopWaitsForTheBackgroundLoops: Stop cancels the node's own loops and returns only once
// they have, so none of them uses the etcd client after Stop closed it.
func TestStopWaitsForTheBackgroundLoops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	n := &Node{cfg: Config{Logger: slog.New(slog.DiscardHandler)}, stopCompaction: cancel}
	finished, release := make(chan struct{}), make(chan struct{})
	n.goBackground(func() {
		<-ctx.Done()
		<-release // a loop finishing its last round after the stop
		close(finished)
	})
	// Without the wait Stop returns at once; a loaded machine may hide that in this window (a
	// false pass, never a false failure).
	time.AfterFunc(200*time.Millisecond, func() { close(release) })
	n.Stop()
	select {
	case <-finished:
	default:
		t.Fatal("Stop returned before a background loop did")
	}
}
