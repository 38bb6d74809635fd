package ctrlutil

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

// A sync sees the pods its owner controls and the namespace's orphans, nothing of other
// controllers or namespaces; asking for the index twice (ReplicaSets and ReplicationControllers
// share the pod informer) is fine.
func TestPodsOwnedOrOrphaned(t *testing.T) {
	inf := cache.NewSharedIndexInformer(&cache.ListWatch{}, &corev1.Pod{}, 0, cache.Indexers{})
	for range 2 {
		if err := IndexPodsByController(inf); err != nil {
			t.Fatal(err)
		}
	}
	pod := func(ns, name string, controller types.UID, other types.UID) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		if other != "" { // an owner that is not the controller does not count
			p.OwnerReferences = append(p.OwnerReferences, metav1.OwnerReference{UID: other, Name: "o"})
		}
		if controller != "" {
			p.OwnerReferences = append(p.OwnerReferences, metav1.OwnerReference{UID: controller, Name: "c", Controller: new(true)})
		}
		return p
	}
	for _, p := range []*corev1.Pod{
		pod("a", "mine", "rs-1", ""), pod("a", "mine-too", "rs-1", "x"), pod("a", "other", "rs-2", ""),
		pod("a", "orphan", "", "rs-1"), pod("b", "mine-elsewhere", "rs-1", ""), pod("b", "orphan-elsewhere", "", ""),
	} {
		if err := inf.GetIndexer().Add(p); err != nil {
			t.Fatal(err)
		}
	}
	got, err := PodsOwnedOrOrphaned(inf.GetIndexer(), "a", "rs-1")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range got {
		names = append(names, p.Name)
	}
	slices.Sort(names)
	if want := []string{"mine", "mine-too", "orphan"}; !slices.Equal(names, want) {
		t.Fatalf("pods = %v, want %v", names, want)
	}
}
