package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
)

// A pod that terminates keeps being probed for readiness: its preStop hook makes its readiness
// probe fail, so while the hook runs (the container still up) the pod reads Ready=False and its
// Service's EndpointSlice shows the endpoint terminating and not serving, as upstream's
// "should not be able to connect to terminating and unready endpoints if
// PublishNotReadyAddresses is false" expects. Before, the kubelet stopped probing and writing
// status at the deletion, so the pod stayed Ready and served until it was gone.
func TestKubeletTerminatingPodNotReady(t *testing.T) {
	c := newWorkerCluster(t)
	c.stdin(`apiVersion: v1
kind: Service
metadata:
  name: draining
spec:
  selector: {app: draining}
  ports: [{port: 80, targetPort: 8080}]
---
apiVersion: v1
kind: Pod
metadata:
  name: draining
  labels: {app: draining}
spec:
  terminationGracePeriodSeconds: 60
  containers:
  - name: app
    image: localhost/busybox:local
    command: ["sh", "-c", "mkdir -p /www && echo ok > /www/index.html && exec httpd -f -p 8080 -h /www"]
    ports: [{containerPort: 8080}]
    readinessProbe:
      exec: {command: ["sh", "-c", "test ! -f /tmp/stopping"]}
      periodSeconds: 1
    livenessProbe:
      tcpSocket: {port: 8080}
      periodSeconds: 1
    lifecycle:
      preStop:
        exec: {command: ["sh", "-c", "touch /tmp/stopping; sleep 40"]}
`, "apply", "-f", "-")
	waitRunning(t, c, "draining")
	eventually(t, 60*time.Second, func() error {
		ep, err := drainingEndpoint(c)
		if err != nil {
			return err
		}
		if !isTrue(ep.Conditions.Ready) || !isTrue(ep.Conditions.Serving) || isTrue(ep.Conditions.Terminating) {
			return fmt.Errorf("endpoint conditions %s, want ready and serving", conditionsOf(ep))
		}
		return nil
	})

	c.kubectl("delete", "pod", "draining", "--wait=false")
	eventually(t, 30*time.Second, func() error {
		pod := getPod(t, c, "draining")
		if pod.DeletionTimestamp == nil {
			return fmt.Errorf("pod not deleted yet")
		}
		if podReady(pod) {
			return fmt.Errorf("pod still Ready while it terminates")
		}
		for _, s := range pod.Status.ContainerStatuses {
			if s.Name == "app" && (s.Ready || s.State.Running == nil) {
				return fmt.Errorf("container app ready=%v running=%v, want running (its preStop hook sleeps) and not ready", s.Ready, s.State.Running != nil)
			}
		}
		return nil
	})
	eventually(t, 30*time.Second, func() error {
		ep, err := drainingEndpoint(c)
		if err != nil {
			return err
		}
		if isTrue(ep.Conditions.Ready) || isTrue(ep.Conditions.Serving) || !isTrue(ep.Conditions.Terminating) {
			return fmt.Errorf("endpoint conditions %s, want ready false, serving false, terminating true", conditionsOf(ep))
		}
		return nil
	})
	// The container still runs its preStop hook: it was not restarted by a liveness probe nor
	// killed early.
	if pod := getPod(t, c, "draining"); len(pod.Status.ContainerStatuses) != 1 || pod.Status.ContainerStatuses[0].RestartCount != 0 {
		t.Errorf("container statuses while terminating: %+v", pod.Status.ContainerStatuses)
	}
	c.kubectl("delete", "pod", "draining", "--grace-period=1", "--wait=true", "--timeout=60s")
}

// drainingEndpoint is the one endpoint of the Service draining's EndpointSlices.
func drainingEndpoint(c *cluster) (discoveryv1.Endpoint, error) {
	out, err := c.kubectlErr("get", "endpointslices", "-l", "kubernetes.io/service-name=draining", "-o", "json")
	if err != nil {
		return discoveryv1.Endpoint{}, fmt.Errorf("get endpointslices: %v: %s", err, out)
	}
	var list discoveryv1.EndpointSliceList
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		return discoveryv1.Endpoint{}, err
	}
	var all []discoveryv1.Endpoint
	for _, s := range list.Items {
		all = append(all, s.Endpoints...)
	}
	if len(all) != 1 {
		return discoveryv1.Endpoint{}, fmt.Errorf("%d endpoints, want 1", len(all))
	}
	return all[0], nil
}

func isTrue(b *bool) bool { return b != nil && *b }

func conditionsOf(ep discoveryv1.Endpoint) string {
	var parts []string
	for name, b := range map[string]*bool{"ready": ep.Conditions.Ready, "serving": ep.Conditions.Serving, "terminating": ep.Conditions.Terminating} {
		v := "unset"
		if b != nil {
			v = fmt.Sprint(*b)
		}
		parts = append(parts, name+"="+v)
	}
	return strings.Join(parts, " ")
}
