package statefulset

import (
	"context"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/internal/controller/ctrltest"
)

func TestSetsForPodEvent(t *testing.T) {
	set := makeSet(2, "v1")
	other := makeSet(1, "v1")
	other.Name, other.UID = "cache", "uid-cache"
	other.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "cache"}}
	deleting := makeSet(1, "v1")
	deleting.Name, deleting.UID = "gone", "uid-gone"
	deleting.DeletionTimestamp = &metav1.Time{Time: ctrltest.Epoch()}
	sets := []*appsv1.StatefulSet{set, other, deleting}

	owned := setPod(set, 0, "v1", true)
	owned.ResourceVersion = "1"
	with := func(p *corev1.Pod, f func(p *corev1.Pod)) *corev1.Pod {
		p = p.DeepCopy()
		p.ResourceVersion += "+"
		f(p)
		return p
	}
	orphaned := with(owned, func(p *corev1.Pod) { p.OwnerReferences = nil })
	relabelled := with(owned, func(p *corev1.Pod) { p.Labels = map[string]string{"app": "other"} })
	foreign := with(owned, func(p *corev1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "uid-rs", Controller: ptr.To(true)}}
	})
	stale := with(owned, func(p *corev1.Pod) { p.OwnerReferences[0].UID = "uid-old-db" })
	orphanOfGone := with(orphaned, func(p *corev1.Pod) { p.Name = "gone-0" })
	orphanMisnamed := with(orphaned, func(p *corev1.Pod) { p.Name = "db-x" })
	orphanDeleting := with(orphaned, func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: ctrltest.Epoch()} })

	tests := []struct {
		name     string
		old, cur *corev1.Pod
		want     []string
	}{
		{"created by its set: the set", nil, owned, []string{"default/db"}},
		{"an orphan appears: the set that can adopt it", nil, orphaned, []string{"default/db"}},
		{"an orphan named like no set's ordinal: none", nil, orphanMisnamed, nil},
		{"an orphan of a set being deleted: none", nil, orphanOfGone, nil},
		{"an orphan already terminating: none", nil, orphanDeleting, nil},
		{"orphaned: the set, to adopt it again", owned, orphaned, []string{"default/db"}},
		{"labels no longer match: its set, to release it", owned, relabelled, []string{"default/db"}},
		{"an orphan relabelled to match: the set", relabelled.DeepCopy(), with(orphaned, func(*corev1.Pod) {}), []string{"default/db"}},
		{"taken by another controller: the set it left", owned, foreign, []string{"default/db"}},
		{"owned by another controller throughout: none", foreign, with(foreign, func(*corev1.Pod) {}), nil},
		{"controllerRef to a set of the same name but another UID: none", nil, stale, nil},
		{"a resync (same resourceVersion): none", owned, owned, nil},
		{"status only: its set", owned, with(owned, func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }), []string{"default/db"}},
		{"deleted: its set", owned, nil, []string{"default/db"}},
		{"an orphan deleted: none", orphaned, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := SetsForPodEvent(tt.old, tt.cur, sets); !slices.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestOrphanedPodIsReadopted: a pod whose ownerReferences are removed (upstream's "StatefulSet
// should adopt matching orphans and release non-matching pods") queues its set through the pod
// informer, and the set's sync adopts it again; the pod's event is the only one (the set itself
// does not change).
func TestOrphanedPodIsReadopted(t *testing.T) {
	set := makeSet(1, "v1")
	pod := setPod(set, 0, "v1", true)
	f := newFixture(t, set, pod)
	ctx, cancel := context.WithCancel(context.Background())
	f.env.Factory.Start(ctx.Done())
	defer func() { cancel(); f.env.Factory.Shutdown() }()
	if !cache.WaitForCacheSync(ctx.Done(), f.ctrl.synced...) {
		t.Fatal("caches not synced")
	}
	// Whatever the informers' first list queued.
	for f.ctrl.loop.Queue.Len() > 0 {
		k, _ := f.ctrl.loop.Queue.Get()
		f.ctrl.loop.Queue.Done(k)
	}

	orphan := pod.DeepCopy()
	orphan.OwnerReferences = nil
	orphan.ResourceVersion = "2"
	if _, err := f.env.Client.CoreV1().Pods("default").Update(ctx, orphan, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for f.ctrl.loop.Queue.Len() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("orphaning the set's pod queued nothing")
		}
		time.Sleep(time.Millisecond)
	}
	key, _ := f.ctrl.loop.Queue.Get()
	f.ctrl.loop.Queue.Done(key)
	if key != "default/db" {
		t.Fatalf("queued %q, want default/db", key)
	}
	// The informer has the orphan by now (the handler ran after the cache was updated).
	f.env.Writes()
	if err := f.ctrl.Sync(ctx, key); err != nil {
		t.Fatal(err)
	}
	if got := ctrltest.Describe(f.env.Writes()); !slices.Contains(got, "patch pods db-0") {
		t.Errorf("writes %q, want the pod adopted (patch pods db-0)", got)
	}
	adopted, err := f.env.Client.CoreV1().Pods("default").Get(ctx, "db-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ref := metav1.GetControllerOf(adopted); ref == nil || ref.UID != types.UID("uid-db") {
		t.Errorf("pod's controllerRef %+v, want the set's", ref)
	}
}
