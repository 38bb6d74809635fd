package cluster

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"syscall"
	"testing"
	"time"

	"k8s.io/utils/clock"

	"github.com/skiff-sh/skiff/internal/etcdapi"
)

func TestRetryableJoinError(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"the API server's own retries ran out", &etcdapi.StatusError{Code: http.StatusGatewayTimeout}, true},
		{"etcd failed under it", &etcdapi.StatusError{Code: http.StatusInternalServerError}, true},
		{"no API server yet", syscall.ECONNREFUSED, true},
		{"a member of that name exists", &etcdapi.StatusError{Code: http.StatusConflict}, false},
		{"not allowed", &etcdapi.StatusError{Code: http.StatusForbidden}, false},
		{"our own time ran out", context.DeadlineExceeded, false},
		{"stopping", context.Canceled, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := retryableJoinError(tc.err); got != tc.want {
				t.Fatalf("retryableJoinError(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}

func TestAddLearnerRetryingAsksAgainUntilAFinalAnswer(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	answers := []error{&etcdapi.StatusError{Code: http.StatusGatewayTimeout}, syscall.ECONNREFUSED, nil}
	calls := 0
	add := func(context.Context, etcdapi.AddMemberRequest) (*etcdapi.AddMemberResponse, error) {
		err := answers[calls]
		calls++
		if err != nil {
			return nil, err
		}
		return &etcdapi.AddMemberResponse{InitialCluster: "a=https://127.0.0.2:2380"}, nil
	}
	got, err := addLearnerRetrying(context.Background(), add, etcdapi.AddMemberRequest{Name: "a"}, clock.RealClock{}, time.Millisecond, log)
	if err != nil || got == nil || calls != 3 {
		t.Fatalf("got %v, %v after %d calls; want the third answer", got, err, calls)
	}

	calls, answers = 0, []error{&etcdapi.StatusError{Code: http.StatusConflict}, nil}
	if _, err := addLearnerRetrying(context.Background(), add, etcdapi.AddMemberRequest{Name: "a"}, clock.RealClock{}, time.Millisecond, log); err == nil || calls != 1 {
		t.Fatalf("a final answer: %v after %d calls", err, calls)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	calls, answers = 0, []error{&etcdapi.StatusError{Code: http.StatusGatewayTimeout}, nil}
	if _, err := addLearnerRetrying(ctx, add, etcdapi.AddMemberRequest{Name: "a"}, clock.RealClock{}, time.Millisecond, log); !errors.As(err, new(*etcdapi.StatusError)) || calls != 1 {
		t.Fatalf("an ended context: %v after %d calls", err, calls)
	}
}
