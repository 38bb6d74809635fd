package replicaset

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/internal/controller/ctrltest"
)

var web = map[string]string{"app": "web"}

type fixture struct {
	env  *ctrltest.Env
	ctrl *Controller
}

func newFixture(t *testing.T, rs []*appsv1.ReplicaSet, pods []*corev1.Pod) *fixture {
	t.Helper()
	var objs []runtime.Object
	for _, r := range rs {
		objs = append(objs, r)
	}
	for _, p := range pods {
		objs = append(objs, p)
	}
	env := ctrltest.NewEnv(objs...)
	ctrl, err := New(env.Deps)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		ctrltest.Seed(t, env.Factory.Apps().V1().ReplicaSets().Informer(), r)
	}
	for _, p := range pods {
		ctrltest.Seed(t, env.Factory.Core().V1().Pods().Informer(), p)
	}
	return &fixture{env: env, ctrl: ctrl}
}

func (f *fixture) sync(t *testing.T, key string) error {
	t.Helper()
	return f.ctrl.Sync(context.Background(), key)
}

func statusOf(t *testing.T, actions []clienttesting.Action) appsv1.ReplicaSetStatus {
	t.Helper()
	for _, a := range actions {
		if u, ok := a.(clienttesting.UpdateAction); ok && a.GetSubresource() == "status" {
			return u.GetObject().(*appsv1.ReplicaSet).Status
		}
	}
	t.Fatalf("no status update in %v", ctrltest.Describe(actions))
	return appsv1.ReplicaSetStatus{}
}

func TestSyncActions(t *testing.T) {
	now := ctrltest.Epoch()
	rs3 := ctrltest.MakeReplicaSet("rs", 3, web)
	rs1 := ctrltest.MakeReplicaSet("rs", 1, web)
	owned := func(name string) *ctrltest.PodBuilder {
		return ctrltest.MakePod(name).Labels(web).OwnedBy(rs3, "apps/v1", "ReplicaSet")
	}
	other := ctrltest.MakeReplicaSet("other", 1, map[string]string{"app": "other"})
	tests := []struct {
		name string
		rs   *appsv1.ReplicaSet
		pods []*corev1.Pod
		want []string
	}{
		{
			name: "creates missing pods",
			rs:   rs3,
			want: []string{"create pods rs-*", "create pods rs-*", "create pods rs-*", "update replicasets/status rs"},
		},
		{
			name: "in sync: only status",
			rs:   rs3,
			pods: []*corev1.Pod{owned("a").Ready(now).Obj(), owned("b").Ready(now).Obj(), owned("c").Ready(now).Obj()},
			want: []string{"update replicasets/status rs"},
		},
		{
			name: "terminated and deleting pods do not count",
			rs:   rs1,
			pods: []*corev1.Pod{owned("done").Phase(corev1.PodSucceeded).Obj(), owned("gone").Deleting(now).Obj()},
			want: []string{"create pods rs-*", "update replicasets/status rs"},
		},
		{
			name: "deletes surplus, least valuable first",
			rs:   rs1,
			pods: []*corev1.Pod{owned("ready").Ready(now).Obj(), owned("unscheduled").Obj(), owned("running").Running().Obj()},
			want: []string{"delete pods running", "delete pods unscheduled", "update replicasets/status rs"},
		},
		{
			name: "adopts a matching orphan",
			rs:   rs1,
			pods: []*corev1.Pod{ctrltest.MakePod("orphan").Labels(web).Obj()},
			want: []string{"patch pods orphan", "update replicasets/status rs"},
		},
		{
			name: "releases an owned pod that stopped matching",
			rs:   rs1,
			pods: []*corev1.Pod{owned("a").Obj(), ctrltest.MakePod("relabelled").Labels(map[string]string{"app": "x"}).OwnedBy(rs3, "apps/v1", "ReplicaSet").Obj()},
			want: []string{"patch pods relabelled", "update replicasets/status rs"},
		},
		{
			name: "ignores pods of another controller",
			rs:   rs1,
			pods: []*corev1.Pod{ctrltest.MakePod("theirs").Labels(web).OwnedBy(other, "apps/v1", "ReplicaSet").Obj()},
			want: []string{"create pods rs-*", "update replicasets/status rs"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, []*appsv1.ReplicaSet{tt.rs}, tt.pods)
			if err := f.sync(t, "default/rs"); err != nil {
				t.Fatal(err)
			}
			got := ctrltest.Describe(f.env.Writes())
			// Parallel deletes finish in any order.
			slices.Sort(got)
			want := slices.Clone(tt.want)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Fatalf("actions:\n got %q\nwant %q", got, want)
			}
		})
	}
}

func TestCreatedPodsCarryTemplateAndControllerRef(t *testing.T) {
	rs := ctrltest.MakeReplicaSet("rs", 1, web)
	rs.Spec.Template.Annotations = map[string]string{"a": "b"}
	f := newFixture(t, []*appsv1.ReplicaSet{rs}, nil)
	if err := f.sync(t, "default/rs"); err != nil {
		t.Fatal(err)
	}
	pod := f.env.Writes()[0].(clienttesting.CreateAction).GetObject().(*corev1.Pod)
	ref := metav1.GetControllerOf(pod)
	if ref == nil || ref.Kind != "ReplicaSet" || ref.APIVersion != "apps/v1" || ref.Name != "rs" || ref.UID != rs.UID ||
		ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
		t.Fatalf("controllerRef = %+v", ref)
	}
	if pod.GenerateName != "rs-" || pod.Labels["app"] != "web" || pod.Annotations["a"] != "b" || pod.Spec.Containers[0].Image != "img" {
		t.Fatalf("pod = %+v", pod.ObjectMeta)
	}
	if ev := f.env.Events(); len(ev) != 1 || !strings.HasPrefix(ev[0], "Normal SuccessfulCreate Created pod: rs-") {
		t.Fatalf("events = %q", ev)
	}
}

func TestExpectationsPreventDoubleCreate(t *testing.T) {
	f := newFixture(t, []*appsv1.ReplicaSet{ctrltest.MakeReplicaSet("rs", 2, web)}, nil)
	if err := f.sync(t, "default/rs"); err != nil {
		t.Fatal(err)
	}
	f.env.Writes()
	// The cache has not seen the new pods yet: a second sync must not create again.
	if err := f.sync(t, "default/rs"); err != nil {
		t.Fatal(err)
	}
	for _, a := range f.env.Writes() {
		if a.GetVerb() == "create" {
			t.Fatalf("created again before observing its creates: %v", ctrltest.Describe([]clienttesting.Action{a}))
		}
	}
	// The informer delivers the pods: expectations are met.
	rs := ctrltest.MakeReplicaSet("rs", 2, web)
	f.ctrl.addPod(ctrltest.MakePod("rs-1").Labels(web).OwnedBy(rs, "apps/v1", "ReplicaSet").Obj())
	if f.ctrl.Expectations().Satisfied("default/rs") {
		t.Fatal("one create still unobserved")
	}
	f.ctrl.addPod(ctrltest.MakePod("rs-2").Labels(web).OwnedBy(rs, "apps/v1", "ReplicaSet").Obj())
	if !f.ctrl.Expectations().Satisfied("default/rs") {
		t.Fatal("all creates observed")
	}
}

func TestSlowStartStopsAfterFailedBatch(t *testing.T) {
	f := newFixture(t, []*appsv1.ReplicaSet{ctrltest.MakeReplicaSet("rs", 10, web)}, nil)
	var creates atomic.Int32
	f.env.Client.PrependReactor("create", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
		if creates.Add(1) == 2 {
			return true, nil, errors.New("quota exceeded")
		}
		return false, nil, nil
	})
	err := f.sync(t, "default/rs")
	if err == nil {
		t.Fatal("want the create error")
	}
	// Batch 1 (1 pod) then batch 2 (2 pods, one fails): no third batch.
	if creates.Load() != 3 {
		t.Fatalf("create attempts = %d, want 3", creates.Load())
	}
	status := statusOf(t, f.env.Writes())
	if len(status.Conditions) != 1 || status.Conditions[0].Type != appsv1.ReplicaSetReplicaFailure ||
		status.Conditions[0].Reason != "FailedCreate" || !strings.Contains(status.Conditions[0].Message, "quota exceeded") {
		t.Fatalf("conditions = %+v", status.Conditions)
	}
	// The 8 creates never attempted and the failed one will never be observed.
	if f.ctrl.Expectations().Satisfied("default/rs") {
		t.Fatal("two successful creates are still expected")
	}
}

func TestStatusCounts(t *testing.T) {
	now := ctrltest.Epoch()
	rs := ctrltest.MakeReplicaSet("rs", 4, web)
	rs.Spec.MinReadySeconds = 10
	rs.Spec.Template.Labels = map[string]string{"app": "web", "tier": "front"}
	rs.Generation = 7
	owned := func(name string, l map[string]string) *ctrltest.PodBuilder {
		return ctrltest.MakePod(name).Labels(l).OwnedBy(rs, "apps/v1", "ReplicaSet")
	}
	full := map[string]string{"app": "web", "tier": "front"}
	pods := []*corev1.Pod{
		owned("available", full).Ready(now.Add(-time.Minute)).Obj(),
		owned("just-ready", full).Ready(now.Add(-5 * time.Second)).Obj(),
		owned("not-ready", web).Running().Obj(),
		owned("pending", web).Obj(),
	}
	f := newFixture(t, []*appsv1.ReplicaSet{rs}, pods)
	if err := f.sync(t, "default/rs"); err != nil {
		t.Fatal(err)
	}
	got := statusOf(t, f.env.Writes())
	want := appsv1.ReplicaSetStatus{Replicas: 4, FullyLabeledReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 1, ObservedGeneration: 7}
	if got.Replicas != want.Replicas || got.FullyLabeledReplicas != want.FullyLabeledReplicas || got.ReadyReplicas != want.ReadyReplicas ||
		got.AvailableReplicas != want.AvailableReplicas || got.ObservedGeneration != want.ObservedGeneration {
		t.Fatalf("status = %+v, want %+v", got, want)
	}
	// The just-ready pod becomes available 5s later: the key is requeued for then.
	if f.ctrl.loop.Queue.Len() != 0 {
		t.Fatal("requeue must be delayed, not immediate")
	}
	f.env.Clock.Step(6 * time.Second)
	waitQueued(t, f)
	// The requeued sync sees it available.
	if err := f.sync(t, "default/rs"); err != nil {
		t.Fatal(err)
	}
	if got := statusOf(t, f.env.Writes()); got.AvailableReplicas != 2 {
		t.Fatalf("after minReadySeconds: available = %d, want 2", got.AvailableReplicas)
	}
}

func waitQueued(t *testing.T, f *fixture) {
	t.Helper()
	for range 1000 {
		if f.ctrl.loop.Queue.Len() > 0 {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatal("key not requeued")
}

func TestDeletedReplicaSetIsANoop(t *testing.T) {
	f := newFixture(t, nil, nil)
	if err := f.sync(t, "default/gone"); err != nil {
		t.Fatal(err)
	}
	if w := f.env.Writes(); len(w) != 0 {
		t.Fatalf("actions: %v", ctrltest.Describe(w))
	}
}

func TestDeletingReplicaSetDoesNotManagePods(t *testing.T) {
	rs := ctrltest.MakeReplicaSet("rs", 3, web)
	rs.DeletionTimestamp = ptr.To(metav1.NewTime(ctrltest.Epoch()))
	f := newFixture(t, []*appsv1.ReplicaSet{rs}, []*corev1.Pod{ctrltest.MakePod("orphan").Labels(web).Obj()})
	if err := f.sync(t, "default/rs"); err != nil {
		t.Fatal(err)
	}
	for _, a := range f.env.Writes() {
		if a.GetResource().Resource == "pods" {
			t.Fatalf("touched pods while deleting: %v", ctrltest.Describe([]clienttesting.Action{a}))
		}
	}
}
