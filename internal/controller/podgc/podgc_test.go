package podgc

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"

	"github.com/skiff-sh/skiff/internal/controller/ctrltest"
)

type fixture struct {
	env *ctrltest.Env
	gc  *Controller
}

func newFixture(t *testing.T, threshold int, nodes []*corev1.Node, pods ...*corev1.Pod) *fixture {
	t.Helper()
	var objs []runtime.Object
	for _, n := range nodes {
		objs = append(objs, n)
	}
	for _, p := range pods {
		objs = append(objs, p)
	}
	env := ctrltest.NewEnv(objs...)
	gc := New(env.Deps, threshold)
	for _, n := range nodes {
		ctrltest.Seed(t, env.Factory.Core().V1().Nodes().Informer(), n)
	}
	for _, p := range pods {
		ctrltest.Seed(t, env.Factory.Core().V1().Pods().Informer(), p)
	}
	return &fixture{env: env, gc: gc}
}

func (f *fixture) sync(t *testing.T) []string {
	t.Helper()
	if err := f.gc.Sync(context.Background(), syncKey); err != nil {
		t.Fatal(err)
	}
	return ctrltest.Describe(f.env.Writes())
}

func node(name string) *corev1.Node { return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}} }

func TestTerminatedThreshold(t *testing.T) {
	epoch := ctrltest.Epoch()
	var pods []*corev1.Pod
	for i, name := range []string{"oldest", "older", "newer", "newest"} {
		pods = append(pods, ctrltest.MakePod(name).Node("n1").Phase(corev1.PodSucceeded).Created(epoch.Add(time.Duration(i)*time.Minute)).Obj())
	}
	pods = append(pods, ctrltest.MakePod("running").Node("n1").Running().Obj())
	f := newFixture(t, 2, []*corev1.Node{node("n1")}, pods...)
	got := f.sync(t)
	slices.Sort(got)
	if want := []string{"delete pods older", "delete pods oldest"}; !slices.Equal(got, want) {
		t.Fatalf("actions %q, want %q", got, want)
	}
	f = newFixture(t, 0, []*corev1.Node{node("n1")}, pods...)
	if got := f.sync(t); len(got) != 0 {
		t.Fatalf("threshold 0 must disable: %q", got)
	}
}

func TestOrphanedPodsAfterQuarantine(t *testing.T) {
	orphan := ctrltest.MakePod("orphan").Node("gone").Running().Obj()
	kept := ctrltest.MakePod("kept").Node("n1").Running().Obj()
	f := newFixture(t, 100, []*corev1.Node{node("n1")}, orphan, kept)
	if got := f.sync(t); len(got) != 0 {
		t.Fatalf("acted within quarantine: %q", got)
	}
	f.env.Clock.Step(Quarantine)
	if err := f.gc.Sync(context.Background(), syncKey); err != nil {
		t.Fatal(err)
	}
	writes := f.env.Writes()
	if got := ctrltest.Describe(writes); !slices.Equal(got, []string{"update pods/status orphan", "delete pods orphan"}) {
		t.Fatalf("actions %q", got)
	}
	marked := writes[0].(clienttesting.UpdateAction).GetObject().(*corev1.Pod)
	last := marked.Status.Conditions[len(marked.Status.Conditions)-1]
	if marked.Status.Phase != corev1.PodFailed || last.Type != corev1.DisruptionTarget || last.Reason != "DeletionByPodGC" {
		t.Fatalf("status %+v", marked.Status)
	}
	if grace := writes[1].(clienttesting.DeleteAction).GetDeleteOptions().GracePeriodSeconds; grace == nil || *grace != 0 {
		t.Fatalf("not a force delete: %v", grace)
	}
}

func TestNodeBackInTheAPIIsNotCollected(t *testing.T) {
	orphan := ctrltest.MakePod("orphan").Node("lagging").Running().Obj()
	f := newFixture(t, 100, nil, orphan)
	if _, err := f.env.Client.CoreV1().Nodes().Create(context.Background(), node("lagging"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.sync(t)
	f.env.Clock.Step(Quarantine)
	if got := f.sync(t); len(got) != 0 {
		t.Fatalf("collected pods of a live node: %q", got)
	}
}

func TestUnscheduledTerminating(t *testing.T) {
	stuck := ctrltest.MakePod("stuck").Deleting(ctrltest.Epoch()).Obj()
	f := newFixture(t, 100, nil, stuck)
	if got := f.sync(t); !slices.Equal(got, []string{"delete pods stuck"}) {
		t.Fatalf("actions %q", got)
	}
}
