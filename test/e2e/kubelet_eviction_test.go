package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// A pod that writes past its ephemeral-storage limit is evicted by its kubelet, as upstream's
// "evicted pods should be terminal" and "should be rejected for evicted pods" expect: phase
// Failed with reason Evicted, a message naming the limit, a Warning Evicted event, its
// container stopped; a pod that writes past its emptyDir's sizeLimit likewise, and a pod within
// its limits keeps running. Before, the kubelet measured nothing and evicted nothing.
func TestKubeletEvictsOnEphemeralStorage(t *testing.T) {
	c := newWorkerCluster(t)
	c.stdin(`apiVersion: v1
kind: Pod
metadata:
  name: layer-hog
spec:
  restartPolicy: OnFailure
  containers:
  - name: bar
    image: localhost/busybox:local
    command: ["sh", "-c", "dd if=/dev/zero of=/file bs=1M count=10; sleep 10000"]
    resources:
      limits: {ephemeral-storage: 5Mi}
---
apiVersion: v1
kind: Pod
metadata:
  name: volume-hog
spec:
  containers:
  - name: bar
    image: localhost/busybox:local
    command: ["sh", "-c", "dd if=/dev/zero of=/scratch/file bs=1M count=4; sleep 10000"]
    volumeMounts: [{name: scratch, mountPath: /scratch}]
  volumes:
  - name: scratch
    emptyDir: {sizeLimit: 2Mi}
---
apiVersion: v1
kind: Pod
metadata:
  name: tidy
spec:
  containers:
  - name: bar
    image: localhost/busybox:local
    command: ["sh", "-c", "dd if=/dev/zero of=/file bs=1M count=1; sleep 10000"]
    resources:
      limits: {ephemeral-storage: 50Mi}
`, "apply", "-f", "-")
	// The kubelet measures on its housekeeping tick (30 s); containerd refreshes a writable
	// layer's size every 10 s.
	for pod, message := range map[string]string{
		"layer-hog":  "Pod ephemeral local storage usage exceeds the total limit of containers 5Mi.",
		"volume-hog": `Usage of EmptyDir volume "scratch" exceeds the limit "2Mi".`,
	} {
		eventually(t, 3*time.Minute, func() error {
			p := getPod(t, c, pod)
			if p.Status.Phase != corev1.PodFailed {
				return fmt.Errorf("pod %s is %s, want Failed", pod, p.Status.Phase)
			}
			if p.Status.Reason != "Evicted" || !strings.Contains(p.Status.Message, message) {
				return fmt.Errorf("pod %s: reason %q message %q, want Evicted with %q", pod, p.Status.Reason, p.Status.Message, message)
			}
			for _, s := range p.Status.ContainerStatuses {
				if s.State.Terminated == nil {
					return fmt.Errorf("pod %s: container %s not terminated: %+v", pod, s.Name, s.State)
				}
			}
			return nil
		})
		if events := strings.Join(podEvents(t, c, pod), "\n"); !strings.Contains(events, "Evicted") {
			t.Errorf("pod %s: no Evicted event in\n%s", pod, events)
		}
	}
	if p := getPod(t, c, "tidy"); p.Status.Phase != corev1.PodRunning {
		t.Errorf("pod within its limit is %s (%s), want Running", p.Status.Phase, p.Status.Message)
	}
}
