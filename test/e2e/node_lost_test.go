package e2e

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestNodeLostForGood: one control plane (etcd,controlplane, no kubelet, with
// --default-{not-ready,unreachable}-toleration-seconds=5) and two workers, each in its own network
// namespace. A Deployment's pods (given 5 s tolerations of an unreachable node by admission) run on
// the workers; the worker holding most of them is killed with -9 and never comes back: its Node
// goes Ready=Unknown and is tainted unreachable, its pods are evicted and recreated on the other
// worker, and `skiff node remove` cordons and deletes its Node, after which the pods bound to it
// are garbage-collected. (Removing an etcd member with its node is TestEtcdMembershipQuorumStatusAndNodeRemove's.)
func TestNodeLostForGood(t *testing.T) {
	n := newTestNet(t)
	// 20 s keeps healthy workers Ready under load (their Leases renew every 10 s) while the test
	// stays short; upstream's default is 40 s.
	// The pods carry no tolerations of their own: admission adds 5 s ones for the unreachable and
	// not-ready taints (upstream's default is 300 s).
	c := newJoinCluster(t, n, false, "--node-monitor-grace-period=20s",
		"--default-not-ready-toleration-seconds=5", "--default-unreachable-toleration-seconds=5")
	token := c.createToken()
	w1, w2 := newJoinedNode(t, n.addHost(), "worker-1", c.ServerURL(n)), newJoinedNode(t, n.addHost(), "worker-2", c.ServerURL(n))
	for _, w := range []*joinedNode{w1, w2} {
		// Cleanups run last first: pods deleted while the kubelets run, then the workers stopped,
		// then whatever the killed worker left behind reaped.
		t.Cleanup(func() { reapKilledWorker(t, w.dataDir) })
		w.start(token)
		t.Cleanup(w.stop)
	}
	t.Cleanup(func() {
		_, _ = c.kubectlErr("delete", "deployment", "--all", "--timeout=30s")
		_, _ = c.kubectlErr("delete", "pods", "--all", "--grace-period=1", "--timeout=60s")
	})
	waitNodesReady(t, c, 3*time.Minute, "worker-1", "worker-2")
	importBusybox(t, c, w1, w2)
	c.stdin(`apiVersion: apps/v1
kind: Deployment
metadata: {name: lost}
spec:
  replicas: 4
  selector: {matchLabels: {app: lost}}
  template:
    metadata: {labels: {app: lost}}
    spec:
      terminationGracePeriodSeconds: 1
      containers: [{name: c, image: localhost/busybox:local, command: [sh, -c, "exec sleep 3600"]}]
`, "apply", "-f", "-")
	eventually(t, 2*time.Minute, func() error {
		if out, err := c.kubectlErr("rollout", "status", "deployment/lost", "--timeout=2s"); err != nil {
			pods, _ := c.kubectlErr("get", "pods", "-o", "wide")
			return errString(out + pods)
		}
		return nil
	})
	before, err := podsOf(c, "lost")
	if err != nil || len(before) != 4 {
		t.Fatalf("pods of lost: %v (%v)", before, err)
	}
	tolerations := c.kubectl("get", "pod", before[0][1], "-o", `jsonpath={range .spec.tolerations[*]}{.key}:{.effect}:{.tolerationSeconds} {end}`)
	mustContain(t, tolerations, "node.kubernetes.io/not-ready:NoExecute:5", "node.kubernetes.io/unreachable:NoExecute:5")
	onNode := map[string]int{}
	for _, p := range before {
		onNode[p[0]]++
	}
	victim, other := w1, w2
	if onNode["worker-2"] > onNode["worker-1"] {
		victim, other = w2, w1
	}
	t.Logf("pods before the loss: %v; %s goes", before, victim.name)

	lost := time.Now()
	_ = victim.cmd.Process.Kill()
	<-victim.done
	victim.logFile.Close()
	victim.cmd = nil
	// Its containerd (which stops when skiff dies) and the pods' shims go too: the machine is gone.
	reapKilledWorker(t, victim.dataDir)
	eventually(t, 2*time.Minute, func() error {
		status, _ := c.kubectlErr("get", "node", victim.name, "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`)
		taints, _ := c.kubectlErr("get", "node", victim.name, "-o", "jsonpath={.spec.taints}")
		if strings.TrimSpace(status) != "Unknown" || !strings.Contains(taints, "node.kubernetes.io/unreachable") || !strings.Contains(taints, "NoExecute") {
			return fmt.Errorf("%s Ready=%q taints %s", victim.name, status, taints)
		}
		return nil
	})
	t.Logf("figure: lost worker Ready=Unknown and tainted unreachable %s after the kill (grace period 20s)", time.Since(lost).Round(100*time.Millisecond))
	eventually(t, 2*time.Minute, func() error {
		pods, err := podsOf(c, "lost")
		if err != nil {
			return err
		}
		running := 0
		for _, p := range pods {
			if p[0] == victim.name {
				return fmt.Errorf("pod %s still on the lost worker (not evicted yet)", p[1])
			}
			if p[0] == other.name && p[2] == "Running" {
				running++
			}
		}
		if running != 4 {
			wide, _ := c.kubectlErr("get", "pods", "-o", "wide", "--request-timeout=10s")
			return fmt.Errorf("%d of 4 pods running on %s:\n%s", running, other.name, wide)
		}
		return nil
	})
	t.Logf("figure: %d pods of the lost worker recreated and running on %s %s after the kill (default toleration 5 s)",
		onNode[victim.name], other.name, time.Since(lost).Round(100*time.Millisecond))

	// The admin gives the node up: skiff node remove cordons it and deletes its Node (it has no
	// etcd member); the pods still bound to it are then deleted by the pod garbage collector.
	rm, err := exec.Command(skiffBinary, "node", "remove", victim.name, "--data-dir", c.dataDir).CombinedOutput()
	if err != nil {
		t.Fatalf("skiff node remove: %v\n%s", err, rm)
	}
	mustContain(t, string(rm), "node/"+victim.name+" cordoned", "node/"+victim.name+" deleted")
	mustNotContain(t, string(rm), "etcd member")
	if out, err := c.kubectlErr("get", "node", victim.name); err == nil || !strings.Contains(out, "NotFound") {
		t.Fatalf("node %s still exists after skiff node remove: %s", victim.name, out)
	}
	mustContain(t, c.kubectl("get", "nodes"), other.name)
	eventually(t, 2*time.Minute, func() error {
		out := c.kubectl("get", "pods", "-A", "-o", "jsonpath={range .items[*]}{.spec.nodeName} {.metadata.name}{\"\\n\"}{end}")
		for _, line := range strings.Split(out, "\n") {
			if strings.HasPrefix(line, victim.name+" ") {
				return fmt.Errorf("pod bound to the removed node remains: %q", line)
			}
		}
		return nil
	})
	t.Logf("figure: lost worker's pods gone from the API %s after the kill", time.Since(lost).Round(100*time.Millisecond))
}
