package deployment

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/internal/controller/ctrltest"
)

func template(image string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: image}}},
	}
}

// makeDeployment is a defaulted Deployment as the API server stores it.
func makeDeployment(replicas int32, image string) *appsv1.Deployment {
	return &appsv1.Deployment{
		TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-web", Generation: 1,
			CreationTimestamp: metav1.NewTime(ctrltest.Epoch().Add(-time.Hour))},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: template(image),
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
				MaxSurge: ptr.To(intstr.FromString("25%")), MaxUnavailable: ptr.To(intstr.FromString("25%"))}},
			RevisionHistoryLimit:    ptr.To[int32](10),
			ProgressDeadlineSeconds: ptr.To[int32](600),
		},
	}
}

// rsFor is a ReplicaSet d created for image: size replicas, all available, at revision.
func rsFor(d *appsv1.Deployment, image string, size, available int32, revision int, age time.Duration) *appsv1.ReplicaSet {
	tmpl := template(image)
	hash := podTemplateHash(&tmpl, nil)
	tmpl.Labels[PodTemplateHashLabel] = hash
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Name: d.Name + "-" + hash, Namespace: d.Namespace, UID: types.UID("uid-rs-" + image),
			Labels:            map[string]string{"app": "web", PodTemplateHashLabel: hash},
			CreationTimestamp: metav1.NewTime(ctrltest.Epoch().Add(-age)),
			Annotations: map[string]string{RevisionAnnotation: fmt.Sprint(revision),
				DesiredReplicasAnnotation: fmt.Sprint(*d.Spec.Replicas), MaxReplicasAnnotation: fmt.Sprint(*d.Spec.Replicas + maxSurge(d))},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: d.Name, UID: d.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}},
		},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To(size), Template: tmpl,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web", PodTemplateHashLabel: hash}}},
		Status: appsv1.ReplicaSetStatus{Replicas: size, ReadyReplicas: available, AvailableReplicas: available},
	}
}

type fixture struct {
	env  *ctrltest.Env
	ctrl *Controller
}

func newFixture(t *testing.T, d *appsv1.Deployment, sets []*appsv1.ReplicaSet, pods ...*corev1.Pod) *fixture {
	t.Helper()
	objs := []runtime.Object{d}
	for _, rs := range sets {
		objs = append(objs, rs)
	}
	for _, p := range pods {
		objs = append(objs, p)
	}
	env := ctrltest.NewEnv(objs...)
	ctrl, err := New(env.Deps)
	if err != nil {
		t.Fatal(err)
	}
	ctrltest.Seed(t, env.Factory.Apps().V1().Deployments().Informer(), d)
	for _, rs := range sets {
		ctrltest.Seed(t, env.Factory.Apps().V1().ReplicaSets().Informer(), rs)
	}
	for _, p := range pods {
		ctrltest.Seed(t, env.Factory.Core().V1().Pods().Informer(), p)
	}
	return &fixture{env: env, ctrl: ctrl}
}

func (f *fixture) sync(t *testing.T) []clienttesting.Action {
	t.Helper()
	if err := f.ctrl.Sync(context.Background(), "default/web"); err != nil {
		t.Fatal(err)
	}
	return f.env.Writes()
}

func lastStatus(t *testing.T, actions []clienttesting.Action) appsv1.DeploymentStatus {
	t.Helper()
	for i := len(actions) - 1; i >= 0; i-- {
		if u, ok := actions[i].(clienttesting.UpdateAction); ok && actions[i].GetSubresource() == "status" {
			return u.GetObject().(*appsv1.Deployment).Status
		}
	}
	t.Fatalf("no status update in %q", ctrltest.Describe(actions))
	return appsv1.DeploymentStatus{}
}

func scaledTo(t *testing.T, actions []clienttesting.Action) map[string]int32 {
	t.Helper()
	out := map[string]int32{}
	for _, a := range actions {
		if u, ok := a.(clienttesting.UpdateAction); ok && a.GetVerb() == "update" && a.GetResource().Resource == "replicasets" && a.GetSubresource() == "" {
			rs := u.GetObject().(*appsv1.ReplicaSet)
			out[rs.Name] = *rs.Spec.Replicas
		}
	}
	return out
}

func condition(s appsv1.DeploymentStatus, t appsv1.DeploymentConditionType) *appsv1.DeploymentCondition {
	return getCondition(&s, t)
}

func TestNewDeploymentCreatesFirstReplicaSet(t *testing.T) {
	d := makeDeployment(3, "v1")
	f := newFixture(t, d, nil)
	actions := f.sync(t)
	want := []string{"create replicasets web-" + podTemplateHash(&d.Spec.Template, nil), "update deployments/status web", "update deployments/status web", "update deployments/status web"}
	if got := ctrltest.Describe(actions); !slices.Equal(got, want) {
		t.Fatalf("actions:\n got %q\nwant %q", got, want)
	}
	rs := actions[0].(clienttesting.CreateAction).GetObject().(*appsv1.ReplicaSet)
	hash := rs.Labels[PodTemplateHashLabel]
	if hash == "" || rs.Spec.Template.Labels[PodTemplateHashLabel] != hash || rs.Spec.Selector.MatchLabels[PodTemplateHashLabel] != hash {
		t.Fatalf("hash label missing: labels %v selector %v", rs.Labels, rs.Spec.Selector)
	}
	if *rs.Spec.Replicas != 3 || rs.Annotations[RevisionAnnotation] != "1" || rs.Annotations[DesiredReplicasAnnotation] != "3" || rs.Annotations[MaxReplicasAnnotation] != "4" {
		t.Fatalf("replicas %d annotations %v", *rs.Spec.Replicas, rs.Annotations)
	}
	if ref := metav1.GetControllerOf(rs); ref == nil || ref.UID != d.UID || !*ref.BlockOwnerDeletion {
		t.Fatalf("controllerRef %+v", ref)
	}
	if d := actions[1].(clienttesting.UpdateAction).GetObject().(*appsv1.Deployment); d.Annotations[RevisionAnnotation] != "1" {
		t.Fatalf("revision not recorded through /status: annotations %v", d.Annotations)
	}
	status := lastStatus(t, actions)
	if c := condition(status, appsv1.DeploymentProgressing); c == nil || c.Reason != ReasonNewReplicaSetCreated || c.Message != fmt.Sprintf("Created new replica set %q", rs.Name) {
		t.Fatalf("progressing %+v", c)
	}
	if c := condition(status, appsv1.DeploymentAvailable); c == nil || c.Status != corev1.ConditionFalse || c.Reason != ReasonMinimumReplicasUnavailable {
		t.Fatalf("available %+v", c)
	}
	if ev := f.env.Events(); len(ev) != 1 || ev[0] != fmt.Sprintf("Normal ScalingReplicaSet Scaled up replica set %s to 3 from 0", rs.Name) {
		t.Fatalf("events %q", ev)
	}
}

func TestRollingUpdateSteps(t *testing.T) {
	tests := []struct {
		name       string
		sets       func(d *appsv1.Deployment) []*appsv1.ReplicaSet
		wantCreate int32 // size of a created ReplicaSet, -1 for none
		wantScaled map[string]int32
	}{
		{
			name: "template change surges one new pod",
			sets: func(d *appsv1.Deployment) []*appsv1.ReplicaSet {
				return []*appsv1.ReplicaSet{rsFor(d, "v1", 4, 4, 1, time.Hour)}
			},
			wantCreate: 1,
			wantScaled: map[string]int32{},
		},
		{
			name: "new pod available: old scaled down by one",
			sets: func(d *appsv1.Deployment) []*appsv1.ReplicaSet {
				return []*appsv1.ReplicaSet{rsFor(d, "v1", 4, 4, 1, time.Hour), rsFor(d, "v2", 1, 1, 2, time.Minute)}
			},
			wantCreate: -1,
			wantScaled: map[string]int32{"web-" + hashOf("v1"): 3},
		},
		{
			name: "room under maxSurge: new scaled up",
			sets: func(d *appsv1.Deployment) []*appsv1.ReplicaSet {
				return []*appsv1.ReplicaSet{rsFor(d, "v1", 3, 3, 1, time.Hour), rsFor(d, "v2", 1, 1, 2, time.Minute)}
			},
			wantCreate: -1,
			wantScaled: map[string]int32{"web-" + hashOf("v2"): 2},
		},
		{
			name: "new pods not available: nothing more to do",
			sets: func(d *appsv1.Deployment) []*appsv1.ReplicaSet {
				return []*appsv1.ReplicaSet{rsFor(d, "v1", 3, 3, 1, time.Hour), rsFor(d, "v2", 2, 0, 2, time.Minute)}
			},
			wantCreate: -1,
			wantScaled: map[string]int32{},
		},
		{
			name: "unhealthy old pods are removed first",
			sets: func(d *appsv1.Deployment) []*appsv1.ReplicaSet {
				return []*appsv1.ReplicaSet{rsFor(d, "v1", 4, 2, 1, time.Hour), rsFor(d, "v2", 1, 1, 2, time.Minute)}
			},
			wantCreate: -1,
			// maxUnavailable 0: only one old pod may go (5 total, 4 must stay available).
			wantScaled: map[string]int32{"web-" + hashOf("v1"): 3},
		},
		{
			// Just scaled down, the old ReplicaSet's status still counts the pods it is deleting.
			name: "stale availability above size never scales an old set up",
			sets: func(d *appsv1.Deployment) []*appsv1.ReplicaSet {
				return []*appsv1.ReplicaSet{rsFor(d, "v1", 3, 4, 1, time.Hour), rsFor(d, "v2", 2, 2, 2, time.Minute)}
			},
			wantCreate: -1,
			// Its availability counts as at most its size: 3 + 2 available, 4 must stay.
			wantScaled: map[string]int32{"web-" + hashOf("v1"): 2},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := makeDeployment(4, "v2") // maxSurge 1, maxUnavailable 1
			d.Spec.Strategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromInt32(0))
			f := newFixture(t, d, tt.sets(d))
			actions := f.sync(t)
			var created int32 = -1
			for _, a := range actions {
				if c, ok := a.(clienttesting.CreateAction); ok && a.GetVerb() == "create" {
					created = *c.GetObject().(*appsv1.ReplicaSet).Spec.Replicas
				}
			}
			if created != tt.wantCreate {
				t.Fatalf("created size %d, want %d (%q)", created, tt.wantCreate, ctrltest.Describe(actions))
			}
			if got := scaledTo(t, actions); !mapsEqual(got, tt.wantScaled) {
				t.Fatalf("scaled %v, want %v (%q)", got, tt.wantScaled, ctrltest.Describe(actions))
			}
		})
	}
}

func hashOf(image string) string {
	tmpl := template(image)
	return podTemplateHash(&tmpl, nil)
}

func mapsEqual(a, b map[string]int32) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if bv, ok := b[k]; !ok || bv != v {
			return false
		}
	}
	return true
}

func TestCompleteRolloutCleansHistoryAndReportsAvailable(t *testing.T) {
	d := makeDeployment(3, "v4")
	d.Spec.RevisionHistoryLimit = ptr.To[int32](1)
	d.Annotations = map[string]string{RevisionAnnotation: "4"}
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 3, UpdatedReplicas: 3, ReadyReplicas: 3, AvailableReplicas: 3,
		Conditions: []appsv1.DeploymentCondition{newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonReplicaSetUpdated, "x", ctrltest.Epoch().Add(-time.Minute))}}
	sets := []*appsv1.ReplicaSet{rsFor(d, "v1", 0, 0, 1, 4*time.Hour), rsFor(d, "v2", 0, 0, 2, 3*time.Hour), rsFor(d, "v3", 0, 0, 3, 2*time.Hour), rsFor(d, "v4", 3, 3, 4, time.Hour)}
	f := newFixture(t, d, sets)
	actions := f.sync(t)
	got := ctrltest.Describe(actions)
	want := []string{"delete replicasets web-" + hashOf("v1"), "delete replicasets web-" + hashOf("v2"), "update deployments/status web"}
	if !slices.Equal(got, want) {
		t.Fatalf("actions:\n got %q\nwant %q", got, want)
	}
	status := lastStatus(t, actions)
	c := condition(status, appsv1.DeploymentProgressing)
	if c == nil || c.Status != corev1.ConditionTrue || c.Reason != ReasonNewReplicaSetAvailable ||
		c.Message != fmt.Sprintf("ReplicaSet %q has successfully progressed.", "web-"+hashOf("v4")) {
		t.Fatalf("progressing %+v", c)
	}
	if a := condition(status, appsv1.DeploymentAvailable); a == nil || a.Status != corev1.ConditionTrue || a.Reason != ReasonMinimumReplicasAvailable ||
		a.Message != "Deployment has minimum availability." {
		t.Fatalf("available %+v", a)
	}
	if status.Replicas != 3 || status.UpdatedReplicas != 3 || status.AvailableReplicas != 3 || status.UnavailableReplicas != 0 {
		t.Fatalf("counts %+v", status)
	}
	// Nothing changed: a second sync writes nothing.
	f2 := newFixture(t, withStatus(d, status), sets[2:])
	if w := f2.sync(t); len(w) != 0 {
		t.Fatalf("steady state wrote %q", ctrltest.Describe(w))
	}
}

func withStatus(d *appsv1.Deployment, s appsv1.DeploymentStatus) *appsv1.Deployment {
	d = d.DeepCopy()
	d.Status = s
	return d
}

func TestRecreate(t *testing.T) {
	recreate := func() *appsv1.Deployment {
		d := makeDeployment(2, "v2")
		d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
		return d
	}
	t.Run("scales old down first", func(t *testing.T) {
		d := recreate()
		f := newFixture(t, d, []*appsv1.ReplicaSet{rsFor(d, "v1", 2, 2, 1, time.Hour)})
		actions := f.sync(t)
		if got := scaledTo(t, actions); !mapsEqual(got, map[string]int32{"web-" + hashOf("v1"): 0}) {
			t.Fatalf("scaled %v", got)
		}
		for _, a := range actions {
			if a.GetVerb() == "create" {
				t.Fatalf("created before old pods were gone: %q", ctrltest.Describe(actions))
			}
		}
	})
	t.Run("waits for old pods to terminate", func(t *testing.T) {
		d := recreate()
		old := rsFor(d, "v1", 0, 0, 1, time.Hour)
		old.Status = appsv1.ReplicaSetStatus{}
		pod := ctrltest.MakePod("old-pod").Labels(map[string]string{"app": "web"}).OwnedBy(old, "apps/v1", "ReplicaSet").Running().Obj()
		f := newFixture(t, d, []*appsv1.ReplicaSet{old}, pod)
		for _, a := range f.sync(t) {
			if a.GetVerb() == "create" {
				t.Fatal("created while an old pod still runs")
			}
		}
	})
	t.Run("then creates the new one at full size", func(t *testing.T) {
		d := recreate()
		old := rsFor(d, "v1", 0, 0, 1, time.Hour)
		old.Status = appsv1.ReplicaSetStatus{}
		f := newFixture(t, d, []*appsv1.ReplicaSet{old})
		actions := f.sync(t)
		if actions[0].GetVerb() != "create" || *actions[0].(clienttesting.CreateAction).GetObject().(*appsv1.ReplicaSet).Spec.Replicas != 2 {
			t.Fatalf("actions %q", ctrltest.Describe(actions))
		}
	})
}

func TestPausedDoesNotRollOut(t *testing.T) {
	d := makeDeployment(3, "v2")
	d.Spec.Paused = true
	f := newFixture(t, d, []*appsv1.ReplicaSet{rsFor(d, "v1", 3, 3, 1, time.Hour)})
	actions := f.sync(t)
	for _, a := range actions {
		if a.GetVerb() == "create" || a.GetResource().Resource == "replicasets" {
			t.Fatalf("paused deployment touched replicasets: %q", ctrltest.Describe(actions))
		}
	}
	c := condition(lastStatus(t, actions), appsv1.DeploymentProgressing)
	if c == nil || c.Status != corev1.ConditionUnknown || c.Reason != ReasonDeploymentPaused || c.Message != "Deployment is paused" {
		t.Fatalf("progressing %+v", c)
	}

	// Resume: the condition says so and the rollout starts.
	resumed := d.DeepCopy()
	resumed.Spec.Paused = false
	resumed.Status.Conditions = []appsv1.DeploymentCondition{*c}
	f = newFixture(t, resumed, []*appsv1.ReplicaSet{rsFor(d, "v1", 3, 3, 1, time.Hour)})
	actions = f.sync(t)
	first := actions[0].(clienttesting.UpdateAction).GetObject().(*appsv1.Deployment)
	if c := condition(first.Status, appsv1.DeploymentProgressing); c == nil || c.Reason != ReasonDeploymentResumed {
		t.Fatalf("resume condition %+v", c)
	}
	if !slices.ContainsFunc(actions, func(a clienttesting.Action) bool { return a.GetVerb() == "create" }) {
		t.Fatalf("resumed deployment did not roll out: %q", ctrltest.Describe(actions))
	}
}

func TestScalingEventResizesProportionally(t *testing.T) {
	t.Run("single replicaset", func(t *testing.T) {
		d := makeDeployment(5, "v1")
		rs := rsFor(makeDeployment(3, "v1"), "v1", 3, 3, 1, time.Hour)
		f := newFixture(t, d, []*appsv1.ReplicaSet{rs})
		got := scaledTo(t, f.sync(t))
		if !mapsEqual(got, map[string]int32{rs.Name: 5}) {
			t.Fatalf("scaled %v", got)
		}
	})
	t.Run("mid-rollout", func(t *testing.T) {
		// 10 -> 20 while old has 8 and new 3 (maxSurge 3 of 10 -> 5 of 20).
		prev := makeDeployment(10, "v2")
		d := makeDeployment(20, "v2")
		sets := []*appsv1.ReplicaSet{rsFor(prev, "v1", 8, 8, 1, time.Hour), rsFor(prev, "v2", 3, 0, 2, time.Minute)}
		f := newFixture(t, d, sets)
		got := scaledTo(t, f.sync(t))
		total := int32(0)
		for _, v := range got {
			total += v
		}
		if total != 25 || got["web-"+hashOf("v1")] <= 8 || got["web-"+hashOf("v2")] <= 3 {
			t.Fatalf("scaled %v, want both grown to a total of 25", got)
		}
	})
}

func TestProgressDeadlineExceeded(t *testing.T) {
	d := makeDeployment(2, "v2")
	now := ctrltest.Epoch()
	d.Annotations = map[string]string{RevisionAnnotation: "2"}
	sets := []*appsv1.ReplicaSet{rsFor(d, "v1", 2, 2, 1, time.Hour), rsFor(d, "v2", 1, 0, 2, time.Hour)}
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 3, UpdatedReplicas: 1, ReadyReplicas: 2, AvailableReplicas: 2, UnavailableReplicas: 1,
		Conditions: []appsv1.DeploymentCondition{
			newCondition(appsv1.DeploymentAvailable, corev1.ConditionTrue, ReasonMinimumReplicasAvailable, "Deployment has minimum availability.", now.Add(-time.Hour)),
			newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonReplicaSetUpdated, "x", now.Add(-601*time.Second)),
		}}
	f := newFixture(t, d, sets)
	c := condition(lastStatus(t, f.sync(t)), appsv1.DeploymentProgressing)
	if c == nil || c.Status != corev1.ConditionFalse || c.Reason != ReasonProgressDeadlineExceeded ||
		c.Message != fmt.Sprintf("ReplicaSet %q has timed out progressing.", "web-"+hashOf("v2")) {
		t.Fatalf("progressing %+v", c)
	}

	// Not yet past the deadline: no status write, but a requeue for when it passes.
	d.Status.Conditions[1].LastUpdateTime = metav1.NewTime(now.Add(-500 * time.Second))
	f = newFixture(t, d, sets)
	if w := f.sync(t); len(w) != 0 {
		t.Fatalf("wrote %q", ctrltest.Describe(w))
	}
	f.env.Clock.Step(102 * time.Second)
	deadline := time.Now().Add(5 * time.Second)
	for f.ctrl.loop.Queue.Len() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("not requeued at the progress deadline")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestRollbackReusesOldReplicaSet(t *testing.T) {
	// kubectl rollout undo wrote v1's template back.
	d := makeDeployment(3, "v1")
	d.Annotations = map[string]string{RevisionAnnotation: "2"}
	v1 := rsFor(d, "v1", 0, 0, 1, 2*time.Hour)
	v2 := rsFor(d, "v2", 3, 3, 2, time.Hour)
	f := newFixture(t, d, []*appsv1.ReplicaSet{v1, v2})
	actions := f.sync(t)
	var revived *appsv1.ReplicaSet
	for _, a := range actions {
		if u, ok := a.(clienttesting.UpdateAction); ok && a.GetResource().Resource == "replicasets" {
			if rs := u.GetObject().(*appsv1.ReplicaSet); rs.Name == v1.Name && revived == nil {
				revived = rs
			}
		}
	}
	if revived == nil || revived.Annotations[RevisionAnnotation] != "3" || revived.Annotations[RevisionHistoryAnnotation] != "1" {
		t.Fatalf("revived %v (%q)", revived, ctrltest.Describe(actions))
	}
	revisionSet := false
	for _, a := range actions {
		u, ok := a.(clienttesting.UpdateAction)
		if !ok || a.GetResource().Resource != "deployments" || a.GetSubresource() != "status" {
			continue
		}
		if d, ok := u.GetObject().(*appsv1.Deployment); ok && d.Annotations[RevisionAnnotation] == "3" {
			revisionSet = true
		}
	}
	if !revisionSet {
		t.Fatalf("deployment revision not set to 3: %q", ctrltest.Describe(actions))
	}
	if got := scaledTo(t, actions); got[v1.Name] != 1 {
		t.Fatalf("revived replicaset not surged: %v", got)
	}
}

func TestAdoptsMatchingOrphanReplicaSet(t *testing.T) {
	d := makeDeployment(3, "v1")
	orphan := rsFor(d, "v1", 3, 3, 1, time.Hour)
	orphan.OwnerReferences = nil
	f := newFixture(t, d, []*appsv1.ReplicaSet{orphan})
	actions := f.sync(t)
	if got := ctrltest.Describe(actions); len(got) == 0 || got[0] != "patch replicasets "+orphan.Name {
		t.Fatalf("actions %q", got)
	}
	if slices.ContainsFunc(actions, func(a clienttesting.Action) bool { return a.GetVerb() == "create" }) {
		t.Fatal("created a replicaset instead of adopting")
	}
}

func TestFenceposts(t *testing.T) {
	tests := []struct {
		replicas           int32
		surge, unavailable intstr.IntOrString
		wantS, wantU       int32
	}{
		{10, intstr.FromString("25%"), intstr.FromString("25%"), 3, 2},
		{1, intstr.FromString("25%"), intstr.FromString("25%"), 1, 0},
		{3, intstr.FromInt32(0), intstr.FromInt32(0), 0, 1},
		{4, intstr.FromInt32(2), intstr.FromString("50%"), 2, 2},
	}
	for _, tt := range tests {
		d := makeDeployment(tt.replicas, "v1")
		d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxSurge: &tt.surge, MaxUnavailable: &tt.unavailable}
		if s, u := maxSurge(d), maxUnavailable(d); s != tt.wantS || u != tt.wantU {
			t.Errorf("replicas %d surge %s unavailable %s: got %d/%d, want %d/%d", tt.replicas, tt.surge.String(), tt.unavailable.String(), s, u, tt.wantS, tt.wantU)
		}
	}
}

// TestOwnReplicaSetMissingFromTheCacheIsNoCollision: a ReplicaSet the API has but the cache does not
// show yet (a new leadership term, or our own create's event still on its way) is recognised as the
// Deployment's own, not counted as a hash collision that would start a second ReplicaSet of the
// same template.
func TestOwnReplicaSetMissingFromTheCacheIsNoCollision(t *testing.T) {
	d := makeDeployment(3, "v1")
	existing := rsFor(d, "v1", 3, 3, 1, time.Minute)
	env := ctrltest.NewEnv(d, existing)
	ctrl, err := New(env.Deps)
	if err != nil {
		t.Fatal(err)
	}
	ctrltest.Seed(t, env.Factory.Apps().V1().Deployments().Informer(), d)
	if err := ctrl.Sync(context.Background(), "default/web"); err != nil {
		t.Fatalf("sync: %v", err)
	}
	for _, a := range env.Writes() {
		if u, ok := a.(clienttesting.UpdateAction); ok && a.GetSubresource() == "status" {
			if st := u.GetObject().(*appsv1.Deployment).Status; st.CollisionCount != nil {
				t.Fatalf("collisionCount bumped to %d for the Deployment's own ReplicaSet", *st.CollisionCount)
			}
		}
	}
}

// TestProportionalSizes: the sizes of a mid-rollout resize, with Kubernetes' rounding. The first
// row is the conformance spec "deployment should support proportional scaling": 10 replicas
// (maxSurge 3) stuck with 8 old and 5 new, scaled to 30, must give 20 and 13 (flooring each share
// and handing the remainder to the biggest set gave 21 and 12).
func TestProportionalSizes(t *testing.T) {
	set := func(name string, size int32, sizedFor string, age time.Duration) *appsv1.ReplicaSet {
		rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(ctrltest.Epoch().Add(-age)),
			Annotations: map[string]string{}}, Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To(size)}}
		if sizedFor != "" {
			rs.Annotations[MaxReplicasAnnotation] = sizedFor
		}
		return rs
	}
	tests := []struct {
		name              string
		sets              []*appsv1.ReplicaSet
		replicas, allowed int32
		statusReplicas    int32
		want              map[string]int32
	}{
		{"spec: 10 to 30", []*appsv1.ReplicaSet{set("old", 8, "13", time.Hour), set("new", 5, "13", time.Minute)}, 30, 33, 13,
			map[string]int32{"old": 20, "new": 13}},
		{"back: 30 to 10", []*appsv1.ReplicaSet{set("old", 20, "33", time.Hour), set("new", 13, "33", time.Minute)}, 10, 13, 33,
			map[string]int32{"old": 8, "new": 5}},
		{"to zero", []*appsv1.ReplicaSet{set("old", 8, "13", time.Hour), set("new", 5, "13", time.Minute)}, 0, 0, 13,
			map[string]int32{"old": 0, "new": 0}},
		{"no annotation: status replicas", []*appsv1.ReplicaSet{set("old", 6, "", time.Hour), set("new", 2, "", time.Minute)}, 20, 25, 8,
			map[string]int32{"old": 19, "new": 6}},
		// Equal sizes: the newer one takes the remainder when growing, the older when shrinking.
		{"tie grows newer", []*appsv1.ReplicaSet{set("old", 3, "6", time.Hour), set("new", 3, "6", time.Minute)}, 6, 7, 6,
			map[string]int32{"old": 3, "new": 4}},
		{"tie shrinks older", []*appsv1.ReplicaSet{set("old", 3, "6", time.Hour), set("new", 3, "6", time.Minute)}, 4, 5, 6,
			map[string]int32{"old": 2, "new": 3}},
		{"an empty set stays empty", []*appsv1.ReplicaSet{set("old", 4, "5", time.Hour), set("mid", 0, "5", time.Minute*30), set("new", 1, "5", time.Minute)}, 8, 10, 5,
			map[string]int32{"old": 8, "mid": 0, "new": 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sets, sizes := proportionalSizes(tt.sets, tt.replicas, tt.allowed, tt.statusReplicas)
			got := map[string]int32{}
			for i, rs := range sets {
				got[rs.Name] = sizes[i]
			}
			if !mapsEqual(got, tt.want) {
				t.Fatalf("sizes %v, want %v", got, tt.want)
			}
		})
	}
}
