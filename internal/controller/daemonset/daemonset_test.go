package daemonset

import (
	"context"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/internal/controller/ctrltest"
	"github.com/skiff-sh/skiff/internal/controller/ctrlutil"
)

func agent() map[string]string { return map[string]string{"app": "agent"} }

func makeDaemonSet() *appsv1.DaemonSet {
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "default", UID: "uid-ds", Generation: 1},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: agent()},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: agent()},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "agent:v1"}}}},
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType, RollingUpdate: &appsv1.RollingUpdateDaemonSet{
				MaxUnavailable: ptr.To(intstr.FromInt32(1)), MaxSurge: ptr.To(intstr.FromInt32(0))}},
		},
	}
}

func makeNode(name string, labels map[string]string, taints ...corev1.Taint) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: corev1.NodeSpec{Taints: taints}}
}

func controlPlaneTaint() corev1.Taint {
	return corev1.Taint{Key: "node-role.kubernetes.io/control-plane", Effect: corev1.TaintEffectNoSchedule}
}

func TestShouldRun(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*appsv1.DaemonSet)
		node   *corev1.Node
		want   bool
	}{
		{"plain node", nil, makeNode("n", nil), true},
		{"control-plane taint not tolerated", nil, makeNode("n", nil, controlPlaneTaint()), false},
		{"control-plane taint tolerated", func(ds *appsv1.DaemonSet) {
			ds.Spec.Template.Spec.Tolerations = []corev1.Toleration{{Key: "node-role.kubernetes.io/control-plane", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
		}, makeNode("n", nil, controlPlaneTaint()), true},
		{"unreachable and cordoned nodes keep daemons", nil, makeNode("n", nil,
			corev1.Taint{Key: "node.kubernetes.io/unreachable", Effect: corev1.TaintEffectNoExecute},
			corev1.Taint{Key: "node.kubernetes.io/unschedulable", Effect: corev1.TaintEffectNoSchedule}), true},
		{"PreferNoSchedule ignored", nil, makeNode("n", nil, corev1.Taint{Key: "x", Effect: corev1.TaintEffectPreferNoSchedule}), true},
		{"nodeSelector mismatch", func(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.NodeSelector = map[string]string{"disk": "ssd"} }, makeNode("n", nil), false},
		{"nodeSelector match", func(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.NodeSelector = map[string]string{"disk": "ssd"} },
			makeNode("n", map[string]string{"disk": "ssd"}), true},
		{"affinity NotIn", func(ds *appsv1.DaemonSet) {
			ds.Spec.Template.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"a"}}}}}}}}
		}, makeNode("n", map[string]string{"zone": "a"}), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ds := makeDaemonSet()
			if tt.mutate != nil {
				tt.mutate(ds)
			}
			if got := ShouldRun(ds, tt.node); got != tt.want {
				t.Fatalf("ShouldRun = %v", got)
			}
		})
	}
}

type fixture struct {
	env  *ctrltest.Env
	ctrl *Controller
}

func newFixture(t *testing.T, ds *appsv1.DaemonSet, nodes []*corev1.Node, pods ...*corev1.Pod) *fixture {
	t.Helper()
	objs := []runtime.Object{ds}
	for _, n := range nodes {
		objs = append(objs, n)
	}
	for _, p := range pods {
		objs = append(objs, p)
	}
	env := ctrltest.NewEnv(objs...)
	c, err := New(env.Deps)
	if err != nil {
		t.Fatal(err)
	}
	ctrltest.Seed(t, env.Factory.Apps().V1().DaemonSets().Informer(), ds)
	for _, n := range nodes {
		ctrltest.Seed(t, env.Factory.Core().V1().Nodes().Informer(), n)
	}
	for _, p := range pods {
		ctrltest.Seed(t, env.Factory.Core().V1().Pods().Informer(), p)
	}
	return &fixture{env: env, ctrl: c}
}

func (f *fixture) sync(t *testing.T) []clienttesting.Action {
	t.Helper()
	if err := f.ctrl.Sync(context.Background(), "default/agent"); err != nil {
		t.Fatal(err)
	}
	return f.env.Writes()
}

// daemonPod is a running, available daemon pod on node at the given template image.
func daemonPod(ds *appsv1.DaemonSet, node, image string) *corev1.Pod {
	tmpl := ds.Spec.Template.DeepCopy()
	tmpl.Spec.Containers[0].Image = image
	p := ctrltest.MakePod("agent-"+node+"-"+strings.ReplaceAll(image, ":", "")).Labels(map[string]string{"app": "agent",
		RevisionHashLabel: ctrlutil.TemplateHash(tmpl, nil)}).OwnedBy(ds, "apps/v1", "DaemonSet").Node(node).Ready(ctrltest.Epoch().Add(-60e9)).Obj()
	p.UID = types.UID("uid-" + p.Name)
	return p
}

func podCreates(actions []clienttesting.Action) []string {
	var nodes []string
	for _, a := range actions {
		if a.GetVerb() == "create" && a.GetResource().Resource == "pods" {
			nodes = append(nodes, nodeOf(a.(clienttesting.CreateAction).GetObject().(*corev1.Pod)))
		}
	}
	slices.Sort(nodes)
	return nodes
}

func podDeletes(actions []clienttesting.Action) []string {
	var names []string
	for _, a := range actions {
		if a.GetVerb() == "delete" && a.GetResource().Resource == "pods" {
			names = append(names, a.(clienttesting.DeleteAction).GetName())
		}
	}
	slices.Sort(names)
	return names
}

func TestCreatesOnePodPerEligibleNode(t *testing.T) {
	ds := makeDaemonSet()
	nodes := []*corev1.Node{makeNode("a", nil), makeNode("b", nil), makeNode("cp", nil, controlPlaneTaint())}
	f := newFixture(t, ds, nodes)
	actions := f.sync(t)
	if got := podCreates(actions); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("pods created on %v", got)
	}
	if got := ctrltest.Describe(actions); got[0] != "create controllerrevisions agent-"+ctrlutil.TemplateHash(&ds.Spec.Template, nil) {
		t.Fatalf("first action %q", got[0])
	}
	for _, a := range actions {
		if a.GetVerb() == "create" && a.GetResource().Resource == "pods" {
			p := a.(clienttesting.CreateAction).GetObject().(*corev1.Pod)
			if p.Spec.NodeName != "" || p.Labels[RevisionHashLabel] == "" || len(p.Spec.Tolerations) < 6 {
				t.Fatalf("pod %+v", p)
			}
		}
		if a.GetVerb() == "update" && a.GetSubresource() == "status" {
			s := a.(clienttesting.UpdateAction).GetObject().(*appsv1.DaemonSet).Status
			if s.DesiredNumberScheduled != 2 || s.CurrentNumberScheduled != 0 || s.NumberUnavailable != 2 {
				t.Fatalf("status %+v", s)
			}
		}
	}
}

func TestRemovesMisscheduledAndFailedPods(t *testing.T) {
	ds := makeDaemonSet()
	ds.Spec.Template.Spec.NodeSelector = map[string]string{"role": "edge"}
	nodes := []*corev1.Node{makeNode("edge", map[string]string{"role": "edge"}), makeNode("core", nil)}
	stray := daemonPod(ds, "core", "agent:v1")
	failed := daemonPod(ds, "edge", "agent:v1")
	failed.Status.Phase = corev1.PodFailed
	f := newFixture(t, ds, nodes, stray, failed)
	actions := f.sync(t)
	if got := podDeletes(actions); !slices.Equal(got, []string{stray.Name, failed.Name}) {
		t.Fatalf("deleted %v", got)
	}
}

func TestRollingUpdate(t *testing.T) {
	nodes := []*corev1.Node{makeNode("a", nil), makeNode("b", nil), makeNode("c", nil)}
	t.Run("maxUnavailable 1 replaces one node at a time", func(t *testing.T) {
		ds := makeDaemonSet()
		ds.Spec.Template.Spec.Containers[0].Image = "agent:v2"
		f := newFixture(t, ds, nodes, daemonPod(ds, "a", "agent:v1"), daemonPod(ds, "b", "agent:v1"), daemonPod(ds, "c", "agent:v1"))
		actions := f.sync(t)
		if got := podDeletes(actions); len(got) != 1 || len(podCreates(actions)) != 0 {
			t.Fatalf("deleted %v created %v", got, podCreates(actions))
		}
	})
	t.Run("a node already down uses the budget", func(t *testing.T) {
		ds := makeDaemonSet()
		ds.Spec.Template.Spec.Containers[0].Image = "agent:v2"
		f := newFixture(t, ds, nodes, daemonPod(ds, "a", "agent:v1"), daemonPod(ds, "b", "agent:v1"))
		actions := f.sync(t)
		if got := podDeletes(actions); len(got) != 0 || !slices.Equal(podCreates(actions), []string{"c"}) {
			t.Fatalf("deleted %v created %v", got, podCreates(actions))
		}
	})
	t.Run("maxSurge starts the new pod first", func(t *testing.T) {
		ds := makeDaemonSet()
		ds.Spec.Template.Spec.Containers[0].Image = "agent:v2"
		ds.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateDaemonSet{MaxUnavailable: ptr.To(intstr.FromInt32(0)), MaxSurge: ptr.To(intstr.FromInt32(1))}
		f := newFixture(t, ds, nodes[:2], daemonPod(ds, "a", "agent:v1"), daemonPod(ds, "b", "agent:v1"))
		actions := f.sync(t)
		if got := podDeletes(actions); len(got) != 0 || len(podCreates(actions)) != 1 {
			t.Fatalf("deleted %v created %v", got, podCreates(actions))
		}
		// Once the new pod is available the old one goes.
		f = newFixture(t, ds, nodes[:1], daemonPod(ds, "a", "agent:v1"), daemonPod(ds, "a", "agent:v2"))
		if got := podDeletes(f.sync(t)); !slices.Equal(got, []string{"agent-a-agentv1"}) {
			t.Fatalf("deleted %v", got)
		}
	})
	t.Run("a surge still starting counts against maxSurge", func(t *testing.T) {
		// e2e "should surge pods onto nodes when spec was updated and update strategy is
		// RollingUpdate": node a's new pod is not ready yet, so with maxSurge 1 no other node may
		// start one (each sync started one more before).
		ds := makeDaemonSet()
		ds.Spec.Template.Spec.Containers[0].Image = "agent:v2"
		ds.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateDaemonSet{MaxUnavailable: ptr.To(intstr.FromInt32(0)), MaxSurge: ptr.To(intstr.FromInt32(1))}
		starting := daemonPod(ds, "a", "agent:v2")
		starting.Status.Conditions = nil
		f := newFixture(t, ds, nodes, daemonPod(ds, "a", "agent:v1"), starting, daemonPod(ds, "b", "agent:v1"), daemonPod(ds, "c", "agent:v1"))
		actions := f.sync(t)
		if len(podDeletes(actions)) != 0 || len(podCreates(actions)) != 0 {
			t.Fatalf("actions %q while a surge is starting, want none", ctrltest.Describe(actions))
		}
	})
	t.Run("OnDelete leaves old pods", func(t *testing.T) {
		ds := makeDaemonSet()
		ds.Spec.Template.Spec.Containers[0].Image = "agent:v2"
		ds.Spec.UpdateStrategy = appsv1.DaemonSetUpdateStrategy{Type: appsv1.OnDeleteDaemonSetStrategyType}
		f := newFixture(t, ds, nodes[:1], daemonPod(ds, "a", "agent:v1"))
		actions := f.sync(t)
		if len(podDeletes(actions)) != 0 || len(podCreates(actions)) != 0 {
			t.Fatalf("actions %q", ctrltest.Describe(actions))
		}
	})
}

func TestRevisionDataIsAReplacePatch(t *testing.T) {
	data, err := ctrlutil.RevisionData(&makeDaemonSet().Spec.Template)
	if err != nil {
		t.Fatal(err)
	}
	if s := string(data); !strings.Contains(s, `"$patch":"replace"`) || !strings.Contains(s, `"image":"agent:v1"`) {
		t.Fatalf("data %s", s)
	}
}
