package scheduler

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	st "github.com/skiff-sh/skiff/internal/scheduler/schedtest"
	"github.com/skiff-sh/skiff/internal/simnode"
)

// TestUnschedulablePodScheduledWhenNodeAdded shows the retry is event-driven: once unschedulable,
// the pod is not retried while nothing changes (its FailedScheduling event is not repeated), and
// a fitting node being added schedules it well before any periodic flush could.
func TestUnschedulablePodScheduledWhenNodeAdded(t *testing.T) {
	e := newEnv(t)
	e.createNodes(node("grow-small").Capacity(st.Res{v1.ResourceCPU: "1"}).Obj())
	e.createPod(pod("big").Req(st.Res{v1.ResourceCPU: "2"}).Obj())
	msg := e.waitUnschedulable("big")
	if !strings.HasPrefix(msg, "0/1 nodes are available: 1 Insufficient cpu.") {
		t.Fatalf("message %q", msg)
	}
	attempts := func() int32 {
		var n int32
		for _, ev := range e.podEvents("big", "FailedScheduling") {
			n += max(ev.Count, 1)
		}
		return n
	}
	first := attempts()
	// Longer than the maximum backoff (10s) would be needed to prove the absence of backoff
	// polling; 3s past the initial 1s backoff shows no retry happens without an event.
	time.Sleep(3 * time.Second)
	if again := attempts(); again != first {
		t.Fatalf("FailedScheduling repeated (%d -> %d) although nothing in the cluster changed", first, again)
	}
	added := time.Now()
	e.createNodes(node("grow-big").Capacity(st.Res{v1.ResourceCPU: "4"}).Obj())
	if got := e.waitBound("big"); got != "grow-big" {
		t.Fatalf("bound to %s, want grow-big", got)
	}
	// Kubernetes flushes unschedulable pods after 5 minutes at the latest; this must be the event.
	if took := time.Since(added); took > 20*time.Second {
		t.Fatalf("scheduled %s after the node was added", took)
	}
}

// TestPreemption: a high-priority pod that fits nowhere evicts a lower-priority pod (graceful
// deletion with the victim's grace period, DisruptionTarget condition), is nominated to the node,
// and is bound there once the simulated kubelet has finished the victim.
func TestPreemption(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	for _, pc := range []schedulingv1.PriorityClass{
		{ObjectMeta: metav1.ObjectMeta{Name: e.ns + "-low"}, Value: 100},
		{ObjectMeta: metav1.ObjectMeta{Name: e.ns + "-high"}, Value: 1000},
	} {
		if _, err := e.client.SchedulingV1().PriorityClasses().Create(ctx, &pc, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create priority class: %v", err)
		}
		name := pc.Name
		t.Cleanup(func() {
			_ = e.client.SchedulingV1().PriorityClasses().Delete(context.Background(), name, metav1.DeleteOptions{})
		})
	}
	simCtx, stopSim := context.WithCancel(ctx)
	defer stopSim()
	sim, err := simnode.Start(simCtx, simnode.Config{
		Client: e.client, Nodes: 1, NamePrefix: "preempt-", FirstIndex: 1000,
		Capacity: v1.ResourceList{v1.ResourceCPU: mustQuantity("2"), v1.ResourceMemory: mustQuantity("4Gi"), v1.ResourcePods: mustQuantity("110")},
		Logger:   slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})),
	})
	if err != nil {
		t.Fatalf("simulated node: %v", err)
	}
	t.Cleanup(func() {
		sim.Stop()
		_ = e.client.CoreV1().Nodes().Delete(context.Background(), sim.NodeNames()[0], metav1.DeleteOptions{})
	})
	nodeName := sim.NodeNames()[0]

	victim := pod("victim").Req(st.Res{v1.ResourceCPU: "1500m"}).GracePeriod(5).Obj()
	victim.Spec.PriorityClassName = e.ns + "-low"
	victim.Spec.Priority = nil
	e.createPod(victim)
	if got := e.waitBound("victim"); got != nodeName {
		t.Fatalf("victim on %s", got)
	}
	e.eventually("victim running", 30*time.Second, func() error {
		if p := e.getPod("victim"); p.Status.Phase != v1.PodRunning {
			return fmt.Errorf("phase %s", p.Status.Phase)
		}
		return nil
	})

	// Watch both pods from now on, to see the victim's graceful deletion and the nomination.
	w, err := e.client.CoreV1().Pods(e.ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	preemptor := pod("preemptor").Req(st.Res{v1.ResourceCPU: "1"}).Obj()
	preemptor.Spec.PriorityClassName = e.ns + "-high"
	preemptor.Spec.Priority = nil
	e.createPod(preemptor)

	var nominated string
	var victimGrace *int64
	var victimDisrupted, victimGone bool
	boundTo := ""
	timeout := time.After(60 * time.Second)
	for boundTo == "" {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("watch closed")
			}
			p, ok := ev.Object.(*v1.Pod)
			if !ok {
				continue
			}
			switch p.Name {
			case "victim":
				if ev.Type == watch.Deleted {
					victimGone = true
					continue
				}
				if p.DeletionTimestamp != nil && victimGrace == nil {
					victimGrace = p.DeletionGracePeriodSeconds
				}
				for _, c := range p.Status.Conditions {
					if c.Type == v1.DisruptionTarget && c.Status == v1.ConditionTrue && c.Reason == v1.PodReasonPreemptionByScheduler {
						victimDisrupted = true
					}
				}
			case "preemptor":
				if p.Status.NominatedNodeName != "" {
					nominated = p.Status.NominatedNodeName
				}
				if p.Spec.NodeName != "" {
					if !victimGone {
						t.Fatalf("preemptor bound to %s while the victim still exists", p.Spec.NodeName)
					}
					boundTo = p.Spec.NodeName
				}
			}
		case <-timeout:
			t.Fatalf("preemptor not bound: nominated %q, victim grace %v, victim gone %v", nominated, victimGrace, victimGone)
		}
	}
	if nominated != nodeName {
		t.Errorf("preemptor's nominatedNodeName %q, want %q", nominated, nodeName)
	}
	if victimGrace == nil || *victimGrace != 5 {
		t.Errorf("victim deleted with grace period %v, want its terminationGracePeriodSeconds 5", victimGrace)
	}
	if !victimDisrupted {
		t.Error("victim never had DisruptionTarget=True reason PreemptionByScheduler")
	}
	if boundTo != nodeName {
		t.Errorf("preemptor bound to %s, want %s", boundTo, nodeName)
	}
	ev := e.waitEvent("victim", "Preempted")
	if !strings.Contains(ev.Message, "on node "+nodeName) {
		t.Errorf("Preempted event %q", ev.Message)
	}
	// A pod of the same low priority cannot preempt anything: it stays pending with the reason.
	same := pod("same-priority").Req(st.Res{v1.ResourceCPU: "1500m"}).Obj()
	same.Spec.PriorityClassName = e.ns + "-low"
	same.Spec.Priority = nil
	e.createPod(same)
	msg := e.waitUnschedulable("same-priority")
	if want := "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."; msg != want {
		t.Errorf("message %q, want %q", msg, want)
	}
}

// TestSecondProfile: the server runs two profiles; each binds only pods naming it (events come
// from the profile's name, and its MostAllocated scoring packs), and a pod naming no running
// scheduler is left alone.
func TestSecondProfile(t *testing.T) {
	e := newEnv(t)
	e.createNodes(node("prof-busy").Obj(), node("prof-idle").Obj())
	e.createPod(pod("hog").Node("prof-busy").Req(st.Res{v1.ResourceCPU: "2", v1.ResourceMemory: "4Gi"}).Obj())

	e.createPod(pod("default-one").Req(st.Res{v1.ResourceCPU: "500m", v1.ResourceMemory: "512Mi"}).Obj())
	e.createPod(pod("second-one").SchedulerName(secondProfile).Req(st.Res{v1.ResourceCPU: "500m", v1.ResourceMemory: "512Mi"}).Obj())
	e.createPod(pod("orphan").SchedulerName("no-such-scheduler").Req(st.Res{v1.ResourceCPU: "500m"}).Obj())
	if got := e.waitBound("default-one"); got != "prof-idle" {
		t.Errorf("default profile (LeastAllocated) bound to %s, want prof-idle", got)
	}
	if got := e.waitBound("second-one"); got != "prof-busy" {
		t.Errorf("second profile (MostAllocated) bound to %s, want prof-busy", got)
	}
	if ev := e.waitEvent("second-one", "Scheduled"); ev.Source.Component != secondProfile {
		t.Errorf("second profile's Scheduled event from %q", ev.Source.Component)
	}
	if ev := e.waitEvent("default-one", "Scheduled"); ev.Source.Component != "default-scheduler" {
		t.Errorf("default profile's Scheduled event from %q", ev.Source.Component)
	}
	// Give the scheduler time it would need to touch the orphan, then check it did not.
	time.Sleep(2 * time.Second)
	p := e.getPod("orphan")
	if p.Spec.NodeName != "" || len(p.Status.Conditions) != 0 {
		t.Errorf("pod for an unknown scheduler was handled: node %q conditions %v", p.Spec.NodeName, p.Status.Conditions)
	}
	if evs := e.podEvents("orphan", "FailedScheduling"); len(evs) != 0 {
		t.Errorf("pod for an unknown scheduler got events: %v", evs)
	}
}

func mustQuantity(s string) resource.Quantity { return resource.MustParse(s) }
