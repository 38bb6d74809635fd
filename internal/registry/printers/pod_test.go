package printers

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// rowOf prints obj with the printer of gr and returns its cells.
func rowOf(t *testing.T, gr schema.GroupResource, obj runtime.Object) []interface{} {
	t.Helper()
	p := ForResource(gr)
	if p == nil {
		t.Fatalf("no printer for %s", gr)
	}
	cells, err := p.Row(obj, testNow)
	if err != nil {
		t.Fatalf("print %s: %v", gr, err)
	}
	if len(cells) != len(p.Columns) {
		t.Fatalf("print %s: %d cells for %d columns", gr, len(cells), len(p.Columns))
	}
	return cells
}

func TestPodReadyStatusRestarts(t *testing.T) {
	tests := []struct {
		name         string
		pod          *corev1.Pod
		wantReady    string
		wantStatus   string
		wantRestarts string
	}{
		{
			name:      "pending without statuses",
			pod:       makePod("p").Containers("app").Obj(),
			wantReady: "0/1", wantStatus: "Pending", wantRestarts: "0",
		},
		{
			name:      "running and ready",
			pod:       makePod("p").Containers("app").Phase(corev1.PodRunning).Statuses(running("app", true)).Obj(),
			wantReady: "1/1", wantStatus: "Running", wantRestarts: "0",
		},
		{
			name:      "running but not ready",
			pod:       makePod("p").Containers("app").Phase(corev1.PodRunning).Statuses(running("app", false)).Obj(),
			wantReady: "0/1", wantStatus: "Running", wantRestarts: "0",
		},
		{
			name:      "container creating",
			pod:       makePod("p").Containers("app").Statuses(waiting("app", "ContainerCreating")).Obj(),
			wantReady: "0/1", wantStatus: "ContainerCreating", wantRestarts: "0",
		},
		{
			name: "crash loop with restarts",
			pod: makePod("p").Containers("app").Phase(corev1.PodRunning).
				Statuses(restarted(waiting("app", "CrashLoopBackOff"), 3, 5*time.Minute)).Obj(),
			wantReady: "0/1", wantStatus: "CrashLoopBackOff", wantRestarts: "3 (5m ago)",
		},
		{
			name:      "restarts without a recorded termination print a bare count",
			pod:       makePod("p").Containers("app").Phase(corev1.PodRunning).Statuses(func() corev1.ContainerStatus { cs := running("app", true); cs.RestartCount = 2; return cs }()).Obj(),
			wantReady: "1/1", wantStatus: "Running", wantRestarts: "2",
		},
		{
			name: "the first container with a reason wins",
			pod: makePod("p").Containers("a", "b").
				Statuses(waiting("a", "ImagePullBackOff"), waiting("b", "ContainerCreating")).Obj(),
			wantReady: "0/2", wantStatus: "ImagePullBackOff", wantRestarts: "0",
		},
		{
			name:      "completed",
			pod:       makePod("p").Containers("app").Phase(corev1.PodSucceeded).Statuses(terminated("app", "Completed", 0, 0)).Obj(),
			wantReady: "0/1", wantStatus: "Completed", wantRestarts: "0",
		},
		{
			name:      "error",
			pod:       makePod("p").Containers("app").Phase(corev1.PodFailed).Statuses(terminated("app", "Error", 1, 0)).Obj(),
			wantReady: "0/1", wantStatus: "Error", wantRestarts: "0",
		},
		{
			name:      "terminated without reason shows the exit code",
			pod:       makePod("p").Containers("app").Phase(corev1.PodFailed).Statuses(terminated("app", "", 137, 0)).Obj(),
			wantReady: "0/1", wantStatus: "ExitCode:137", wantRestarts: "0",
		},
		{
			name:      "terminated without reason shows the signal",
			pod:       makePod("p").Containers("app").Phase(corev1.PodFailed).Statuses(terminated("app", "", 137, 9)).Obj(),
			wantReady: "0/1", wantStatus: "Signal:9", wantRestarts: "0",
		},
		{
			name: "completed container beside a running one shows Running when the pod is ready",
			pod: makePod("p").Containers("app", "once").Phase(corev1.PodRunning).
				Statuses(running("app", true), terminated("once", "Completed", 0, 0)).
				Condition(corev1.PodReady, corev1.ConditionTrue, "").Obj(),
			wantReady: "1/2", wantStatus: "Running", wantRestarts: "0",
		},
		{
			name: "completed container beside a running one shows NotReady otherwise",
			pod: makePod("p").Containers("app", "once").Phase(corev1.PodRunning).
				Statuses(running("app", true), terminated("once", "Completed", 0, 0)).
				Condition(corev1.PodReady, corev1.ConditionFalse, "").Obj(),
			wantReady: "1/2", wantStatus: "NotReady", wantRestarts: "0",
		},
		{
			name:      "status reason such as Evicted",
			pod:       makePod("p").Containers("app").Phase(corev1.PodFailed).Reason("Evicted").Obj(),
			wantReady: "0/1", wantStatus: "Evicted", wantRestarts: "0",
		},
		{
			name: "scheduling gated",
			pod: makePod("p").Containers("app").
				Condition(corev1.PodScheduled, corev1.ConditionFalse, corev1.PodReasonSchedulingGated).Obj(),
			wantReady: "0/1", wantStatus: "SchedulingGated", wantRestarts: "0",
		},
		{
			name: "first init container running",
			pod: makePod("p").InitContainers("setup", "migrate").Containers("app").
				InitStatuses(running("setup", false), waiting("migrate", "PodInitializing")).
				Statuses(waiting("app", "PodInitializing")).Obj(),
			wantReady: "0/1", wantStatus: "Init:0/2", wantRestarts: "0",
		},
		{
			name: "init container waiting as PodInitializing counts as progress",
			pod: makePod("p").InitContainers("setup").Containers("app").
				InitStatuses(waiting("setup", "PodInitializing")).Obj(),
			wantReady: "0/1", wantStatus: "Init:0/1", wantRestarts: "0",
		},
		{
			name: "second init container running",
			pod: makePod("p").InitContainers("setup", "migrate").Containers("app").
				InitStatuses(terminated("setup", "Completed", 0, 0), running("migrate", false)).Obj(),
			wantReady: "0/1", wantStatus: "Init:1/2", wantRestarts: "0",
		},
		{
			name: "init container crash looping",
			pod: makePod("p").InitContainers("setup").Containers("app").
				InitStatuses(restarted(waiting("setup", "CrashLoopBackOff"), 2, time.Minute)).
				Statuses(restarted(waiting("app", "PodInitializing"), 7, time.Minute)).Obj(),
			wantReady: "0/1", wantStatus: "Init:CrashLoopBackOff", wantRestarts: "2 (60s ago)",
		},
		{
			name: "init container failed",
			pod: makePod("p").InitContainers("setup").Containers("app").
				InitStatuses(terminated("setup", "Error", 1, 0)).Obj(),
			wantReady: "0/1", wantStatus: "Init:Error", wantRestarts: "0",
		},
		{
			name: "init container failed without reason",
			pod: makePod("p").InitContainers("setup").Containers("app").
				InitStatuses(terminated("setup", "", 2, 0)).Obj(),
			wantReady: "0/1", wantStatus: "Init:ExitCode:2", wantRestarts: "0",
		},
		{
			name: "init container killed by a signal",
			pod: makePod("p").InitContainers("setup").Containers("app").
				InitStatuses(terminated("setup", "", 137, 9)).Obj(),
			wantReady: "0/1", wantStatus: "Init:Signal:9", wantRestarts: "0",
		},
		{
			name: "sidecar counts as a container and its restarts count once initialized",
			pod: makePod("p").Sidecar("proxy").Containers("app").Phase(corev1.PodRunning).
				InitStatuses(restarted(started(running("proxy", true)), 2, 3*time.Minute)).
				Statuses(restarted(running("app", true), 1, 10*time.Minute)).
				Condition(corev1.PodInitialized, corev1.ConditionTrue, "").Obj(),
			wantReady: "2/2", wantStatus: "Running", wantRestarts: "3 (3m ago)",
		},
		{
			name: "sidecar started before the next init container",
			pod: makePod("p").Sidecar("proxy").InitContainers("setup").Containers("app").
				InitStatuses(started(running("proxy", true)), running("setup", false)).Obj(),
			wantReady: "1/2", wantStatus: "Init:1/2", wantRestarts: "0",
		},
		{
			name:      "terminating",
			pod:       makePod("p").Containers("app").Phase(corev1.PodRunning).Statuses(running("app", true)).Deleting().Obj(),
			wantReady: "1/1", wantStatus: "Terminating", wantRestarts: "0",
		},
		{
			name:      "a finished pod being deleted keeps its status",
			pod:       makePod("p").Containers("app").Phase(corev1.PodSucceeded).Statuses(terminated("app", "Completed", 0, 0)).Deleting().Obj(),
			wantReady: "0/1", wantStatus: "Completed", wantRestarts: "0",
		},
		{
			name:      "pod on a lost node being deleted is Unknown",
			pod:       makePod("p").Containers("app").Phase(corev1.PodRunning).Reason(nodeLostReason).Statuses(running("app", true)).Deleting().Obj(),
			wantReady: "1/1", wantStatus: "Unknown", wantRestarts: "0",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cells := rowOf(t, schema.GroupResource{Resource: "pods"}, tt.pod)
			if got := cells[1]; got != tt.wantReady {
				t.Errorf("READY = %q, want %q", got, tt.wantReady)
			}
			if got := cells[2]; got != tt.wantStatus {
				t.Errorf("STATUS = %q, want %q", got, tt.wantStatus)
			}
			if got := cells[3]; got != tt.wantRestarts {
				t.Errorf("RESTARTS = %q, want %q", got, tt.wantRestarts)
			}
		})
	}
}

func TestPodWideCells(t *testing.T) {
	tests := []struct {
		name string
		pod  *corev1.Pod
		want []interface{} // AGE, IP, NODE, NOMINATED NODE, READINESS GATES
	}{
		{
			name: "unscheduled",
			pod:  makePod("p").Containers("app").Obj(),
			want: []interface{}{"10m", "<none>", "<none>", "<none>", "<none>"},
		},
		{
			name: "scheduled dual stack with gates",
			pod: makePod("p").Containers("app").Created(3*time.Hour).IP("10.244.1.7", "fd00::7").Node("worker-1").Nominated("worker-2").
				ReadinessGates("example.com/lb", "example.com/dns").
				Condition("example.com/lb", corev1.ConditionTrue, "").Condition("example.com/dns", corev1.ConditionFalse, "").Obj(),
			want: []interface{}{"3h", "10.244.1.7", "worker-1", "worker-2", "1/2"},
		},
		{
			name: "a gate without a condition is not passed",
			pod:  makePod("p").Containers("app").ReadinessGates("example.com/lb").Obj(),
			want: []interface{}{"10m", "<none>", "<none>", "<none>", "0/1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cells := rowOf(t, schema.GroupResource{Resource: "pods"}, tt.pod)
			for i, want := range tt.want {
				if got := cells[4+i]; got != want {
					t.Errorf("cell %d = %q, want %q", 4+i, got, want)
				}
			}
		})
	}
}
