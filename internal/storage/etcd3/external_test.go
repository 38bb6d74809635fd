package etcd3_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/skiff-sh/skiff/internal/etcd"
	"github.com/skiff-sh/skiff/internal/etcd/etcdtest"
	"github.com/skiff-sh/skiff/internal/storage"
)

// TestExternalEtcd runs the store against Debian's etcd-server (hack/install-etcd.sh), as
// --etcd-servers does.
func TestExternalEtcd(t *testing.T) {
	url := etcdtest.StartExternal(t)
	client, err := etcd.NewClient([]string{url}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	s := newPodStore(t, client, storage.EncodingProtobuf)
	ctx := ctxFor(t)
	prefix := "/registry/pods/"
	if err := s.Ready(ctx); err != nil {
		t.Fatalf("ready: %v", err)
	}

	created := mustCreate(t, s, prefix+"default/a", makePod("a").obj())
	w := startWatch(t, s, prefix, storage.ListOptions{Recursive: true, ResourceVersion: created.ResourceVersion})
	if err := s.Create(ctx, prefix+"default/a", makePod("a").obj(), &corev1.Pod{}); !storage.IsExists(err) {
		t.Fatalf("duplicate create = %v", err)
	}
	updated := &corev1.Pod{}
	if err := s.GuaranteedUpdate(ctx, prefix+"default/a", updated, false,
		&storage.Preconditions{ResourceVersion: &created.ResourceVersion}, setNode("n1")); err != nil {
		t.Fatal(err)
	}
	if err := s.GuaranteedUpdate(ctx, prefix+"default/a", &corev1.Pod{}, false,
		&storage.Preconditions{ResourceVersion: &created.ResourceVersion}, setNode("n2")); !storage.IsConflict(err) {
		t.Fatalf("stale update = %v, want Conflict", err)
	}
	got := &corev1.Pod{}
	if err := s.Get(ctx, prefix+"default/a", storage.GetOptions{}, got); err != nil || got.Spec.NodeName != "n1" {
		t.Fatalf("get = %v node %q", err, got.Spec.NodeName)
	}
	b := mustCreate(t, s, prefix+"default/b", makePod("b").obj())
	list := &corev1.PodList{}
	if err := s.List(ctx, prefix, storage.ListOptions{Recursive: true, Predicate: storage.Predicate{Limit: 1}}, list); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Continue == "" {
		t.Fatalf("first page = %v continue %q", names(list.Items), list.Continue)
	}
	deleted := &corev1.Pod{}
	if err := s.Delete(ctx, prefix+"default/a", deleted, nil, nil); err != nil {
		t.Fatal(err)
	}
	expectEvents(t, w,
		wantEvent{watch.Modified, "a", rvOf(t, updated)},
		wantEvent{watch.Added, "b", rvOf(t, b)},
		wantEvent{watch.Deleted, "a", rvOf(t, deleted)},
	)
}
