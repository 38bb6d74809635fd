package cluster

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// recorder notes the order in which roles return.
type recorder struct {
	mu       sync.Mutex
	returned []string
}

func (r *recorder) note(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.returned = append(r.returned, name)
}

func (r *recorder) names() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.returned...)
}

// untilDone is a role that runs until its context ends.
func untilDone(rec *recorder, name string) role {
	return role{name: name, run: func(ctx context.Context) error {
		<-ctx.Done()
		rec.note(name)
		return ctx.Err()
	}}
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func TestRunRolesFirstFailureStopsTheOthers(t *testing.T) {
	rec := &recorder{}
	boom := errors.New("kubelet exploded")
	roles := []role{
		untilDone(rec, "api server"),
		untilDone(rec, "scheduler"),
		{name: "worker", run: func(context.Context) error { rec.note("worker"); return boom }},
	}
	err := runRoles(context.Background(), roles, time.Minute, quiet)
	if !errors.Is(err, boom) || !strings.HasPrefix(err.Error(), "worker: ") {
		t.Fatalf("err = %v, want the worker's failure named", err)
	}
	if got := rec.names(); len(got) != 3 {
		t.Fatalf("roles returned %v, want all three joined before runRoles returns", got)
	}
}

func TestRunRolesStopsCleanlyOnCancel(t *testing.T) {
	rec := &recorder{}
	ctx, cancel := context.WithCancel(context.Background())
	errCh := make(chan error, 1)
	go func() {
		errCh <- runRoles(ctx, []role{untilDone(rec, "api server"), untilDone(rec, "controller manager")}, time.Minute, quiet)
	}()
	cancel()
	if err := <-errCh; err != nil {
		t.Fatalf("a clean stop returned %v", err)
	}
	if got := rec.names(); len(got) != 2 {
		t.Fatalf("roles returned %v, want both joined", got)
	}
}

func TestRunRolesNamesAHungRole(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	hung := role{name: "controller manager", run: func(context.Context) error { <-release; return nil }}
	err := runRoles(ctx, []role{untilDone(&recorder{}, "api server"), hung}, time.Millisecond, quiet)
	if err == nil || !strings.Contains(err.Error(), "controller manager") {
		t.Fatalf("err = %v, want the hung role named", err)
	}
}
