package e2e

import (
	"strings"
	"testing"
	"time"
)

// TestReadOnlyRootFilesystem is the conformance spec "Kubelet when scheduling a read only busybox
// container should not write to root filesystem": with readOnlyRootFilesystem the container's
// write to / fails and its log says so, word for word.
func TestReadOnlyRootFilesystem(t *testing.T) {
	c := newWorkerCluster(t)
	c.stdin(`apiVersion: v1
kind: Pod
metadata: {name: readonly}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: localhost/busybox:local
    command: ["/bin/sh", "-c", "echo test > /file; sleep 240"]
    securityContext: {readOnlyRootFilesystem: true}
`, "apply", "-f", "-")
	eventually(t, 2*time.Minute, func() error {
		out, err := c.kubectlErr("logs", "readonly")
		if err != nil || out != "/bin/sh: can't create /file: Read-only file system\n" {
			state := c.kubectl("get", "pod", "readonly", "-o", "jsonpath={.status.phase} {.status.containerStatuses[0].state}")
			return errString("logs " + strings.TrimSpace(out) + "; pod " + state)
		}
		return nil
	})
}
