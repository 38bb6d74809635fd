package queue

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/skiff-sh/skiff/internal/scheduler/framework"
	st "github.com/skiff-sh/skiff/internal/scheduler/schedtest"
)

var start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func newQueue(clk *clocktesting.FakeClock, pending *prometheus.GaugeVec) *PriorityQueue {
	return New(Options{
		Clock: clk, InitialBackoff: time.Second, MaxBackoff: 10 * time.Second, Pending: pending,
		PluginEvents: map[string][]framework.ClusterEvent{
			"NodeResourcesFit": {{Resource: framework.KindNode, ActionType: framework.Add | framework.Update}, {Resource: framework.KindAssignedPod, ActionType: framework.Delete}},
			"NodeAffinity":     {{Resource: framework.KindNode, ActionType: framework.Add | framework.Update}},
		},
	})
}

func pop(t *testing.T, q *PriorityQueue) *QueuedPodInfo {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	p, err := q.Pop(ctx)
	if err != nil {
		t.Fatalf("pop: %v", err)
	}
	return p
}

func TestPopOrder(t *testing.T) {
	clk := clocktesting.NewFakeClock(start)
	q := newQueue(clk, nil)
	q.Add(st.MakePod().Name("low-early").Priority(0).Obj())
	clk.Step(time.Millisecond)
	q.Add(st.MakePod().Name("high").Priority(100).Obj())
	clk.Step(time.Millisecond)
	q.Add(st.MakePod().Name("low-late").Priority(0).Obj())
	clk.Step(time.Millisecond)
	q.Add(st.MakePod().Name("mid").Priority(50).Obj())
	var got []string
	for range 4 {
		got = append(got, pop(t, q).Pod.Name)
	}
	want := []string{"high", "mid", "low-early", "low-late"}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("order %v, want %v", got, want)
		}
	}
	if q.SchedulingCycle() != 4 {
		t.Fatalf("cycle %d", q.SchedulingCycle())
	}
}

func TestBackoffDoublesAndCaps(t *testing.T) {
	clk := clocktesting.NewFakeClock(start)
	q := newQueue(clk, nil)
	q.Add(st.MakePod().Name("p").Obj())
	want := []time.Duration{1, 2, 4, 8, 10, 10}
	for i, backoff := range want {
		p := pop(t, q)
		p.Errored = true
		q.AddUnschedulableIfNotPresent(p, q.SchedulingCycle())
		clk.Step(backoff*time.Second - time.Millisecond)
		q.FlushBackoffQCompleted()
		if a, b, _, _ := q.Counts(); a != 0 || b != 1 {
			t.Fatalf("attempt %d: still backing off expected, active=%d backoff=%d", i+1, a, b)
		}
		clk.Step(time.Millisecond)
		q.FlushBackoffQCompleted()
		if a, _, _, _ := q.Counts(); a != 1 {
			t.Fatalf("attempt %d: backoff of %ds should be over", i+1, backoff)
		}
	}
}

func fail(q *PriorityQueue, p *QueuedPodInfo, plugins ...string) {
	p.UnschedulablePlugins = sets.New(plugins...)
	q.AddUnschedulableIfNotPresent(p, q.SchedulingCycle())
}

func TestUnschedulableMovedOnlyByMatchingEvents(t *testing.T) {
	clk := clocktesting.NewFakeClock(start)
	q := newQueue(clk, nil)
	q.Add(st.MakePod().Name("big").Obj())
	q.Add(st.MakePod().Name("picky").Obj())
	big, picky := pop(t, q), pop(t, q)
	// An event that arrives while no pod is in flight must not affect later failures.
	fail(q, big, "NodeResourcesFit")
	fail(q, picky, "NodeAffinity")
	if _, _, u, _ := q.Counts(); u != 2 {
		t.Fatalf("want 2 unschedulable, got %d", u)
	}
	clk.Step(time.Minute)
	q.MoveAllToActiveOrBackoffQueue(framework.ClusterEvent{Resource: framework.KindAssignedPod, ActionType: framework.Delete})
	if a, _, u, _ := q.Counts(); a != 1 || u != 1 {
		t.Fatalf("pod delete moves only the resource-bound pod: active=%d unschedulable=%d", a, u)
	}
	if got := pop(t, q).Pod.Name; got != "big" {
		t.Fatalf("popped %s", got)
	}
	q.MoveAllToActiveOrBackoffQueue(framework.ClusterEvent{Resource: framework.KindNamespace, ActionType: framework.Add})
	if _, _, u, _ := q.Counts(); u != 1 {
		t.Fatal("namespace event must not move a NodeAffinity rejection")
	}
	// Moved while still backing off: goes to backoffQ, then active after expiry.
	q2 := newQueue(clk, nil)
	q2.Add(st.MakePod().Name("fresh").Obj())
	fresh := pop(t, q2)
	fail(q2, fresh, "NodeAffinity")
	q2.MoveAllToActiveOrBackoffQueue(framework.ClusterEvent{Resource: framework.KindNode, ActionType: framework.Update})
	if _, b, _, _ := q2.Counts(); b != 1 {
		t.Fatal("pod still in backoff must wait in backoffQ")
	}
}

func TestMoveRequestDuringAttemptSendsToBackoff(t *testing.T) {
	clk := clocktesting.NewFakeClock(start)
	q := newQueue(clk, nil)
	q.Add(st.MakePod().Name("p").Obj())
	p := pop(t, q)
	cycle := q.SchedulingCycle()
	// A node appears while p is being scheduled against an older snapshot.
	q.MoveAllToActiveOrBackoffQueue(framework.ClusterEvent{Resource: framework.KindNode, ActionType: framework.Add})
	p.UnschedulablePlugins = sets.New("NodeResourcesFit")
	q.AddUnschedulableIfNotPresent(p, cycle)
	if _, b, u, _ := q.Counts(); b != 1 || u != 0 {
		t.Fatalf("want backoff=1 unschedulable=0, got %d %d", b, u)
	}
}

func TestLeftoverFlush(t *testing.T) {
	clk := clocktesting.NewFakeClock(start)
	q := newQueue(clk, nil)
	q.Add(st.MakePod().Name("p").Obj())
	fail(q, pop(t, q), "NodeAffinity")
	clk.Step(DefaultMaxInUnschedulable)
	q.FlushUnschedulableLeftover()
	if _, _, u, _ := q.Counts(); u != 1 {
		t.Fatal("flushed too early")
	}
	clk.Step(time.Second)
	q.FlushUnschedulableLeftover()
	if a, _, u, _ := q.Counts(); a != 1 || u != 0 {
		t.Fatal("pod stuck longer than the limit must be retried")
	}
}

func TestUpdate(t *testing.T) {
	clk := clocktesting.NewFakeClock(start)
	q := newQueue(clk, nil)
	old := st.MakePod().Name("p").Obj()
	q.Add(old)
	fail(q, pop(t, q), "NodeAffinity")
	clk.Step(time.Minute)
	statusOnly := old.DeepCopy()
	statusOnly.Status.Conditions = []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionFalse}}
	q.Update(old, statusOnly)
	if _, _, u, _ := q.Counts(); u != 1 {
		t.Fatal("a status-only update (our own condition) must not retry the pod")
	}
	relabelled := statusOnly.DeepCopy()
	relabelled.Labels = map[string]string{"x": "y"}
	q.Update(statusOnly, relabelled)
	if a, _, _, _ := q.Counts(); a != 1 {
		t.Fatal("a label change must retry the pod")
	}
}

func TestGatedPods(t *testing.T) {
	clk := clocktesting.NewFakeClock(start)
	reg := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "pending"}, []string{"queue"})
	q := newQueue(clk, reg)
	gated := st.MakePod().Name("g").Obj()
	gated.Spec.SchedulingGates = []v1.PodSchedulingGate{{Name: "example.com/wait"}}
	q.Add(gated)
	if got := gaugeValue(t, reg.WithLabelValues("gated")); got != 1 {
		t.Fatalf("gated gauge %v", got)
	}
	ungated := gated.DeepCopy()
	ungated.Spec.SchedulingGates = nil
	q.Update(gated, ungated)
	if got := gaugeValue(t, reg.WithLabelValues("active")); got != 1 {
		t.Fatalf("active gauge %v", got)
	}
	pop(t, q)
	if got := gaugeValue(t, reg.WithLabelValues("active")); got != 0 {
		t.Fatalf("active gauge after pop %v", got)
	}
}

func TestPopBlocksAndClose(t *testing.T) {
	q := newQueue(clocktesting.NewFakeClock(start), nil)
	got := make(chan string)
	go func() {
		p, err := q.Pop(context.Background())
		if err != nil {
			got <- err.Error()
			return
		}
		got <- p.Pod.Name
	}()
	q.Add(st.MakePod().Name("late").Obj())
	if name := <-got; name != "late" {
		t.Fatalf("got %s", name)
	}
	done := make(chan error)
	go func() { _, err := q.Pop(context.Background()); done <- err }()
	q.Close()
	if err := <-done; !errors.Is(err, ErrClosed) {
		t.Fatalf("got %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := newQueue(clocktesting.NewFakeClock(start), nil).Pop(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
}

func TestDeleteAndNominated(t *testing.T) {
	q := newQueue(clocktesting.NewFakeClock(start), nil)
	p := st.MakePod().Name("p").Obj()
	q.Add(p)
	q.AddNominatedPod(p, "n1")
	if len(q.NominatedPodsForNode("n1")) != 1 {
		t.Fatal("nominated pod missing")
	}
	q.Delete(p)
	if q.Has(p) || len(q.NominatedPodsForNode("n1")) != 0 {
		t.Fatal("delete must remove from queue and nominator")
	}
}

func TestRunFlushesWithFakeClock(t *testing.T) {
	clk := clocktesting.NewFakeClock(start)
	q := newQueue(clk, nil)
	q.Add(st.MakePod().Name("p").Obj())
	p := pop(t, q)
	p.Errored = true
	q.AddUnschedulableIfNotPresent(p, q.SchedulingCycle())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go q.Run(ctx)
	for !clk.HasWaiters() {
		time.Sleep(time.Millisecond)
	}
	clk.Step(time.Second)
	if got := pop(t, q).Pod.Name; got != "p" {
		t.Fatalf("got %s", got)
	}
}

func gaugeValue(t *testing.T, g prometheus.Gauge) float64 {
	t.Helper()
	var m dto.Metric
	if err := g.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetGauge().GetValue()
}

func TestNominationFromStatusSurvivesRestart(t *testing.T) {
	q := newQueue(clocktesting.NewFakeClock(start), nil)
	p := st.MakePod().Name("preemptor").Obj()
	p.Status.NominatedNodeName = "n7"
	q.Add(p)
	if got := q.NominatedPodsByNode()["n7"]; len(got) != 1 || got[0].Name != "preemptor" {
		t.Fatalf("nominations %v", q.NominatedPodsByNode())
	}
}
