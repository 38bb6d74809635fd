package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
)

// resizePods are two busybox pods a user resizes in place: web restarts for nothing, db restarts
// for memory (its resizePolicy).
const resizePods = `apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: localhost/busybox:local
    command: [sleep, inf]
    resources: {requests: {cpu: 250m, memory: 32Mi}, limits: {cpu: 500m, memory: 64Mi}}
---
apiVersion: v1
kind: Pod
metadata: {name: db}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: localhost/busybox:local
    command: [sleep, inf]
    resources: {requests: {cpu: 250m, memory: 32Mi}, limits: {cpu: 500m, memory: 64Mi}}
    resizePolicy:
    - {resourceName: cpu, restartPolicy: NotRequired}
    - {resourceName: memory, restartPolicy: RestartContainer}
`

// cgroupValues reads the container's cgroup v1 cpu and memory files (as the upstream resize specs
// do on such a node) from inside it.
func cgroupValues(t *testing.T, c *cluster, pod string) string {
	t.Helper()
	return strings.Join(strings.Fields(c.kubectl("exec", pod, "--", "cat",
		"/sys/fs/cgroup/cpu/cpu.shares", "/sys/fs/cgroup/cpu/cpu.cfs_quota_us", "/sys/fs/cgroup/memory/memory.limit_in_bytes")), " ")
}

func requirements(reqCPU, reqMem, limCPU, limMem string) corev1.ResourceRequirements {
	return corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(reqCPU), corev1.ResourceMemory: resource.MustParse(reqMem)},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(limCPU), corev1.ResourceMemory: resource.MustParse(limMem)},
	}
}

// resizeWith patches the pod's container through pods/resize, as a user does.
func resizeWith(c *cluster, pod string, res corev1.ResourceRequirements) (string, error) {
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "app", "resources": res}}}})
	if err != nil {
		return "", err
	}
	return c.kubectlErr("patch", "pod", pod, "--subresource", "resize", "--patch", string(patch))
}

// mustResize resizes the pod's container and fails the test if the API refuses it.
func mustResize(t *testing.T, c *cluster, pod string, res corev1.ResourceRequirements) {
	t.Helper()
	if out, err := resizeWith(c, pod, res); err != nil {
		t.Fatalf("resize %s: %v\n%s", pod, err, out)
	}
}

// expectCgroup fails the test unless the pod's container's cgroup files hold want ("shares quota
// memory-limit").
func expectCgroup(t *testing.T, c *cluster, pod, want, when string) {
	t.Helper()
	if got := cgroupValues(t, c, pod); got != want {
		t.Fatalf("cgroup values of %s %s = %q, want %q", pod, when, got, want)
	}
}

// TestInPlacePodResize: a user raises a running busybox pod's cpu and memory with kubectl patch
// --subresource resize; the container keeps running (restartCount 0), its status reports the new
// resources and its cgroup files inside hold the new limits. A resize beyond the node is reported
// Infeasible and changes nothing; a memory resize under a RestartContainer policy restarts the
// container with the new limit; a resize through the pod itself stays forbidden.
func TestInPlacePodResize(t *testing.T) {
	c := newWorkerCluster(t)
	c.stdin(resizePods, "apply", "-f", "-")
	waitRunning(t, c, "web", "db")
	// shares = 250m * 1024 / 1000; quota = 500m of a 100 ms period; 64 MiB.
	expectCgroup(t, c, "web", "256 50000 67108864", "before the resize")

	bigger := requirements("500m", "64Mi", "1", "128Mi")
	mustResize(t, c, "web", bigger)
	eventually(t, 60*time.Second, func() error {
		pod := getPod(t, c, "web")
		s := pod.Status.ContainerStatuses[0]
		switch {
		case s.Resources == nil || !apiequality.Semantic.DeepEqual(*s.Resources, bigger):
			return fmt.Errorf("status resources %v", s.Resources)
		case !apiequality.Semantic.DeepEqual(s.AllocatedResources, bigger.Requests):
			return fmt.Errorf("allocated resources %v", s.AllocatedResources)
		case hasResizeCondition(&pod):
			return fmt.Errorf("resize conditions left: %v", pod.Status.Conditions)
		}
		return nil
	})
	pod := getPod(t, c, "web")
	if s := pod.Status.ContainerStatuses[0]; s.RestartCount != 0 || s.State.Running == nil {
		t.Fatalf("the resize restarted the container: %+v", s)
	}
	expectCgroup(t, c, "web", "512 100000 134217728", "after the resize")

	// More memory than the node has: reported, not applied.
	mustResize(t, c, "web", requirements("500m", "100Ti", "1", "100Ti"))
	eventually(t, 60*time.Second, func() error {
		out := c.kubectl("get", "pod", "web", "-o", `jsonpath={.status.conditions[?(@.type=="PodResizePending")].reason}`)
		if out != corev1.PodReasonInfeasible {
			return fmt.Errorf("PodResizePending reason %q", out)
		}
		return nil
	})
	expectCgroup(t, c, "web", "512 100000 134217728", "after an infeasible resize")

	// Memory of a container whose memory resizePolicy is RestartContainer: a restart with the new
	// limit (lowering a limit is allowed only so).
	smaller := requirements("250m", "24Mi", "500m", "48Mi")
	mustResize(t, c, "db", smaller)
	eventually(t, 60*time.Second, func() error {
		s := getPod(t, c, "db").Status.ContainerStatuses[0]
		if s.RestartCount != 1 || s.State.Running == nil || s.Resources == nil || !apiequality.Semantic.DeepEqual(*s.Resources, smaller) {
			return fmt.Errorf("db status %+v", s)
		}
		return nil
	})
	expectCgroup(t, c, "db", "256 50000 50331648", "after its restart")

	// The same memory decrease without a restart policy is refused, as are changes through the pod.
	out, err := resizeWith(c, "web", requirements("500m", "64Mi", "1", "96Mi"))
	if err == nil || !strings.Contains(out, "memory limits cannot be decreased unless resizePolicy is RestartContainer") {
		t.Fatalf("a memory limit decrease without a restart: %v\n%s", err, out)
	}
	out, err = c.kubectlErr("patch", "pod", "web", "--patch", `{"spec":{"containers":[{"name":"app","resources":{"limits":{"cpu":"2"}}}]}}`)
	if err == nil || !strings.Contains(out, "Forbidden") {
		t.Fatalf("a resize through the pod itself: %v\n%s", err, out)
	}
}

func hasResizeCondition(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodResizePending || c.Type == corev1.PodResizeInProgress {
			return true
		}
	}
	return false
}
