package replication

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/internal/controller/ctrltest"
)

var web = map[string]string{"app": "web"}

func makeRC(name string, replicas int32) *corev1.ReplicationController {
	return &corev1.ReplicationController{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name), Generation: 2},
		Spec: corev1.ReplicationControllerSpec{
			Replicas: ptr.To(replicas),
			Selector: web,
			Template: &corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: web},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "img"}}},
			},
		},
	}
}

func sync(t *testing.T, rc *corev1.ReplicationController, pods ...*corev1.Pod) *ctrltest.Env {
	t.Helper()
	objs := []runtime.Object{rc}
	for _, p := range pods {
		objs = append(objs, p)
	}
	env := ctrltest.NewEnv(objs...)
	ctrl, err := New(env.Deps)
	if err != nil {
		t.Fatal(err)
	}
	ctrltest.Seed(t, env.Factory.Core().V1().ReplicationControllers().Informer(), rc)
	for _, p := range pods {
		ctrltest.Seed(t, env.Factory.Core().V1().Pods().Informer(), p)
	}
	if err := ctrl.Sync(context.Background(), "default/"+rc.Name); err != nil {
		t.Fatal(err)
	}
	return env
}

func TestSyncActions(t *testing.T) {
	now := ctrltest.Epoch()
	rc := makeRC("web", 2)
	owned := func(name string) *ctrltest.PodBuilder {
		return ctrltest.MakePod(name).Labels(web).OwnedBy(rc, "v1", "ReplicationController")
	}
	tests := []struct {
		name string
		rc   *corev1.ReplicationController
		pods []*corev1.Pod
		want []string
	}{
		{"creates missing pods", makeRC("web", 2), nil,
			[]string{"create pods web-*", "create pods web-*", "update replicationcontrollers/status web"}},
		{"deletes surplus", makeRC("web", 1), []*corev1.Pod{owned("a").Ready(now).Obj(), owned("b").Obj()},
			[]string{"delete pods b", "update replicationcontrollers/status web"}},
		{"adopts a matching orphan", makeRC("web", 1), []*corev1.Pod{ctrltest.MakePod("orphan").Labels(web).Obj()},
			[]string{"patch pods orphan", "update replicationcontrollers/status web"}},
		{"ignores a matching pod another controller owns", makeRC("web", 1),
			[]*corev1.Pod{ctrltest.MakePod("rs-pod").Labels(web).OwnedBy(ctrltest.MakeReplicaSet("other", 1, web), "apps/v1", "ReplicaSet").Obj()},
			[]string{"create pods web-*", "update replicationcontrollers/status web"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := sync(t, tt.rc, tt.pods...)
			got := ctrltest.Describe(env.Writes())
			slices.Sort(got)
			want := slices.Clone(tt.want)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Fatalf("actions:\n got %q\nwant %q", got, want)
			}
		})
	}
}

func TestCreatedPodsAndStatus(t *testing.T) {
	env := sync(t, makeRC("web", 1))
	var pod *corev1.Pod
	var status *corev1.ReplicationController
	for _, a := range env.Writes() {
		switch {
		case a.GetVerb() == "create":
			pod = a.(clienttesting.CreateAction).GetObject().(*corev1.Pod)
		case a.GetSubresource() == "status":
			status = a.(clienttesting.UpdateAction).GetObject().(*corev1.ReplicationController)
		}
	}
	if pod == nil || status == nil {
		t.Fatal("no pod create or status update")
	}
	ref := metav1.GetControllerOf(pod)
	if ref == nil || ref.APIVersion != "v1" || ref.Kind != "ReplicationController" || ref.Name != "web" || ref.UID != "uid-web" {
		t.Fatalf("controllerRef = %+v", ref)
	}
	// The status went to the RC in its own type, its spec untouched.
	if status.Status.ObservedGeneration != 2 || status.Spec.Selector["app"] != "web" || *status.Spec.Replicas != 1 {
		t.Fatalf("status update = %+v", status)
	}
	if ev := env.Events(); len(ev) != 1 {
		t.Fatalf("events = %q", ev)
	}
}

func TestConversionRoundTrip(t *testing.T) {
	rc := makeRC("web", 3)
	rc.Spec.MinReadySeconds = 5
	rc.Status = corev1.ReplicationControllerStatus{
		Replicas: 3, FullyLabeledReplicas: 3, ReadyReplicas: 2, AvailableReplicas: 1, ObservedGeneration: 2,
		Conditions: []corev1.ReplicationControllerCondition{{Type: corev1.ReplicationControllerReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedCreate"}},
	}
	back, err := FromReplicaSet(ToReplicaSet(rc))
	if err != nil {
		t.Fatal(err)
	}
	if !apiequality.Semantic.DeepEqual(back, rc) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", back, rc)
	}
	rs := ToReplicaSet(rc)
	rs.Spec.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "a", Operator: metav1.LabelSelectorOpExists}}
	if _, err := FromReplicaSet(rs); err == nil {
		t.Fatal("a selector with expressions converted")
	}
}
