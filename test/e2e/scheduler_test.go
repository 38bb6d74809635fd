package e2e

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/skiff-sh/skiff/internal/simnode"
)

// TestSchedulerWithKubectl: on a real skiff with simulated nodes, kubectl-made pods are
// scheduled and run; an unschedulable pod's `kubectl describe` shows the FailedScheduling event
// in Kubernetes' words; `skiff explain` names the plugin that rejects a node and why.
func TestSchedulerWithKubectl(t *testing.T) {
	c := newCluster(t)
	sim := c.startSimNodes(t, simnode.Config{
		Nodes: 3, NamePrefix: "sched-e2e-", HeartbeatInterval: 2 * time.Second,
		Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi"), corev1.ResourcePods: resource.MustParse("110")},
		Labels:   map[string]string{"disktype": "hdd"},
	})
	nodes := sim.NodeNames()
	k := ctl{c: c, t: t}.namespace("sched")

	k.apply(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 6
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: registry.k8s.io/pause:3.10
        resources:
          requests: {cpu: 200m, memory: 64Mi}
`)
	k.eventually(60*time.Second, func() error {
		out, err := k.try("get", "pods", "-l", "app=web", "-o", "wide", "--no-headers")
		if err != nil {
			return err
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != 6 {
			return fmt.Errorf("%d pods:\n%s", len(lines), out)
		}
		for _, l := range lines {
			f := fields(l)
			// NAME READY STATUS RESTARTS AGE IP NODE ...
			if len(f) < 7 || f[2] != "Running" || !strings.HasPrefix(f[6], "sched-e2e-") {
				return fmt.Errorf("pod not running on a simulated node: %s", l)
			}
		}
		return nil
	})
	for _, ev := range fields(k.run("get", "events", "--field-selector", "reason=Scheduled", "-o", "jsonpath={range .items[*]}{.source.component}{\" \"}{end}")) {
		if ev != "default-scheduler" {
			t.Errorf("Scheduled event from %q", ev)
		}
	}

	k.apply(`apiVersion: v1
kind: Pod
metadata:
  name: too-big
spec:
  containers:
  - name: c
    image: registry.k8s.io/pause:3.10
    resources:
      requests: {cpu: "3"}
---
apiVersion: v1
kind: Pod
metadata:
  name: wants-ssd
spec:
  nodeSelector: {disktype: ssd}
  containers:
  - name: c
    image: registry.k8s.io/pause:3.10
`)
	wantBig := "0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."
	var describe string
	k.eventually(30*time.Second, func() error {
		describe = k.run("describe", "pod", "too-big")
		if !strings.Contains(describe, "FailedScheduling") {
			return fmt.Errorf("no FailedScheduling event yet:\n%s", describe)
		}
		return nil
	})
	mustContain(t, describe, "Warning  FailedScheduling", "default-scheduler", wantBig, "PodScheduled   False", "Status:           Pending")
	if got := k.jsonpath("{.status.conditions[?(@.type==\"PodScheduled\")].reason}", "pod", "too-big"); got != "Unschedulable" {
		t.Errorf("PodScheduled reason %q", got)
	}
	k.eventually(30*time.Second, func() error {
		out := k.run("describe", "pod", "wants-ssd")
		if !strings.Contains(out, "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector.") {
			return fmt.Errorf("describe lacks the node affinity message:\n%s", out)
		}
		return nil
	})

	explain := func(pod, node string) string {
		t.Helper()
		cmd := exec.Command(c.bin, "explain", "--kubeconfig", c.kubeconfig, "-n", "sched", "--node", node, pod)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("skiff explain %s: %v\n%s", pod, err, out)
		}
		return string(out)
	}
	out := explain("too-big", nodes[0])
	mustContain(t, out, "does NOT fit node "+nodes[0], "NodeResourcesFit", "Insufficient cpu")
	verdictLine(t, out, "NodeResourcesFit", "Insufficient cpu")
	out = explain("wants-ssd", nodes[1])
	mustContain(t, out, "does NOT fit node "+nodes[1])
	verdictLine(t, out, "NodeAffinity", "node(s) didn't match Pod's node affinity/selector")
	// Without --node, every node's verdict and the reasons counted (through the API server).
	all, err := exec.Command(c.bin, "explain", "--kubeconfig", c.kubeconfig, "-n", "sched", "too-big").CombinedOutput()
	if err != nil {
		t.Fatalf("skiff explain too-big: %v\n%s", err, all)
	}
	mustContain(t, string(all), "0 of 3 nodes are feasible", "3  Insufficient cpu", nodes[0], nodes[1])
	// A running pod is explained against its own node as if pending: it fits.
	webPod := strings.Fields(k.run("get", "pods", "-l", "app=web", "-o", "jsonpath={.items[0].metadata.name} {.items[0].spec.nodeName}"))
	out = explain(webPod[0], webPod[1])
	mustContain(t, out, "fits node "+webPod[1], "already bound to "+webPod[1])

	// A pod that fits only once the Deployment's pods are gone is scheduled when they go.
	k.apply(`apiVersion: v1
kind: Pod
metadata:
  name: needs-room
spec:
  containers:
  - name: c
    image: registry.k8s.io/pause:3.10
    resources:
      requests: {cpu: 1800m}
`)
	k.eventually(30*time.Second, func() error {
		if got := k.jsonpath("{.status.conditions[?(@.type==\"PodScheduled\")].reason}", "pod", "needs-room"); got != "Unschedulable" {
			return fmt.Errorf("PodScheduled reason %q", got)
		}
		return nil
	})
	k.run("scale", "deployment", "web", "--replicas", "0")
	k.eventually(60*time.Second, func() error {
		if node := k.jsonpath("{.spec.nodeName}", "pod", "needs-room"); node == "" {
			return fmt.Errorf("needs-room still pending")
		}
		return nil
	})
	mustContain(t, k.run("describe", "pod", "needs-room"), "Normal   Scheduled", "Successfully assigned sched/needs-room to sched-e2e-")
	if node := k.jsonpath("{.spec.nodeName}", "pod", "too-big"); node != "" {
		t.Errorf("too-big bound to %s although no node has 3 cpus", node)
	}
}

// verdictLine finds the plugin's row in skiff explain's table and checks its reason.
func verdictLine(t *testing.T, out, plugin, reason string) {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, plugin+" ") && strings.Contains(line, reason) {
			return
		}
	}
	t.Errorf("no %s row with %q in:\n%s", plugin, reason, out)
}
