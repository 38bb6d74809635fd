package scheduler

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	st "github.com/skiff-sh/skiff/internal/scheduler/schedtest"
)

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// startScheduler runs a scheduler (no leader election) against cs until the test ends.
func startScheduler(t *testing.T, cs *fake.Clientset, reg *prometheus.Registry) *Scheduler {
	s, _ := startSchedulerWithFactory(t, cs, reg)
	return s
}

func startSchedulerWithFactory(t *testing.T, cs *fake.Clientset, reg *prometheus.Registry) (*Scheduler, informers.SharedInformerFactory) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	factory := informers.NewSharedInformerFactory(cs, 0)
	cfg := Config{Client: cs, Logger: quietLogger()}
	if reg != nil {
		cfg.Registerer = reg
	}
	s, err := New(cfg, factory)
	if err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	t.Cleanup(func() {
		cancel()
		<-done
		s.Shutdown()
		factory.Shutdown()
	})
	return s, factory
}

func create(t *testing.T, cs *fake.Clientset, objs ...any) {
	t.Helper()
	ctx := context.Background()
	for _, o := range objs {
		var err error
		switch obj := o.(type) {
		case *v1.Node:
			_, err = cs.CoreV1().Nodes().Create(ctx, obj, metav1.CreateOptions{})
		case *v1.Pod:
			_, err = cs.CoreV1().Pods(obj.Namespace).Create(ctx, obj, metav1.CreateOptions{})
		case *policyv1.PodDisruptionBudget:
			_, err = cs.PolicyV1().PodDisruptionBudgets(obj.Namespace).Create(ctx, obj, metav1.CreateOptions{})
		default:
			t.Fatalf("unsupported %T", o)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 15*time.Second, true, func(context.Context) (bool, error) {
		return cond(), nil
	})
	if err != nil {
		t.Fatalf("timed out waiting for %s", what)
	}
}

func getPod(t *testing.T, cs *fake.Clientset, name string) *v1.Pod {
	t.Helper()
	p, err := cs.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return p
}

func boundTo(cs *fake.Clientset, t *testing.T, name string) string {
	if p := getPod(t, cs, name); p != nil {
		return p.Spec.NodeName
	}
	return ""
}

func scheduledCondition(p *v1.Pod) *v1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == v1.PodScheduled {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

func TestSchedulesPodsAndBinds(t *testing.T) {
	cs := fake.NewClientset()
	st.InstallBindingReactor(cs, nil)
	startScheduler(t, cs, nil)
	create(t, cs,
		st.MakeNode().Name("n1").Capacity(st.Res{"cpu": "2", "memory": "4Gi"}).Obj(),
		st.MakeNode().Name("n2").Capacity(st.Res{"cpu": "2", "memory": "4Gi"}).Obj(),
		st.MakeNode().Name("cp").Capacity(st.Res{"cpu": "8", "memory": "8Gi"}).Taint("node-role.kubernetes.io/control-plane", "", v1.TaintEffectNoSchedule).Obj(),
	)
	for i := range 4 {
		create(t, cs, st.MakePod().Name(fmt.Sprintf("p%d", i)).Req(st.Res{"cpu": "1"}).Obj())
	}
	// A pod for another scheduler is left alone.
	create(t, cs, st.MakePod().Name("other").SchedulerName("someone-else").Obj())
	waitFor(t, "4 pods bound", func() bool { return len(st.Bindings(cs)) == 4 })
	perNode := map[string]int{}
	for i := range 4 {
		perNode[boundTo(cs, t, fmt.Sprintf("p%d", i))]++
	}
	if perNode["n1"] != 2 || perNode["n2"] != 2 {
		t.Fatalf("want 2 pods on each of n1, n2; got %v (bindings %v)", perNode, st.Bindings(cs))
	}
	if boundTo(cs, t, "other") != "" {
		t.Fatal("pod of another scheduler must not be bound")
	}
	waitFor(t, "Scheduled events", func() bool {
		return len(eventsWithReason(t, cs, "Scheduled")) == 4
	})
	if msg := eventsWithReason(t, cs, "Scheduled")[0].Message; !strings.HasPrefix(msg, "Successfully assigned default/p") {
		t.Fatalf("event message %q", msg)
	}
}

func eventsWithReason(t *testing.T, cs *fake.Clientset, reason string) []v1.Event {
	t.Helper()
	list, err := cs.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []v1.Event
	for _, e := range list.Items {
		if e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}

func TestFailedSchedulingMessageAndRetryOnNodeAdd(t *testing.T) {
	cs := fake.NewClientset()
	st.InstallBindingReactor(cs, nil)
	for i := range 3 {
		create(t, cs, st.MakeNode().Name(fmt.Sprintf("small%d", i)).Capacity(st.Res{"cpu": "1"}).Obj())
	}
	for i := range 2 {
		create(t, cs, st.MakeNode().Name(fmt.Sprintf("cp%d", i)).Capacity(st.Res{"cpu": "8"}).Taint("node-role.kubernetes.io/control-plane", "", v1.TaintEffectNoSchedule).Obj())
	}
	// The nodes exist before the scheduler starts, so its synced cache holds all five when the pod
	// comes: a node event still in flight made the message count four under the race detector.
	startScheduler(t, cs, nil)
	create(t, cs, st.MakePod().Name("big").Req(st.Res{"cpu": "2"}).Obj())
	want := "0/5 nodes are available: 2 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }, 3 Insufficient cpu. " +
		"preemption: 0/5 nodes are available: 2 Preemption is not helpful for scheduling, 3 No preemption victims found for incoming pod."
	waitFor(t, "PodScheduled=False", func() bool {
		p := getPod(t, cs, "big")
		c := scheduledCondition(p)
		return c != nil && c.Status == v1.ConditionFalse
	})
	c := scheduledCondition(getPod(t, cs, "big"))
	if c.Reason != "Unschedulable" || c.Message != want {
		t.Fatalf("condition %s: %q\nwant %q", c.Reason, c.Message, want)
	}
	waitFor(t, "FailedScheduling event", func() bool { return len(eventsWithReason(t, cs, "FailedScheduling")) > 0 })
	ev := eventsWithReason(t, cs, "FailedScheduling")[0]
	if ev.Type != v1.EventTypeWarning || ev.Message != want || ev.InvolvedObject.Name != "big" || ev.Source.Component != "default-scheduler" {
		t.Fatalf("event %+v", ev)
	}
	// Status must have gone through pods/status.
	patched := false
	for _, a := range cs.Actions() {
		if a.GetVerb() == "patch" && a.GetResource().Resource == "pods" && a.GetSubresource() == "status" {
			patched = true
		}
	}
	if !patched {
		t.Fatal("no pods/status patch recorded")
	}
	// A node that fits appears: the pod is retried because of the event.
	create(t, cs, st.MakeNode().Name("roomy").Capacity(st.Res{"cpu": "4"}).Obj())
	waitFor(t, "big bound to roomy", func() bool { return boundTo(cs, t, "big") == "roomy" })
}

func TestPreemption(t *testing.T) {
	cs := fake.NewClientset()
	st.InstallBindingReactor(cs, nil)
	s := startScheduler(t, cs, nil)
	create(t, cs, st.MakeNode().Name("n1").Capacity(st.Res{"cpu": "2"}).Obj())
	create(t, cs,
		st.MakePod().Name("low").Node("n1").Priority(0).Req(st.Res{"cpu": "1500m"}).GracePeriod(30).Obj(),
		st.MakePod().Name("keeper").Node("n1").Priority(2000).Req(st.Res{"cpu": "500m"}).Obj(),
	)
	waitFor(t, "cache has the running pods", func() bool { _, pods, _ := s.Cache().Counts(); return pods == 2 })
	create(t, cs, st.MakePod().Name("high").Priority(1000).Req(st.Res{"cpu": "1"}).Obj())
	waitFor(t, "high bound to n1", func() bool { return boundTo(cs, t, "high") == "n1" })
	if getPod(t, cs, "low") != nil {
		t.Fatal("victim must be deleted")
	}
	if getPod(t, cs, "keeper") == nil {
		t.Fatal("higher-priority pod must not be a victim")
	}
	var sawNomination, sawDisruption, sawDelete bool
	for _, a := range cs.Actions() {
		if p, ok := a.(clienttesting.PatchAction); ok && a.GetSubresource() == "status" {
			body := string(p.GetPatch())
			if p.GetName() == "high" && strings.Contains(body, `"nominatedNodeName":"n1"`) {
				sawNomination = true
			}
			if p.GetName() == "low" && strings.Contains(body, `"DisruptionTarget"`) && strings.Contains(body, "PreemptionByScheduler") {
				sawDisruption = true
			}
		}
		if d, ok := a.(clienttesting.DeleteAction); ok && d.GetName() == "low" {
			sawDelete = true
		}
	}
	if !sawNomination || !sawDisruption || !sawDelete {
		t.Fatalf("nomination %v, disruption condition %v, delete %v", sawNomination, sawDisruption, sawDelete)
	}
	waitFor(t, "Preempted event", func() bool { return len(eventsWithReason(t, cs, "Preempted")) == 1 })
}

func TestPreemptionPolicyNever(t *testing.T) {
	cs := fake.NewClientset()
	st.InstallBindingReactor(cs, nil)
	startScheduler(t, cs, nil)
	create(t, cs, st.MakeNode().Name("n1").Capacity(st.Res{"cpu": "1"}).Obj(),
		st.MakePod().Name("low").Node("n1").Req(st.Res{"cpu": "1"}).Obj())
	create(t, cs, st.MakePod().Name("polite").Priority(1000).PreemptionNever().Req(st.Res{"cpu": "1"}).Obj())
	want := "0/1 nodes are available: 1 Insufficient cpu. preemption: not eligible due to preemptionPolicy=Never."
	waitFor(t, "condition", func() bool {
		c := scheduledCondition(getPod(t, cs, "polite"))
		return c != nil && c.Message == want
	})
	if getPod(t, cs, "low") == nil {
		t.Fatal("no victim may be deleted")
	}
}

func TestPreemptionPrefersVictimsWithoutPDBViolation(t *testing.T) {
	cs := fake.NewClientset()
	st.InstallBindingReactor(cs, nil)
	s, factory := startSchedulerWithFactory(t, cs, nil)
	create(t, cs,
		st.MakeNode().Name("n1").Capacity(st.Res{"cpu": "1"}).Obj(),
		st.MakeNode().Name("n2").Capacity(st.Res{"cpu": "1"}).Obj(),
		&policyv1.PodDisruptionBudget{
			ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "default"},
			Spec:       policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}},
			Status:     policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 0},
		},
		st.MakePod().Name("protected").Node("n1").Label("app", "db").Req(st.Res{"cpu": "1"}).Obj(),
		// Lower priority would be the better victim, were it not for the PDB on the other.
		st.MakePod().Name("unprotected").Node("n2").Priority(10).Req(st.Res{"cpu": "1"}).Obj(),
	)
	waitFor(t, "fixtures in the scheduler's informers", func() bool {
		pdbs, _ := factory.Policy().V1().PodDisruptionBudgets().Lister().List(labels.Everything())
		_, pods, _ := s.Cache().Counts()
		return len(pdbs) == 1 && pods == 2
	})
	create(t, cs, st.MakePod().Name("high").Priority(1000).Req(st.Res{"cpu": "1"}).Obj())
	waitFor(t, "high bound", func() bool { return boundTo(cs, t, "high") != "" })
	if got := boundTo(cs, t, "high"); got != "n2" || getPod(t, cs, "protected") == nil || getPod(t, cs, "unprotected") != nil {
		t.Fatalf("high on %q; protected exists %v; unprotected exists %v", got, getPod(t, cs, "protected") != nil, getPod(t, cs, "unprotected") != nil)
	}
}

func TestNumFeasibleNodesToFind(t *testing.T) {
	tests := []struct {
		pct   int32
		nodes int
		want  int
	}{
		{0, 50, 50}, {0, 99, 99}, {0, 100, 100}, {0, 500, 230}, {0, 1000, 420}, {0, 5000, 500}, {0, 6000, 300},
		{10, 500, 100}, {50, 5000, 2500}, {100, 5000, 5000},
	}
	for _, tc := range tests {
		if got := NumFeasibleNodesToFind(tc.pct, tc.nodes); got != tc.want {
			t.Errorf("pct %d nodes %d: got %d want %d", tc.pct, tc.nodes, got, tc.want)
		}
	}
}

func counterValue(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var total float64
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if matchLabels(m, labels) {
				total += m.GetCounter().GetValue() + float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return total
}

func matchLabels(m *dto.Metric, want map[string]string) bool {
	got := map[string]string{}
	for _, l := range m.GetLabel() {
		got[l.GetName()] = l.GetValue()
	}
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return true
}

func TestMetrics(t *testing.T) {
	cs := fake.NewClientset()
	st.InstallBindingReactor(cs, nil)
	reg := prometheus.NewRegistry()
	startScheduler(t, cs, reg)
	create(t, cs, st.MakeNode().Name("n1").Capacity(st.Res{"cpu": "1"}).Obj(),
		st.MakePod().Name("fits").Req(st.Res{"cpu": "1"}).Obj())
	waitFor(t, "bound", func() bool { return boundTo(cs, t, "fits") == "n1" })
	create(t, cs, st.MakePod().Name("stuck").Req(st.Res{"cpu": "1"}).Obj())
	// At least one: under load the stuck pod may be retried (a flush or a cluster event) before the
	// test looks, and each retry is one more unschedulable attempt.
	waitFor(t, "unschedulable attempt", func() bool {
		return counterValue(t, reg, "scheduler_schedule_attempts_total", map[string]string{"result": "unschedulable"}) >= 1
	})
	waitFor(t, "scheduled attempt and e2e latency sample", func() bool {
		return counterValue(t, reg, "scheduler_schedule_attempts_total", map[string]string{"result": "scheduled", "profile": "default-scheduler"}) == 1 &&
			counterValue(t, reg, "scheduler_pod_scheduling_sli_duration_seconds", nil) == 1
	})
	waitFor(t, "pending gauge", func() bool {
		families, _ := reg.Gather()
		for _, f := range families {
			if f.GetName() == "scheduler_pending_pods" {
				for _, m := range f.GetMetric() {
					if matchLabels(m, map[string]string{"queue": "unschedulable"}) && m.GetGauge().GetValue() == 1 {
						return true
					}
				}
			}
		}
		return false
	})
}

func TestSelectHostBreaksTiesAcrossNodes(t *testing.T) {
	cs := fake.NewClientset()
	st.InstallBindingReactor(cs, nil)
	startScheduler(t, cs, nil)
	for i := range 4 {
		create(t, cs, st.MakeNode().Name(fmt.Sprintf("n%d", i)).Capacity(st.Res{"cpu": "4", "memory": "8Gi", "pods": "1000"}).Obj())
	}
	for i := range 40 {
		create(t, cs, st.MakePod().Name(fmt.Sprintf("p%02d", i)).Container("pause").Obj())
	}
	waitFor(t, "all bound", func() bool { return len(st.Bindings(cs)) == 40 })
	perNode := map[string]int{}
	for i := range 40 {
		perNode[boundTo(cs, t, fmt.Sprintf("p%02d", i))]++
	}
	counts := []int{}
	for _, c := range perNode {
		counts = append(counts, c)
	}
	sort.Ints(counts)
	// Best-effort pods still count 100m/200Mi for scoring: they spread evenly.
	if len(counts) != 4 || counts[3]-counts[0] > 1 {
		t.Fatalf("uneven spread %v", perNode)
	}
}
