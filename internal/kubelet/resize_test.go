package kubelet

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// resources builds requests and limits from "cpu,memory" pairs; an empty string leaves the list nil.
func resources(requests, limits string) corev1.ResourceRequirements {
	list := func(s string) corev1.ResourceList {
		if s == "" {
			return nil
		}
		out := corev1.ResourceList{}
		cpu, mem, _ := strings.Cut(s, ",")
		if cpu != "" {
			out[corev1.ResourceCPU] = quantity(cpu)
		}
		if mem != "" {
			out[corev1.ResourceMemory] = quantity(mem)
		}
		return out
	}
	return corev1.ResourceRequirements{Requests: list(requests), Limits: list(limits)}
}

// withInit gives pod init containers.
func withInit(pod *corev1.Pod, init ...corev1.Container) *corev1.Pod {
	pod.Spec.InitContainers = init
	return pod
}

func resizePod(name string, res corev1.ResourceRequirements, policies ...corev1.ContainerResizePolicy) *corev1.Pod {
	return makePod(name).container(corev1.Container{Name: "app", Resources: res, ResizePolicy: policies}).obj()
}

func TestDecideResize(t *testing.T) {
	node := corev1.ResourceList{corev1.ResourceCPU: quantity("4"), corev1.ResourceMemory: quantity("8Gi"), corev1.ResourcePods: quantity("110")}
	was := resources("500m,256Mi", "1,512Mi")
	allocated := map[string]corev1.ResourceRequirements{"app": was}
	neighbour := resizePod("neighbour", resources("3,6Gi", ""))
	tests := []struct {
		name      string
		in        resizeInput
		allocate  bool
		reason    string
		message   string
		retryLate bool
	}{
		{name: "a pod not admitted yet is allocated its spec",
			in: resizeInput{desired: resizePod("p", was), allocatable: node}, allocate: true},
		{name: "nothing to resize",
			in: resizeInput{desired: resizePod("p", was), allocated: allocated, allocatable: node}},
		{name: "a resize that fits is allocated",
			in:       resizeInput{desired: resizePod("p", resources("1,512Mi", "2,1Gi")), allocated: allocated, allocatable: node, others: []*corev1.Pod{resizePod("small", resources("1,1Gi", ""))}},
			allocate: true},
		{name: "a static pod is not resized",
			in:     resizeInput{desired: resizePod("p", resources("1,512Mi", "2,1Gi")), allocated: allocated, allocatable: node, static: true},
			reason: corev1.PodReasonInfeasible, message: "In-place resize of static-pods is not supported"},
		{name: "more memory than the node has is infeasible",
			in:     resizeInput{desired: resizePod("p", resources("500m,9Gi", "1,9Gi")), allocated: allocated, allocatable: node},
			reason: corev1.PodReasonInfeasible, message: "Node didn't have enough capacity: memory, requested: 9663676416, capacity: 8589934592"},
		{name: "more cpu than the node has is infeasible",
			in:     resizeInput{desired: resizePod("p", resources("5,256Mi", "5,512Mi")), allocated: allocated, allocatable: node},
			reason: corev1.PodReasonInfeasible, message: "Node didn't have enough capacity: cpu, requested: 5000, capacity: 4000"},
		{name: "a resize that does not fit beside the other pods is deferred",
			in:     resizeInput{desired: resizePod("p", resources("2,256Mi", "2,512Mi")), allocated: allocated, allocatable: node, others: []*corev1.Pod{neighbour}},
			reason: corev1.PodReasonDeferred, message: "Node didn't have enough resource: cpu, requested: 2000, used: 3000, capacity: 4000", retryLate: true},
		{name: "the other pods count with their allocation, not their spec",
			in: resizeInput{desired: resizePod("p", resources("2,256Mi", "2,512Mi")), allocated: allocated, allocatable: node,
				others: []*corev1.Pod{withAllocation(neighbour, map[string]corev1.ResourceRequirements{"app": resources("1,1Gi", "")})}},
			allocate: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := decideResize(tt.in)
			if got.allocate != tt.allocate || got.deferred != tt.retryLate {
				t.Errorf("allocate, deferred = %v, %v; want %v, %v", got.allocate, got.deferred, tt.allocate, tt.retryLate)
			}
			var reason, message string
			if got.pending != nil {
				reason, message = got.pending.reason, got.pending.message
			}
			if reason != tt.reason || message != tt.message {
				t.Errorf("pending = %q %q; want %q %q", reason, message, tt.reason, tt.message)
			}
		})
	}
}

func TestPlanActuation(t *testing.T) {
	restartMemory := corev1.ContainerResizePolicy{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.RestartContainer}
	applied := map[string]containerActuation{"app": {ContainerID: "c1", Resources: resources("500m,256Mi", "1,512Mi")}}
	running := map[string]string{"app": "c1"}
	tests := []struct {
		name     string
		pod      *corev1.Pod
		actuated map[string]containerActuation
		running  map[string]string
		want     []resizeStep
	}{
		{name: "applied already", pod: resizePod("p", resources("500m,256Mi", "1000m,512Mi")), actuated: applied, running: running},
		{name: "cpu changes in place", pod: resizePod("p", resources("750m,256Mi", "2,512Mi")), actuated: applied, running: running,
			want: []resizeStep{{name: "app"}}},
		{name: "cpu changes in place though memory would restart", pod: resizePod("p", resources("750m,256Mi", "2,512Mi"), restartMemory), actuated: applied, running: running,
			want: []resizeStep{{name: "app"}}},
		{name: "memory restarts the container", pod: resizePod("p", resources("500m,300Mi", "1,512Mi"), restartMemory), actuated: applied, running: running,
			want: []resizeStep{{name: "app", restart: true}}},
		{name: "a container not running starts with its allocation", pod: resizePod("p", resources("750m,256Mi", "2,512Mi")), actuated: applied},
		{name: "a new instance the kubelet has no record of is updated, not restarted", pod: resizePod("p", resources("500m,300Mi", "1,512Mi"), restartMemory),
			actuated: applied, running: map[string]string{"app": "c2"}, want: []resizeStep{{name: "app"}}},
		{name: "an init container is not resized", pod: withInit(resizePod("p", resources("500m,256Mi", "1,512Mi")), corev1.Container{Name: "setup", Resources: resources("1,1Gi", "")}),
			actuated: applied, running: map[string]string{"app": "c1", "setup": "c0"}},
		{name: "a sidecar is", pod: withInit(resizePod("p", resources("500m,256Mi", "1,512Mi")),
			corev1.Container{Name: "proxy", Resources: resources("1,1Gi", ""), RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways)}),
			actuated: map[string]containerActuation{"app": applied["app"], "proxy": {ContainerID: "c0", Resources: resources("500m,1Gi", "")}},
			running:  map[string]string{"app": "c1", "proxy": "c0"}, want: []resizeStep{{name: "proxy"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := planActuation(tt.pod, tt.actuated, tt.running); !slices.Equal(got, tt.want) {
				t.Errorf("plan = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestStatusResources(t *testing.T) {
	allocated := resources("750m,256Mi", "2,512Mi")
	allocated.Requests[corev1.ResourceEphemeralStorage] = quantity("1Gi")
	applied := &containerActuation{ContainerID: "c1", Resources: resources("500m,256Mi", "1,512Mi")}
	// While the resize is carried out the running instance reports what it holds, beside the
	// allocation's other resources.
	want := resources("500m,256Mi", "1,512Mi")
	want.Requests[corev1.ResourceEphemeralStorage] = quantity("1Gi")
	if got := statusResources(allocated, applied, "c1"); !apiequality.Semantic.DeepEqual(*got, want) {
		t.Errorf("running: %+v, want %+v", got, want)
	}
	for name, id := range map[string]string{"an exited instance": "", "another instance": "c2"} {
		if got := statusResources(allocated, applied, id); !apiequality.Semantic.DeepEqual(*got, allocated) {
			t.Errorf("%s: %+v, want the allocation", name, got)
		}
	}
	// A best-effort container reports empty resources, with no lists.
	if got := statusResources(corev1.ResourceRequirements{}, nil, "c1"); got.Requests != nil || got.Limits != nil {
		t.Errorf("best effort: %+v", got)
	}
}

// resize changes the pod's container resources the way pods/resize leaves them in the API and
// waits until cond holds. The fake clientset keeps no resourceVersions, so the answer of a status
// write in flight can replace the resized pod in the kubelet's memory as if it were newer; the patch
// is sent again until cond holds, as a later change of the pod would deliver it again.
func (h *harness) resize(name string, res corev1.ResourceRequirements, what string, cond func(*corev1.Pod) bool) *corev1.Pod {
	h.t.Helper()
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "app", "resources": res}}}})
	if err != nil {
		h.t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := h.client.CoreV1().Pods("default").Patch(context.Background(), name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
			h.t.Fatal(err)
		}
		for wait := time.Now().Add(500 * time.Millisecond); time.Now().Before(wait); time.Sleep(5 * time.Millisecond) {
			if p := h.pod("default", name); p != nil && cond(p) {
				return p
			}
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("timed out waiting for %s; pod status: %+v", what, h.pod("default", name).Status)
		}
	}
}

func statusShows(res corev1.ResourceRequirements) func(*corev1.Pod) bool {
	return func(p *corev1.Pod) bool {
		s := statusOf(p, "app")
		return s != nil && s.Resources != nil && apiequality.Semantic.DeepEqual(*s.Resources, res) && apiequality.Semantic.DeepEqual(s.AllocatedResources, res.Requests)
	}
}

func TestResizeInPlace(t *testing.T) {
	h := newHarness(t, nil)
	start := resources("500m,128Mi", "1,256Mi")
	h.create(resizePod("web", start))
	h.waitPod("default", "web", "running with its resources reported", func(p *corev1.Pod) bool { return podRunning(p) && statusShows(start)(p) })
	id := h.runtime.RunningContainer("uid-web", "app")

	bigger := resources("1,256Mi", "2,512Mi")
	pod := h.resize("web", bigger, "resized", statusShows(bigger))
	if calls := h.runtime.CallsTo("UpdateContainerResources"); len(calls) != 1 || calls[0] != "app" {
		t.Errorf("UpdateContainerResources calls = %v, want one for app", calls)
	}
	applied := h.runtime.ContainerConfig(id).GetLinux().GetResources()
	if applied.CpuShares != 1024 || applied.CpuQuota != 200000 || applied.CpuPeriod != 100000 || applied.MemoryLimitInBytes != 512<<20 {
		t.Errorf("applied resources = %+v", applied)
	}
	if got := h.runtime.RunningContainer("uid-web", "app"); got != id || statusOf(pod, "app").RestartCount != 0 {
		t.Errorf("the container was replaced (%s -> %s, restarts %d)", id, got, statusOf(pod, "app").RestartCount)
	}
	for _, c := range []corev1.PodConditionType{corev1.PodResizePending, corev1.PodResizeInProgress} {
		if cond := conditionOf(pod, c); cond != nil {
			t.Errorf("condition %s left after the resize: %+v", c, cond)
		}
	}

	// More memory than the node has: reported, not applied, and the container keeps running as it is.
	pod = h.resize("web", resources("1,64Gi", "2,64Gi"), "infeasible", func(p *corev1.Pod) bool {
		c := conditionOf(p, corev1.PodResizePending)
		return c != nil && c.Reason == corev1.PodReasonInfeasible
	})
	if msg := conditionOf(pod, corev1.PodResizePending).Message; !strings.Contains(msg, "Node didn't have enough capacity: memory") {
		t.Errorf("message = %q", msg)
	}
	if !statusShows(bigger)(pod) || len(h.runtime.CallsTo("UpdateContainerResources")) != 1 {
		t.Errorf("an infeasible resize reached the container: %+v", statusOf(pod, "app").Resources)
	}

	// A restarted kubelet remembers the allocation: it neither admits the infeasible resize nor
	// touches the container.
	h.stop()
	h.start()
	h.stepUntil("relisted", h.cfg.SyncFrequency, func() bool { return len(h.runtime.CallsTo("ListContainers")) > 3 })
	pod = h.waitPod("default", "web", "still infeasible", func(p *corev1.Pod) bool { return conditionOf(p, corev1.PodResizePending) != nil })
	if !statusShows(bigger)(pod) || len(h.runtime.CallsTo("UpdateContainerResources")) != 1 || h.runtime.RunningContainer("uid-web", "app") != id {
		t.Errorf("after the kubelet's restart: %+v, updates %v", statusOf(pod, "app"), h.runtime.CallsTo("UpdateContainerResources"))
	}

	// Back to something that fits: applied, the condition goes.
	h.resize("web", start, "resized back", func(p *corev1.Pod) bool {
		return statusShows(start)(p) && conditionOf(p, corev1.PodResizePending) == nil
	})
	if applied := h.runtime.ContainerConfig(id).GetLinux().GetResources(); applied.CpuQuota != 100000 || applied.MemoryLimitInBytes != 256<<20 {
		t.Errorf("applied resources = %+v", applied)
	}
}

func TestResizeRestartPolicy(t *testing.T) {
	h := newHarness(t, nil)
	restartMemory := corev1.ContainerResizePolicy{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.RestartContainer}
	start := resources("500m,128Mi", "1,256Mi")
	h.create(resizePod("db", start, restartMemory))
	h.waitPod("default", "db", "running", func(p *corev1.Pod) bool { return podRunning(p) && statusShows(start)(p) })
	id := h.runtime.RunningContainer("uid-db", "app")

	smaller := resources("500m,100Mi", "1,200Mi")
	pod := h.resize("db", smaller, "restarted with the new memory", func(p *corev1.Pod) bool {
		s := statusOf(p, "app")
		return statusShows(smaller)(p) && s.RestartCount == 1 && s.State.Running != nil
	})
	newID := h.runtime.RunningContainer("uid-db", "app")
	if newID == id || newID == "" {
		t.Fatalf("container %s not replaced (now %q)", id, newID)
	}
	if got := h.runtime.ContainerConfig(newID).GetLinux().GetResources().MemoryLimitInBytes; got != 200<<20 {
		t.Errorf("new container's memory limit = %d", got)
	}
	if calls := h.runtime.CallsTo("UpdateContainerResources"); len(calls) != 0 {
		t.Errorf("UpdateContainerResources calls = %v; a RestartContainer resize restarts", calls)
	}
	if conditionOf(pod, corev1.PodResizeInProgress) != nil {
		t.Errorf("resize still in progress: %+v", pod.Status.Conditions)
	}
}
