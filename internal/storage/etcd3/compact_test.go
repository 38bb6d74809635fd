package etcd3_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/skiff-sh/skiff/internal/apiserver/store"
	"github.com/skiff-sh/skiff/internal/etcd/etcdtest"
	"github.com/skiff-sh/skiff/internal/storage"
	"github.com/skiff-sh/skiff/internal/storage/etcd3"
)

// Compaction affects every key of a member, so these tests run on their own.
func ownClient(t *testing.T) *clientv3.Client {
	return etcdtest.Client(t, etcdtest.StartEmbedded(t, etcdtest.Options{}))
}

func compact(t *testing.T, c *clientv3.Client, rev int64) {
	t.Helper()
	if _, err := c.Compact(ctxFor(t), rev); err != nil {
		t.Fatalf("compact %d: %v", rev, err)
	}
}

func TestCompactionExpiresContinueListAndWatch(t *testing.T) {
	client := ownClient(t)
	s := newPodStore(t, client, storage.EncodingProtobuf)
	ctx := ctxFor(t)
	prefix := "/registry/pods/"
	var first *corev1.Pod
	for i := 0; i < 5; i++ {
		p := mustCreate(t, s, prefix+"default/"+podName(i), makePod(podName(i)).obj())
		if first == nil {
			first = p
		}
	}
	page := &corev1.PodList{}
	if err := s.List(ctx, prefix, storage.ListOptions{Recursive: true, Predicate: storage.Predicate{Limit: 2}}, page); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, s, prefix+"default/"+podName(9), makePod(podName(9)).obj())
	latest, err := s.CurrentRevision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	compact(t, client, latest)

	t.Run("continue token", func(t *testing.T) {
		err := s.List(ctx, prefix, storage.ListOptions{Recursive: true, Predicate: storage.Predicate{Limit: 2, Continue: page.Continue}}, &corev1.PodList{})
		if !storage.IsExpired(err) {
			t.Fatalf("continue after compaction = %v, want Expired", err)
		}
		status := store.ToAPIError(err, podsResource, "")
		var statusErr *apierrors.StatusError
		if !errors.As(status, &statusErr) || statusErr.ErrStatus.Code != 410 || statusErr.ErrStatus.ListMeta.Continue == "" {
			t.Fatalf("api error = %#v, want 410 with an inconsistent continue token", status)
		}
		// The offered token continues after the same key, at the latest revision.
		rest := &corev1.PodList{}
		if err := s.List(ctx, prefix, storage.ListOptions{Recursive: true, Predicate: storage.Predicate{Limit: 10, Continue: statusErr.ErrStatus.ListMeta.Continue}}, rest); err != nil {
			t.Fatalf("inconsistent continue: %v", err)
		}
		want := []string{podName(2), podName(3), podName(4), podName(9)}
		if fmt.Sprint(names(rest.Items)) != fmt.Sprint(want) {
			t.Fatalf("rest = %v, want %v", names(rest.Items), want)
		}
	})

	t.Run("list at compacted revision", func(t *testing.T) {
		err := s.List(ctx, prefix, storage.ListOptions{Recursive: true, ResourceVersion: first.ResourceVersion, ResourceVersionMatch: string(metav1.ResourceVersionMatchExact)}, &corev1.PodList{})
		status := store.ToAPIError(err, podsResource, "")
		if !apierrors.IsResourceExpired(status) || status.Error() != "The resourceVersion for the provided list is too old." {
			t.Fatalf("exact list at compacted revision = %v", status)
		}
	})

	t.Run("watch from compacted revision", func(t *testing.T) {
		w := startWatch(t, s, prefix, storage.ListOptions{Recursive: true, ResourceVersion: first.ResourceVersion})
		ev := nextEvent(t, w)
		st, ok := ev.Object.(*metav1.Status)
		if ev.Type != watch.Error || !ok {
			t.Fatalf("event = %s %T, want ERROR with a Status", ev.Type, ev.Object)
		}
		want := fmt.Sprintf("too old resource version: %s (%d)", first.ResourceVersion, latest)
		if st.Code != 410 || st.Reason != metav1.StatusReasonExpired || st.Message != want {
			t.Fatalf("status = %d %s %q, want 410 Expired %q", st.Code, st.Reason, st.Message, want)
		}
		waitClosed(t, w)
	})

	t.Run("get at compacted revision", func(t *testing.T) {
		err := s.Get(ctx, prefix+"default/"+podName(0), storage.GetOptions{ResourceVersion: first.ResourceVersion}, &corev1.Pod{})
		if !storage.IsExpired(err) {
			t.Fatalf("get at compacted revision = %v, want Expired", err)
		}
	})
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func compactKeyVersion(t *testing.T, c *clientv3.Client) int64 {
	resp, err := c.Get(ctxFor(t), etcd3.CompactKey)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) == 0 {
		return 0
	}
	return resp.Kvs[0].Version
}

func isCompacted(t *testing.T, c *clientv3.Client, rev int64) bool {
	_, err := c.Get(ctxFor(t), "/any", clientv3.WithRev(rev))
	if err != nil && !errors.Is(err, rpctypes.ErrCompacted) {
		t.Fatalf("get at %d: %v", rev, err)
	}
	return err != nil
}

func TestCompactorCompactsOneIntervalBehind(t *testing.T) {
	member := etcdtest.StartEmbedded(t, etcdtest.Options{})
	client := etcdtest.Client(t, member)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	const interval = time.Minute
	// Two API servers share the etcd: only one may compact per interval.
	a := etcd3.NewCompactor(client, interval, clk, nil)
	second := etcd3.NewCompactor(etcdtest.Client(t, member), interval, clk, nil)
	go a.Run(ctx)
	go second.Run(ctx)

	put := func(v string) int64 {
		resp, err := client.Put(ctxFor(t), "/k", v)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Header.Revision
	}
	tick := func(wantVersion int64) {
		waitFor(t, "both compactors to wait on the clock", func() bool { return clk.Waiters() == 2 })
		clk.Step(interval)
		waitFor(t, "compact key version "+strconv.FormatInt(wantVersion, 10), func() bool {
			return compactKeyVersion(t, client) == wantVersion
		})
	}

	r1 := put("1")
	tick(1) // first round: remembers the revision, compacts nothing
	if isCompacted(t, client, r1) {
		t.Fatalf("revision %d compacted in the first round", r1)
	}
	r2 := put("2")
	tick(2) // compacts to what the first round saw (>= r1, < r2)
	waitFor(t, "compaction of the first round's revision", func() bool { return isCompacted(t, client, r1-1) })
	if isCompacted(t, client, r2) {
		t.Fatalf("revision %d written after the first round was compacted", r2)
	}
	tick(3)
	waitFor(t, "compaction of the second round's revision", func() bool { return isCompacted(t, client, r2-1) })
	if compactKeyVersion(t, client) != 3 {
		t.Fatalf("compact key version = %d after 3 intervals: some interval compacted twice", compactKeyVersion(t, client))
	}
}
