package etcd3_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/skiff-sh/skiff/internal/storage"
	"github.com/skiff-sh/skiff/internal/storage/etcd3"
)

func TestRetryWrite(t *testing.T) {
	timeout := fmt.Errorf("create /k: %w", rpctypes.ErrTimeout)
	for _, tc := range []struct {
		name     string
		err      error
		attempt  int
		timeLeft time.Duration
		pause    time.Duration
		again    bool
	}{
		{"a timeout: its outcome unknown", timeout, 0, time.Minute, 250 * time.Millisecond, true},
		{"a dropped proposal on a leader change", rpctypes.ErrTimeoutDueToLeaderFail, 0, time.Minute, 250 * time.Millisecond, true},
		{"a lost connection", rpctypes.ErrTimeoutDueToConnectionLost, 0, time.Minute, 250 * time.Millisecond, true},
		{"no leader", rpctypes.ErrNoLeader, 0, time.Minute, 250 * time.Millisecond, true},
		{"second resend waits for an election", rpctypes.ErrLeaderChanged, 1, time.Minute, time.Second, true},
		{"two resends at most", timeout, 2, time.Minute, 0, false},
		{"no time left for the pause and an answer", timeout, 0, time.Second, 0, false},
		{"NOSPACE fails again", rpctypes.ErrNoSpace, 0, time.Minute, 0, false},
		{"a request too large fails again", rpctypes.ErrRequestTooLarge, 0, time.Minute, 0, false},
		{"the caller's deadline", context.DeadlineExceeded, 0, time.Minute, 0, false},
		{"any other error", errors.New("permission denied"), 0, time.Minute, 0, false},
	} {
		pause, again := etcd3.RetryWrite(tc.err, tc.attempt, tc.timeLeft)
		if pause != tc.pause || again != tc.again {
			t.Errorf("%s: RetryWrite = %s %v, want %s %v", tc.name, pause, again, tc.pause, tc.again)
		}
	}
}

// lossyKV answers the first lose transactions with etcd's "request timed out", after applying
// them (applied) or without (a proposal dropped while leadership moved).
type lossyKV struct {
	clientv3.KV
	mu      sync.Mutex
	lose    int
	applied bool
	commits int
}

func (l *lossyKV) Txn(ctx context.Context) clientv3.Txn { return &lossyTxn{Txn: l.KV.Txn(ctx), kv: l} }

type lossyTxn struct {
	clientv3.Txn
	kv *lossyKV
}

func (t *lossyTxn) If(cs ...clientv3.Cmp) clientv3.Txn   { t.Txn = t.Txn.If(cs...); return t }
func (t *lossyTxn) Then(ops ...clientv3.Op) clientv3.Txn { t.Txn = t.Txn.Then(ops...); return t }
func (t *lossyTxn) Else(ops ...clientv3.Op) clientv3.Txn { t.Txn = t.Txn.Else(ops...); return t }

func (t *lossyTxn) Commit() (*clientv3.TxnResponse, error) {
	t.kv.mu.Lock()
	t.kv.commits++
	lose := t.kv.lose > 0
	if lose {
		t.kv.lose--
	}
	t.kv.mu.Unlock()
	if !lose {
		return t.Txn.Commit()
	}
	if t.kv.applied {
		if _, err := t.Txn.Commit(); err != nil {
			return nil, err
		}
	}
	return nil, rpctypes.ErrTimeout
}

// TestWritesWhoseAnswerWasLost: a create, an update and a delete whose answer etcd lost (applied
// or not) succeed once, as the caller asked, and nothing is applied twice; a create of a key
// another client holds is still AlreadyExists.
func TestWritesWhoseAnswerWasLost(t *testing.T) {
	for _, applied := range []bool{true, false} {
		t.Run(fmt.Sprintf("applied=%v", applied), func(t *testing.T) {
			client := env.client(t)
			lossy := &lossyKV{KV: client.KV, applied: applied}
			client.KV = lossy
			s := newPodStore(t, client, "json")
			ctx := ctxFor(t)
			key := prefixFor(t) + "default/p"
			lose := func(n int) { lossy.mu.Lock(); lossy.lose, lossy.commits = n, 0; lossy.mu.Unlock() }
			commits := func() int { lossy.mu.Lock(); defer lossy.mu.Unlock(); return lossy.commits }

			lose(1)
			created := &corev1.Pod{}
			if err := s.Create(ctx, key, makePod("p").label("v", "1").obj(), created); err != nil {
				t.Fatalf("create whose answer was lost: %v", err)
			}
			if created.ResourceVersion == "" || commits() != 2 {
				t.Fatalf("created at rv %q in %d commits, want a revision in 2", created.ResourceVersion, commits())
			}
			stored := &corev1.Pod{}
			if err := s.Get(ctx, key, storage.GetOptions{}, stored); err != nil || stored.ResourceVersion != created.ResourceVersion {
				t.Fatalf("stored rv %q, created %q: %v", stored.ResourceVersion, created.ResourceVersion, err)
			}

			lose(1)
			updated := &corev1.Pod{}
			var tries int
			err := s.GuaranteedUpdate(ctx, key, updated, false, nil, func(in runtime.Object) (runtime.Object, error) {
				tries++
				p := in.(*corev1.Pod)
				p.Labels["v"] += "+"
				return p, nil
			})
			if err != nil {
				t.Fatalf("update whose answer was lost: %v", err)
			}
			if updated.Labels["v"] != "1+" || tries != 1 {
				t.Fatalf("label %q after %d tries of the update, want 1+ once", updated.Labels["v"], tries)
			}

			lose(1)
			deleted := &corev1.Pod{}
			if err := s.Delete(ctx, key, deleted, nil, nil); err != nil {
				t.Fatalf("delete whose answer was lost: %v", err)
			}
			if deleted.Labels["v"] != "1+" {
				t.Fatalf("deleted %v", deleted.Labels)
			}
			if err := s.Get(ctx, key, storage.GetOptions{}, &corev1.Pod{}); !storage.IsNotFound(err) {
				t.Fatalf("after the delete: %v", err)
			}

			// Someone else's object at the key: a resent create is still refused.
			if err := s.Create(ctx, key, makePod("p").label("owner", "other").obj(), &corev1.Pod{}); err != nil {
				t.Fatal(err)
			}
			lose(1)
			if err := s.Create(ctx, key, makePod("p").label("owner", "me").obj(), &corev1.Pod{}); !storage.IsExists(err) {
				t.Fatalf("resent create over another's object: %v", err)
			}
		})
	}
}

// TestLostAnswersGiveUp: a write whose answers are lost every time fails with etcd's error after
// the resends, without more.
func TestLostAnswersGiveUp(t *testing.T) {
	client := env.client(t)
	lossy := &lossyKV{KV: client.KV, lose: 100}
	client.KV = lossy
	s := newPodStore(t, client, "json")
	err := s.Create(ctxFor(t), prefixFor(t)+"default/p", makePod("p").obj(), &corev1.Pod{})
	if err == nil || !errors.Is(err, rpctypes.ErrTimeout) {
		t.Fatalf("create with every answer lost: %v", err)
	}
	if lossy.commits != 3 {
		t.Fatalf("%d commits, want the first and two resends", lossy.commits)
	}
}
