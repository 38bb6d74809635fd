package e2e

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// TestEtcdOnlyNodeKubelet: an etcd-only node (`--roles etcd`, in its own network namespace with
// its own containerd, no --control-plane-kubelet: it runs the kubelet by default, being root with a
// container runtime) joins a control plane with a --control-plane token
// and registers a Node labelled node-role.kubernetes.io/etcd (ROLES etcd) and tainted
// node-role.kubernetes.io/etcd:NoExecute: a DaemonSet that tolerates the taint runs a pod there,
// an ordinary pod stays Pending with the scheduler's reason.
func TestEtcdOnlyNodeKubelet(t *testing.T) {
	n := newTestNet(t)
	c := newJoinCluster(t, n, false)
	token := c.createToken("--control-plane", "--ttl", "1h")
	e := newJoinedNode(t, n.addHost(), "etcd-2", c.ServerURL(n))
	e.roles, e.kubelet = "etcd", true
	// Cleanups run last first: pods deleted while the kubelet runs, then the node stopped, then
	// anything left reaped.
	t.Cleanup(func() { reapKilledWorker(t, e.dataDir) })
	e.start(token)
	t.Cleanup(e.stop)
	t.Cleanup(func() {
		_, _ = c.kubectlErr("delete", "daemonset", "--all", "--timeout=30s")
		_, _ = c.kubectlErr("delete", "pods", "--all", "--grace-period=1", "--timeout=60s")
	})
	eventually(t, 3*time.Minute, func() error {
		if out, err := c.kubectlErr("wait", "--for=condition=Ready", "node/etcd-2", "--timeout=2s"); err != nil {
			node, _ := c.kubectlErr("get", "node", "etcd-2", "-o", `jsonpath=podCIDR={.spec.podCIDR} Ready={.status.conditions[?(@.type=="Ready")].message}`)
			return errString(out + "\n" + node + "\netcd-2's warnings and errors (etcd's left out):\n" + problems(e.logPath()))
		}
		return nil
	})
	// The whole log: log() keeps only the tail, which etcd's warnings under load fill.
	whole, err := os.ReadFile(e.logPath())
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, string(whole), "etcd learner promoted to a voting member", "skiff etcd node ready", "control-plane kubelet: on")
	eventually(t, time.Minute, func() error {
		out := c.kubectl("get", "node", "etcd-2")
		if f := strings.Fields(out); len(f) < 8 || f[5] != "etcd-2" || f[7] != "etcd" {
			return errString("kubectl get node etcd-2:\n" + out)
		}
		return nil
	})
	taints := c.kubectl("get", "node", "etcd-2", "-o", `jsonpath={range .spec.taints[*]}{.key}:{.effect} {end}`)
	mustContain(t, taints, "node-role.kubernetes.io/etcd:NoExecute")
	mustNotContain(t, taints, "control-plane")

	importBusybox(t, c, e)
	c.stdin(toleratingDaemonSet("on-etcd", "node-role.kubernetes.io/etcd", "NoExecute"), "apply", "-f", "-")
	c.stdin(`apiVersion: v1
kind: Pod
metadata: {name: ordinary}
spec:
  containers: [{name: c, image: localhost/busybox:local, command: [sh, -c, "exec sleep 3600"]}]
`, "apply", "-f", "-")
	eventually(t, 2*time.Minute, func() error {
		pods, err := podsOf(c, "on-etcd")
		if err != nil {
			return err
		}
		if len(pods) != 1 || pods[0][0] != "etcd-2" || pods[0][2] != "Running" {
			wide, _ := c.kubectlErr("get", "pods", "-o", "wide")
			return fmt.Errorf("DaemonSet pods %v, want one Running on etcd-2\n%s", pods, wide)
		}
		return nil
	})
	eventually(t, time.Minute, func() error {
		out := c.kubectl("get", "pod", "ordinary", "-o", `jsonpath={.spec.nodeName}|{.status.conditions[?(@.type=="PodScheduled")].message}`)
		node, msg, _ := strings.Cut(out, "|")
		if node != "" {
			t.Fatalf("an ordinary pod was bound to %s", node)
		}
		if !strings.Contains(msg, "untolerated taint") || !strings.Contains(msg, "node-role.kubernetes.io/etcd") {
			return fmt.Errorf("ordinary pod's PodScheduled message %q", msg)
		}
		return nil
	})
}

// problems are the WARN and ERROR lines of a node's whole log that are not etcd's own (the last 40).
func problems(path string) string {
	data, _ := os.ReadFile(path)
	var out []string
	for _, l := range strings.Split(string(data), "\n") {
		if (strings.Contains(l, "level=WARN") || strings.Contains(l, "level=ERROR")) && !strings.Contains(l, "component=etcd") {
			out = append(out, l)
		}
	}
	if len(out) > 40 {
		out = out[len(out)-40:]
	}
	return strings.Join(out, "\n")
}
