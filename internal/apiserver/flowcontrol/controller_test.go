package flowcontrol

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/skiff-sh/skiff/internal/request"
)

type admitResult struct {
	t   *Ticket
	err error
}

func newTestController(t *testing.T, serverLimit int) (*Controller, *clocktesting.FakeClock, *prometheus.Registry) {
	t.Helper()
	clk := clocktesting.NewFakeClock(t0)
	reg := prometheus.NewRegistry()
	c, err := New(Config{ServerLimit: serverLimit, Clock: clk, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	return c, clk, reg
}

// testConfig: masters exempt, everyone else on one level "shared" (Queue: 1 queue of 2, or Reject).
func testConfig(lr flowcontrolv1.LimitResponse) ([]*flowcontrolv1.PriorityLevelConfiguration, []*flowcontrolv1.FlowSchema) {
	everything := resources(all, all, all, true, "*")
	return []*flowcontrolv1.PriorityLevelConfiguration{exemptLevel("exempt"), limited("shared", 10, lr)},
		[]*flowcontrolv1.FlowSchema{
			makeSchema("exempt", "exempt", 1).rule([]flowcontrolv1.Subject{group("system:masters")}, everything, nil).obj(),
			makeSchema("users", "shared", 1000).by(flowcontrolv1.FlowDistinguisherMethodByUserType).
				rule([]flowcontrolv1.Subject{group("system:authenticated")}, everything, nil).obj(),
		}
}

func digest(name string, groups ...string) Digest {
	return Digest{
		User: &request.UserInfo{Name: name, Groups: append(groups, "system:authenticated")},
		Info: &request.RequestInfo{IsResourceRequest: true, Verb: "list", Resource: "configmaps", Namespace: "default"},
	}
}

// waitFor polls cond until it holds (the state it waits for is reached by another goroutine).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// metricValue sums the series of a counter or gauge whose label has the value.
func metricValue(t *testing.T, reg *prometheus.Registry, name, label, value string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == label && lp.GetValue() == value {
					sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
				}
			}
		}
	}
	return sum
}

func (c *Controller) waiting(level string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.levels[level].qs.Waiting()
}

func TestControllerUnconfiguredRunsEverything(t *testing.T) {
	c, _, _ := newTestController(t, 1)
	for range 5 {
		tk, err := c.Admit(context.Background(), digest("alice"), 1, time.Second)
		if err != nil || tk.PriorityLevel != "" {
			t.Fatalf("Admit before configuration: %v, %v", tk, err)
		}
	}
}

func TestControllerQueueThenDispatch(t *testing.T) {
	c, _, reg := newTestController(t, 1)
	c.Update(testConfig(queuing(1, 1, 2)))
	first, err := c.Admit(context.Background(), digest("alice"), 1, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if first.PriorityLevel != "shared" || first.FlowSchema != "users" || first.PriorityUID != "uid-shared" || first.FlowSchemaUID != "uid-users" {
		t.Fatalf("ticket %+v", first)
	}
	second := make(chan admitResult, 1)
	go func() {
		tk, err := c.Admit(context.Background(), digest("bob"), 1, time.Minute)
		second <- admitResult{tk, err}
	}()
	waitFor(t, "bob to queue", func() bool { return c.waiting("shared") == 1 })
	// Masters are exempt: admitted at once though the level is full.
	if tk, err := c.Admit(context.Background(), digest("admin", "system:masters"), 1, time.Minute); err != nil || tk.PriorityLevel != "exempt" {
		t.Fatalf("exempt admit: %+v, %v", tk, err)
	}
	// The queue holds 2: a third waits, a fourth is refused.
	go func() { _, _ = c.Admit(context.Background(), digest("carol"), 1, time.Minute) }()
	waitFor(t, "carol to queue", func() bool { return c.waiting("shared") == 2 })
	_, err = c.Admit(context.Background(), digest("dave"), 1, time.Minute)
	if rej, ok := IsRejection(err); !ok || rej.Reason != "queue-full" || rej.PriorityUID != "uid-shared" {
		t.Fatalf("over the queue length: %v, want a queue-full rejection", err)
	}
	if got := metricValue(t, reg, "apiserver_flowcontrol_rejected_requests_total", "reason", "queue-full"); got != 1 {
		t.Fatalf("rejected metric %v, want 1", got)
	}
	first.Finish()
	first.Finish() // idempotent
	r := <-second
	if r.err != nil || r.t.PriorityLevel != "shared" {
		t.Fatalf("bob after a finish: %+v, %v", r.t, r.err)
	}
	if got := metricValue(t, reg, "apiserver_flowcontrol_current_inqueue_requests", "priority_level", "shared"); got != 1 {
		t.Fatalf("inqueue gauge %v, want 1 (carol)", got)
	}
	if got := metricValue(t, reg, "apiserver_flowcontrol_dispatched_requests_total", "flow_schema", "users"); got != 2 {
		t.Fatalf("dispatched metric %v, want 2 (alice, bob)", got)
	}
}

func TestControllerWaitTimesOut(t *testing.T) {
	c, clk, _ := newTestController(t, 1)
	c.Update(testConfig(queuing(1, 1, 5)))
	if _, err := c.Admit(context.Background(), digest("alice"), 1, time.Minute); err != nil {
		t.Fatal(err)
	}
	res := make(chan admitResult, 1)
	go func() {
		tk, err := c.Admit(context.Background(), digest("bob"), 1, 15*time.Second)
		res <- admitResult{tk, err}
	}()
	waitFor(t, "bob's wait timer", func() bool { return c.waiting("shared") == 1 && clk.HasWaiters() })
	clk.Step(15 * time.Second)
	r := <-res
	if rej, ok := IsRejection(r.err); !ok || rej.Reason != "time-out" || rej.RetryAfter <= 0 {
		t.Fatalf("after the wait limit: %v, want a time-out rejection", r.err)
	}
	if c.waiting("shared") != 0 {
		t.Fatal("the timed-out request is still queued")
	}

	// A client that goes away while queued is taken out as well.
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		tk, err := c.Admit(ctx, digest("carol"), 1, time.Minute)
		res <- admitResult{tk, err}
	}()
	waitFor(t, "carol to queue", func() bool { return c.waiting("shared") == 1 })
	cancel()
	if rej, ok := IsRejection((<-res).err); !ok || rej.Reason != "cancelled" {
		t.Fatalf("cancelled wait: %v", rej)
	}
}

func TestControllerRejectLevel(t *testing.T) {
	c, _, _ := newTestController(t, 2)
	c.Update(testConfig(reject))
	a, _ := c.Admit(context.Background(), digest("alice"), 1, time.Minute)
	if _, err := c.Admit(context.Background(), digest("alice"), 1, time.Minute); err != nil {
		t.Fatalf("second within the limit of 2: %v", err)
	}
	if rej, ok := IsRejection(func() error { _, err := c.Admit(context.Background(), digest("bob"), 1, time.Minute); return err }()); !ok || rej.Reason != "concurrency-limit" {
		t.Fatalf("third: %v, want concurrency-limit", rej)
	}
	a.Finish()
	if _, err := c.Admit(context.Background(), digest("bob"), 1, time.Minute); err != nil {
		t.Fatalf("after a finish: %v", err)
	}
}

// A changed configuration applies to the next request; waiting requests move with their level,
// and a schema whose level does not exist is ignored.
func TestControllerUpdate(t *testing.T) {
	c, _, _ := newTestController(t, 1)
	levels, schemas := testConfig(queuing(1, 1, 5))
	c.Update(levels, schemas)
	held, _ := c.Admit(context.Background(), digest("alice"), 1, time.Minute)
	res := make(chan admitResult, 1)
	go func() {
		tk, err := c.Admit(context.Background(), digest("bob"), 1, time.Minute)
		res <- admitResult{tk, err}
	}()
	waitFor(t, "bob to queue", func() bool { return c.waiting("shared") == 1 })

	// Raise the limit: 600 seats now, bob runs.
	c.serverLimit = 600
	dangling := makeSchema("aaa-dangling", "missing", 1).rule([]flowcontrolv1.Subject{group("system:authenticated")}, resources(all, all, all, true, "*"), nil).obj()
	c.Update(levels, append(schemas, dangling))
	if r := <-res; r.err != nil {
		t.Fatalf("bob after the limit rose: %v", r.err)
	}
	if got := c.Limit("shared"); got != 600 {
		t.Fatalf("limit %d, want 600", got)
	}
	tk, err := c.Admit(context.Background(), digest("carol"), 1, time.Minute)
	if err != nil || tk.FlowSchema != "users" {
		t.Fatalf("carol: %+v, %v (the dangling schema must not match)", tk, err)
	}
	// Turn the level exempt: everyone runs unqueued.
	levels[1] = exemptLevel("shared")
	c.Update(levels, schemas)
	for range 3 {
		if _, err := c.Admit(context.Background(), digest("dave"), 1, time.Minute); err != nil {
			t.Fatalf("exempt level: %v", err)
		}
	}
	held.Finish() // a ticket of the replaced level finishes without harm
}

func TestObjectCounts(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	oc := NewObjectCounts(clk, 10*time.Second)
	calls := 0
	count := func(n int64) func() (int64, error) {
		return func() (int64, error) { calls++; return n, nil }
	}
	if got := oc.Get("pods", count(5)); got != 5 {
		t.Fatalf("first count %d", got)
	}
	if got := oc.Get("pods", count(7)); got != 5 || calls != 1 {
		t.Fatalf("within the refresh interval: %d after %d calls, want the remembered 5 after 1", got, calls)
	}
	clk.Step(11 * time.Second)
	if got := oc.Get("pods", count(7)); got != 7 {
		t.Fatalf("after the interval: %d, want 7", got)
	}
	if got := oc.Get("pods", func() (int64, error) { return 0, io.EOF }); got != 7 {
		t.Fatalf("a failed count: %d, want the old 7", got)
	}
}
