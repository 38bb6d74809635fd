package nodelifecycle

import (
	"context"
	"slices"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/internal/controller/ctrltest"
)

const grace = 40 * time.Second

func makeNode(ready corev1.ConditionStatus, heartbeatAgo time.Duration, taints ...corev1.Taint) *corev1.Node {
	hb := metav1.NewTime(ctrltest.Epoch().Add(-heartbeatAgo))
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", CreationTimestamp: metav1.NewTime(ctrltest.Epoch().Add(-time.Hour))},
		Spec:       corev1.NodeSpec{Taints: taints},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
			{Type: corev1.NodeReady, Status: ready, LastHeartbeatTime: hb, Reason: "KubeletReady"},
			{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, LastHeartbeatTime: hb},
		}},
	}
}

func allUnknown(n *corev1.Node) *corev1.Node {
	for i := range n.Status.Conditions {
		n.Status.Conditions[i].Status = corev1.ConditionUnknown
	}
	return n
}

func lease(renewedAgo time.Duration) *coordinationv1.Lease {
	t := metav1.NewMicroTime(ctrltest.Epoch().Add(-renewedAgo))
	return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "n1", Namespace: LeaseNamespace}, Spec: coordinationv1.LeaseSpec{RenewTime: &t}}
}

func taintKeys(taints []corev1.Taint) []string {
	var out []string
	for _, t := range taints {
		out = append(out, t.Key+":"+string(t.Effect))
	}
	slices.Sort(out)
	return out
}

func TestEvaluate(t *testing.T) {
	now := ctrltest.Epoch()
	unreachable := []corev1.Taint{{Key: TaintUnreachable, Effect: corev1.TaintEffectNoSchedule}, {Key: TaintUnreachable, Effect: corev1.TaintEffectNoExecute, TimeAdded: &metav1.Time{Time: now.Add(-time.Minute)}}}
	tests := []struct {
		name         string
		node         *corev1.Node
		lease        *coordinationv1.Lease
		wantReady    corev1.ConditionStatus // "" = conditions unchanged
		wantTaints   []string               // nil = taints unchanged
		wantNotReady bool
	}{
		{name: "healthy", node: makeNode(corev1.ConditionTrue, 10*time.Second)},
		{name: "lease keeps it alive", node: makeNode(corev1.ConditionTrue, 5*time.Minute), lease: lease(10 * time.Second)},
		{name: "silent past grace", node: makeNode(corev1.ConditionTrue, 41*time.Second), lease: lease(41 * time.Second),
			wantReady: corev1.ConditionUnknown, wantTaints: []string{TaintUnreachable + ":NoExecute", TaintUnreachable + ":NoSchedule"}, wantNotReady: true},
		{name: "kubelet says not ready", node: makeNode(corev1.ConditionFalse, time.Second),
			wantTaints: []string{TaintNotReady + ":NoExecute", TaintNotReady + ":NoSchedule"}, wantNotReady: true},
		{name: "recovered: taints removed, others kept", node: makeNode(corev1.ConditionTrue, time.Second, append(unreachable, corev1.Taint{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule})...),
			wantTaints: []string{"dedicated:NoSchedule"}},
		{name: "already unknown and tainted: nothing", node: allUnknown(makeNode(corev1.ConditionUnknown, time.Hour, unreachable...)), wantNotReady: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan := Evaluate(tt.node, tt.lease, now, grace)
			if plan.NotReady != tt.wantNotReady {
				t.Fatalf("notReady %v", plan.NotReady)
			}
			if tt.wantReady == "" && plan.Conditions != nil {
				t.Fatalf("conditions changed: %+v", plan.Conditions)
			}
			if tt.wantReady != "" {
				for _, c := range plan.Conditions {
					if (c.Type == corev1.NodeReady || c.Type == corev1.NodeMemoryPressure) &&
						(c.Status != tt.wantReady || c.Reason != "NodeStatusUnknown" || c.Message != "Kubelet stopped posting node status.") {
						t.Fatalf("condition %+v", c)
					}
				}
			}
			if tt.wantTaints == nil && plan.Taints != nil {
				t.Fatalf("taints changed: %v", plan.Taints)
			}
			if tt.wantTaints != nil && !slices.Equal(taintKeys(plan.Taints), tt.wantTaints) {
				t.Fatalf("taints %v, want %v", taintKeys(plan.Taints), tt.wantTaints)
			}
			for _, taint := range plan.Taints {
				if taint.Effect == corev1.TaintEffectNoExecute && taint.TimeAdded == nil {
					t.Fatalf("NoExecute taint without timeAdded")
				}
			}
		})
	}
}

func TestPressureAndUnschedulableTaints(t *testing.T) {
	n := makeNode(corev1.ConditionTrue, time.Second)
	n.Status.Conditions[1].Status = corev1.ConditionTrue
	n.Spec.Unschedulable = true
	got := taintKeys(Evaluate(n, nil, ctrltest.Epoch(), grace).Taints)
	if want := []string{TaintMemoryPressure + ":NoSchedule", TaintUnschedulable + ":NoSchedule"}; !slices.Equal(got, want) {
		t.Fatalf("taints %v, want %v", got, want)
	}
}

func TestEvictionTime(t *testing.T) {
	now := ctrltest.Epoch()
	added := &metav1.Time{Time: now.Add(-100 * time.Second)}
	noExecute := []corev1.Taint{{Key: TaintUnreachable, Effect: corev1.TaintEffectNoExecute, TimeAdded: added}}
	tol := func(key string, op corev1.TolerationOperator, seconds *int64) corev1.Toleration {
		return corev1.Toleration{Key: key, Operator: op, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: seconds}
	}
	tests := []struct {
		name   string
		taints []corev1.Taint
		tols   []corev1.Toleration
		want   time.Time
		evict  bool
	}{
		{name: "no NoExecute taints", taints: []corev1.Taint{{Key: "x", Effect: corev1.TaintEffectNoSchedule}}},
		{name: "not tolerated: now", taints: noExecute, want: now, evict: true},
		{name: "default 300s toleration", taints: noExecute, tols: []corev1.Toleration{tol(TaintUnreachable, corev1.TolerationOpExists, ptr.To[int64](300))},
			want: added.Add(300 * time.Second), evict: true},
		{name: "shortest bounded toleration wins", taints: noExecute, tols: []corev1.Toleration{
			tol(TaintUnreachable, corev1.TolerationOpExists, nil), tol(TaintUnreachable, corev1.TolerationOpExists, ptr.To[int64](30))},
			want: added.Add(30 * time.Second), evict: true},
		{name: "tolerated forever", taints: noExecute, tols: []corev1.Toleration{tol(TaintUnreachable, corev1.TolerationOpExists, nil)}},
		{name: "empty key Exists tolerates all", taints: noExecute, tols: []corev1.Toleration{{Operator: corev1.TolerationOpExists}}},
		{name: "other key does not tolerate", taints: noExecute, tols: []corev1.Toleration{tol("other", corev1.TolerationOpExists, nil)}, want: now, evict: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := ctrltest.MakePod("p").Obj()
			pod.Spec.Tolerations = tt.tols
			at, evict := EvictionTime(pod, tt.taints, now)
			if evict != tt.evict || (evict && !at.Equal(tt.want)) {
				t.Fatalf("got %v %v, want %v %v", at, evict, tt.want, tt.evict)
			}
		})
	}
}

type fixture struct {
	env  *ctrltest.Env
	ctrl *Controller
}

func newFixture(t *testing.T, node *corev1.Node, pods ...*corev1.Pod) *fixture {
	t.Helper()
	objs := []runtime.Object{node}
	for _, p := range pods {
		objs = append(objs, p)
	}
	env := ctrltest.NewEnv(objs...)
	c, err := New(env.Deps, grace)
	if err != nil {
		t.Fatal(err)
	}
	ctrltest.Seed(t, env.Factory.Core().V1().Nodes().Informer(), node)
	for _, p := range pods {
		ctrltest.Seed(t, env.Factory.Core().V1().Pods().Informer(), p)
	}
	return &fixture{env: env, ctrl: c}
}

func TestSilentNodeIsMarkedAndTainted(t *testing.T) {
	pod := ctrltest.MakePod("web").Node("n1").Ready(ctrltest.Epoch().Add(-time.Hour)).Obj()
	f := newFixture(t, makeNode(corev1.ConditionTrue, 41*time.Second), pod)
	if err := f.ctrl.Sync(context.Background(), nodePrefix+"n1"); err != nil {
		t.Fatal(err)
	}
	actions := f.env.Writes()
	if got := ctrltest.Describe(actions); !slices.Equal(got, []string{"update nodes/status n1", "update nodes n1", "update pods/status web"}) {
		t.Fatalf("actions %q", got)
	}
	p := actions[2].(clienttesting.UpdateAction).GetObject().(*corev1.Pod)
	if p.Status.Conditions[0].Status != corev1.ConditionFalse {
		t.Fatalf("pod still ready: %+v", p.Status.Conditions)
	}
}

func TestTaintEvictionAfterTolerationSeconds(t *testing.T) {
	added := &metav1.Time{Time: ctrltest.Epoch()}
	node := makeNode(corev1.ConditionUnknown, time.Hour,
		corev1.Taint{Key: TaintUnreachable, Effect: corev1.TaintEffectNoSchedule},
		corev1.Taint{Key: TaintUnreachable, Effect: corev1.TaintEffectNoExecute, TimeAdded: added})
	pod := ctrltest.MakePod("web").Node("n1").Running().Obj()
	pod.Spec.Tolerations = []corev1.Toleration{{Key: TaintUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)}}
	f := newFixture(t, node, pod)
	sync := func() []string {
		if err := f.ctrl.Sync(context.Background(), podPrefix+"default/web"); err != nil {
			t.Fatal(err)
		}
		return ctrltest.Describe(f.env.Writes())
	}
	if got := sync(); len(got) != 0 {
		t.Fatalf("evicted within tolerationSeconds: %q", got)
	}
	f.env.Clock.Step(300 * time.Second)
	if got := sync(); !slices.Equal(got, []string{"update pods/status web", "delete pods web"}) {
		t.Fatalf("actions %q", got)
	}
	if ev := f.env.Events(); len(ev) != 1 || ev[0] != "Normal TaintManagerEviction Marking for deletion Pod default/web" {
		t.Fatalf("events %q", ev)
	}
}
