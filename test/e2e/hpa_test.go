package e2e

import (
	"strings"
	"testing"
	"time"
)

// burnDeployment is one busybox pod spinning a shell loop: it asks for 100m of cpu and may use
// up to 200m, so its utilization stays well above a 50% target without taking a whole core
// from a shared machine.
const burnDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: burn
spec:
  replicas: 1
  selector:
    matchLabels: {app: burn}
  template:
    metadata:
      labels: {app: burn}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: burn
        image: localhost/busybox:local
        command: ["sh", "-c", "while true; do :; done"]
        resources:
          requests: {cpu: 100m}
          limits: {cpu: 200m}
`

// TestHPAScalesBusyDeployment is the user's path: `kubectl autoscale` of a Deployment under CPU
// load scales it to its maximum, from the usage skiff serves on metrics.k8s.io, and `kubectl get
// hpa` shows the target. It needs metrics.k8s.io served by skiff and skips until it is.
func TestHPAScalesBusyDeployment(t *testing.T) {
	c := newWorkerCluster(t, "--horizontal-pod-autoscaler-sync-period", "5s")
	if out, err := c.kubectlErr("get", "--raw", "/apis/metrics.k8s.io/v1beta1"); err != nil {
		t.Skipf("metrics.k8s.io is not served by this skiff (%s): the HPA has no CPU usage to act on; run this test once the metrics API is merged", strings.TrimSpace(out))
	}
	c.stdin(burnDeployment, "apply", "-f", "-")
	c.kubectl("rollout", "status", "deployment/burn", "--timeout=90s")
	c.kubectl("autoscale", "deploy", "burn", "--cpu-percent=50", "--min=1", "--max=3")

	// The first usage sample needs a pod ready for a whole metrics window; then one sync asks
	// for 4x the replicas, capped at 3.
	eventually(t, 3*time.Minute, func() error {
		if r := c.kubectl("get", "deploy", "burn", "-o", "jsonpath={.spec.replicas}"); r != "3" {
			return errString("deployment replicas " + r + "; hpa: " + c.kubectl("get", "hpa", "burn"))
		}
		return nil
	})
	var out string
	eventually(t, time.Minute, func() error {
		out = c.kubectl("get", "hpa", "burn")
		if !strings.Contains(out, "%/50%") || strings.Contains(out, "<unknown>") {
			return errString("kubectl get hpa: " + out)
		}
		return nil
	})
	mustContain(t, out, "Deployment/burn", "cpu: ", "%/50%")
	mustContain(t, c.kubectl("describe", "hpa", "burn"), "SuccessfulRescale", "ValidMetricFound")
	if r := c.kubectl("get", "deploy", "burn", "-o", "jsonpath={.spec.replicas}"); r != "3" {
		t.Errorf("deployment replicas %s after scaling, want maxReplicas 3", r)
	}
	c.kubectl("delete", "hpa", "burn")
	c.kubectl("delete", "deploy", "burn", "--timeout=60s")
}
