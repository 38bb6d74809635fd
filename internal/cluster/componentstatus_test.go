package cluster

import (
	"context"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/internal/etcd/etcdtest"
	"github.com/skiff-sh/skiff/internal/registry/builtin"
	"github.com/skiff-sh/skiff/internal/storage"
	"github.com/skiff-sh/skiff/internal/storage/etcd3"
)

func TestComponentStatusStore(t *testing.T) {
	member := etcdtest.StartEmbedded(t, etcdtest.Options{})
	client, err := member.Client()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	scheme, err := builtin.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	resources := builtin.Resources()
	now := time.Date(2025, time.June, 1, 12, 0, 0, 0, time.UTC)
	store, err := newComponentStatusStore(client, scheme, resources, "protobuf", clocktesting.NewFakePassiveClock(now))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	// The scheduler leads with a fresh lease; the controller manager never ran.
	for _, r := range resources {
		if r.Plural != "leases" {
			continue
		}
		codec, err := builtin.StorageCodec(scheme, r, "protobuf")
		if err != nil {
			t.Fatal(err)
		}
		renewed := metav1.NewMicroTime(now.Add(-time.Second))
		lease := &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: "kube-scheduler", Namespace: "kube-system"},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To("cp-1_x"), LeaseDurationSeconds: ptr.To[int32](15), RenewTime: &renewed},
		}
		if err := etcd3.New(client, codec, r.New, r.NewList).Create(ctx, "/registry/coordination.k8s.io/leases/kube-system/kube-scheduler", lease, &coordinationv1.Lease{}); err != nil {
			t.Fatal(err)
		}
	}

	list := &corev1.ComponentStatusList{}
	if err := store.List(ctx, "/registry/core/componentstatuses/", storage.ListOptions{Recursive: true}, list); err != nil {
		t.Fatal(err)
	}
	got := map[string]corev1.ComponentCondition{}
	var names []string
	for _, cs := range list.Items {
		names = append(names, cs.Name)
		got[cs.Name] = cs.Conditions[0]
	}
	if len(names) != 3 || names[0] != "scheduler" || names[1] != "controller-manager" || names[2] != "etcd-0" {
		t.Fatalf("names = %v", names)
	}
	if got["scheduler"].Status != corev1.ConditionTrue || got["etcd-0"].Status != corev1.ConditionTrue {
		t.Fatalf("healthy components = %+v", got)
	}
	if cm := got["controller-manager"]; cm.Status != corev1.ConditionFalse || cm.Error == "" {
		t.Fatalf("controller manager = %+v", cm)
	}
	one := &corev1.ComponentStatus{}
	if err := store.Get(ctx, "/registry/core/componentstatuses/etcd-0", storage.GetOptions{}, one); err != nil || one.Conditions[0].Message != "ok" {
		t.Fatalf("get etcd-0: %v %+v", err, one)
	}
}
