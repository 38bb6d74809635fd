package statefulset

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/internal/controller/ctrltest"
	"github.com/skiff-sh/skiff/internal/controller/ctrlutil"
)

func db() map[string]string { return map[string]string{"app": "db"} }

func makeSet(replicas int32, image string) *appsv1.StatefulSet {
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "default", UID: "uid-db", Generation: 1},
		Spec: appsv1.StatefulSetSpec{
			Replicas:            ptr.To(replicas),
			ServiceName:         "db-headless",
			Selector:            &metav1.LabelSelector{MatchLabels: db()},
			PodManagementPolicy: appsv1.OrderedReadyPodManagement,
			UpdateStrategy:      appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType, RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](0)}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: db()},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "db", Image: image}}}},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}}},
		},
	}
}

// setPod is pod <ordinal> of set at the revision of image, healthy unless told.
func setPod(set *appsv1.StatefulSet, ordinal int, image string, ready bool) *corev1.Pod {
	tmpl := set.Spec.Template.DeepCopy()
	tmpl.Spec.Containers[0].Image = image
	b := ctrltest.MakePod(PodName(set, ordinal)).Labels(map[string]string{"app": "db", ctrlutil.RevisionHashLabel: set.Name + "-" + ctrlutil.TemplateHash(tmpl, nil)}).
		OwnedBy(set, "apps/v1", "StatefulSet")
	if ready {
		b.Ready(ctrltest.Epoch())
	} else {
		b.Running()
	}
	p := b.Obj()
	p.UID = types.UID("uid-" + p.Name)
	return p
}

type fixture struct {
	env  *ctrltest.Env
	ctrl *Controller
}

func newFixture(t *testing.T, set *appsv1.StatefulSet, pods ...*corev1.Pod) *fixture {
	t.Helper()
	objs := []runtime.Object{set}
	for _, p := range pods {
		objs = append(objs, p)
	}
	env := ctrltest.NewEnv(objs...)
	c, err := New(env.Deps)
	if err != nil {
		t.Fatal(err)
	}
	ctrltest.Seed(t, env.Factory.Apps().V1().StatefulSets().Informer(), set)
	for _, p := range pods {
		ctrltest.Seed(t, env.Factory.Core().V1().Pods().Informer(), p)
	}
	return &fixture{env: env, ctrl: c}
}

// syncStatus syncs and returns the status the sync wrote (zero when it wrote none).
func (f *fixture) syncStatus(t *testing.T) appsv1.StatefulSetStatus {
	t.Helper()
	if err := f.ctrl.Sync(context.Background(), "default/db"); err != nil {
		t.Fatal(err)
	}
	var status appsv1.StatefulSetStatus
	for _, a := range f.env.Writes() {
		if a.GetVerb() == "update" && a.GetSubresource() == "status" {
			status = a.(clienttesting.UpdateAction).GetObject().(*appsv1.StatefulSet).Status
		}
	}
	return status
}

// podWrites lists the pod and claim creates/deletes, ignoring revisions and status.
func (f *fixture) podWrites(t *testing.T) []string {
	t.Helper()
	if err := f.ctrl.Sync(context.Background(), "default/db"); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range ctrltest.Describe(f.env.Writes()) {
		for _, prefix := range []string{"create pods ", "delete pods ", "create persistentvolumeclaims "} {
			if strings.HasPrefix(d, prefix) {
				out = append(out, d)
			}
		}
	}
	return out
}

func TestScaling(t *testing.T) {
	tests := []struct {
		name string
		set  func() *appsv1.StatefulSet
		pods func(set *appsv1.StatefulSet) []*corev1.Pod
		want []string
	}{
		{"ordered: first pod and its claim", func() *appsv1.StatefulSet { return makeSet(3, "pg:1") }, nil,
			[]string{"create persistentvolumeclaims data-db-0", "create pods db-0"}},
		{"ordered: next pod once the previous is ready", func() *appsv1.StatefulSet { return makeSet(3, "pg:1") },
			func(s *appsv1.StatefulSet) []*corev1.Pod { return []*corev1.Pod{setPod(s, 0, "pg:1", true)} },
			[]string{"create persistentvolumeclaims data-db-1", "create pods db-1"}},
		{"ordered: waits for a pod that is not ready", func() *appsv1.StatefulSet { return makeSet(3, "pg:1") },
			func(s *appsv1.StatefulSet) []*corev1.Pod { return []*corev1.Pod{setPod(s, 0, "pg:1", false)} }, nil},
		{"parallel: all at once", func() *appsv1.StatefulSet {
			s := makeSet(3, "pg:1")
			s.Spec.PodManagementPolicy = appsv1.ParallelPodManagement
			return s
		}, nil, []string{"create persistentvolumeclaims data-db-0", "create pods db-0", "create persistentvolumeclaims data-db-1",
			"create pods db-1", "create persistentvolumeclaims data-db-2", "create pods db-2"}},
		{"scale down: highest ordinal first, one at a time", func() *appsv1.StatefulSet { return makeSet(1, "pg:1") },
			func(s *appsv1.StatefulSet) []*corev1.Pod {
				return []*corev1.Pod{setPod(s, 0, "pg:1", true), setPod(s, 1, "pg:1", true), setPod(s, 2, "pg:1", true)}
			}, []string{"delete pods db-2"}},
		{"failed pod is recreated", func() *appsv1.StatefulSet { return makeSet(1, "pg:1") },
			func(s *appsv1.StatefulSet) []*corev1.Pod {
				p := setPod(s, 0, "pg:1", false)
				p.Status.Phase = corev1.PodFailed
				return []*corev1.Pod{p}
			}, []string{"delete pods db-0"}},
		{"ordinals start", func() *appsv1.StatefulSet {
			s := makeSet(1, "pg:1")
			s.Spec.Ordinals = &appsv1.StatefulSetOrdinals{Start: 5}
			return s
		}, nil, []string{"create persistentvolumeclaims data-db-5", "create pods db-5"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := tt.set()
			var pods []*corev1.Pod
			if tt.pods != nil {
				pods = tt.pods(set)
			}
			f := newFixture(t, set, pods...)
			if got := f.podWrites(t); !slices.Equal(got, tt.want) {
				t.Fatalf("writes %q, want %q", got, tt.want)
			}
		})
	}
}

func TestCreatedPodIdentity(t *testing.T) {
	f := newFixture(t, makeSet(1, "pg:1"))
	if err := f.ctrl.Sync(context.Background(), "default/db"); err != nil {
		t.Fatal(err)
	}
	var pod *corev1.Pod
	var claim *corev1.PersistentVolumeClaim
	for _, a := range f.env.Writes() {
		if a.GetVerb() != "create" {
			continue
		}
		switch o := a.(clienttesting.CreateAction).GetObject().(type) {
		case *corev1.Pod:
			pod = o
		case *corev1.PersistentVolumeClaim:
			claim = o
		}
	}
	if pod == nil || pod.Spec.Hostname != "db-0" || pod.Spec.Subdomain != "db-headless" || pod.Labels[PodNameLabel] != "db-0" || pod.Labels[PodIndexLabel] != "0" {
		t.Fatalf("pod %+v", pod)
	}
	if v := pod.Spec.Volumes; len(v) != 1 || v[0].PersistentVolumeClaim.ClaimName != "data-db-0" {
		t.Fatalf("volumes %+v", v)
	}
	if claim == nil || claim.Labels["app"] != "db" || len(claim.OwnerReferences) != 0 {
		t.Fatalf("claim %+v", claim)
	}
	// As upstream: the pod's controller-revision-hash is the revision's name, the value
	// status.updateRevision holds (conformance compares the two).
	set := makeSet(1, "pg:1")
	if want := set.Name + "-" + ctrlutil.TemplateHash(&set.Spec.Template, nil); pod.Labels[ctrlutil.RevisionHashLabel] != want {
		t.Errorf("pod revision label %q, want %q", pod.Labels[ctrlutil.RevisionHashLabel], want)
	}
}

func TestRollingUpdateWithPartition(t *testing.T) {
	tests := []struct {
		name      string
		partition int32
		healthy   bool
		want      []string
	}{
		{"highest ordinal first", 0, true, []string{"delete pods db-2"}},
		{"partition 2 still updates db-2", 2, true, []string{"delete pods db-2"}},
		{"partition 3 holds everything", 3, true, nil},
		{"waits while a pod is unhealthy", 0, false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := makeSet(3, "pg:2")
			set.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To(tt.partition)
			pods := []*corev1.Pod{setPod(set, 0, "pg:1", tt.healthy), setPod(set, 1, "pg:1", true), setPod(set, 2, "pg:1", true)}
			f := newFixture(t, set, pods...)
			if got := f.podWrites(t); !slices.Equal(got, tt.want) {
				t.Fatalf("writes %q, want %q", got, tt.want)
			}
		})
	}
}

func TestStatusRevisions(t *testing.T) {
	set := makeSet(2, "pg:1")
	f := newFixture(t, set, setPod(set, 0, "pg:1", true), setPod(set, 1, "pg:1", true))
	status := f.syncStatus(t)
	want := "db-" + ctrlutil.TemplateHash(&set.Spec.Template, nil)
	if status.UpdateRevision != want || status.CurrentRevision != want || status.ReadyReplicas != 2 || status.UpdatedReplicas != 2 || status.CurrentReplicas != 2 {
		t.Fatalf("status %+v", status)
	}
}

// TestMinReadySecondsLooksAgain: pods ready for less than minReadySeconds count as ready, not
// available, and the StatefulSet is looked at again once they become available (nothing else
// happens then; e2e "AvailableReplicas should get updated accordingly when MinReadySeconds is
// enabled" waited for ever).
func TestMinReadySecondsLooksAgain(t *testing.T) {
	set := makeSet(1, "pg:1")
	set.Spec.MinReadySeconds = 30
	f := newFixture(t, set, setPod(set, 0, "pg:1", true)) // ready at the fake clock's start
	status := f.syncStatus(t)
	if status.ReadyReplicas != 1 || status.AvailableReplicas != 0 {
		t.Fatalf("status %+v, want 1 ready and none available yet", status)
	}
	if n := f.ctrl.loop.Queue.Len(); n != 0 {
		t.Fatalf("%d keys queued at once, want the look again later", n)
	}
	f.env.Clock.Step(31 * time.Second)
	deadline := time.Now().Add(5 * time.Second)
	for f.ctrl.loop.Queue.Len() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the StatefulSet was not queued again when its pod became available")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
