package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// TestJoinWorkers: one control plane (etcd,controlplane, no --control-plane-kubelet: by default
// it runs a kubelet, being root with containerd, and registers a Node labelled with its roles and
// tainted control-plane:NoSchedule, where ordinary pods do not land and a DaemonSet that tolerates
// the taint does) on the host and two worker-only nodes, each in its own network namespace with
// its own containerd, joined with `skiff token create`'s token. Refused joins (wrong CA pin,
// expired token, deleted token) say why and leave no data dir; a restarted worker rejoins without
// the token.
func TestJoinWorkers(t *testing.T) {
	n := newTestNet(t)
	c := newJoinCluster(t, n, true)
	server := c.ServerURL(n)
	token := c.createToken("--description", "e2e workers")
	mustContain(t, token, "K10", "::")
	mustContain(t, c.kubectl("get", "secrets", "-n", "kube-system", "--field-selector", "type=bootstrap.kubernetes.io/token"), "bootstrap-token-")
	listed, err := execOutput(skiffBinary, "token", "list", "--data-dir", c.dataDir)
	if err != nil {
		t.Fatalf("token list: %v\n%s", err, listed)
	}
	id := strings.SplitN(strings.SplitN(token, "::", 2)[1], ".", 2)[0]
	mustContain(t, listed, id, "e2e workers", "authentication,signing")
	mustNotContain(t, listed, strings.SplitN(token, ".", 2)[1])

	h1, h2, h3 := n.addHost(), n.addHost(), n.addHost()

	// Refusals first: nothing may be half-joined.
	bad := newJoinedNode(t, h3, "refused", server)
	wrongPin := "K10" + strings.Repeat("0", 64) + token[3+64:]
	mustContain(t, bad.joinRefused(wrongPin), "does not match the CA hash in the join token")
	deleted := c.createToken()
	delID := strings.SplitN(strings.SplitN(deleted, "::", 2)[1], ".", 2)[0]
	if out, err := execOutput(skiffBinary, "token", "delete", "--data-dir", c.dataDir, delID); err != nil {
		t.Fatalf("token delete: %v\n%s", err, out)
	}
	mustContain(t, bad.joinRefused(deleted), "refused the bootstrap token")
	expiring := c.createToken("--ttl", "2s")
	expires := time.Now().Add(2 * time.Second)
	time.Sleep(time.Until(expires) + 500*time.Millisecond) // the token must have expired before it is tried
	mustContain(t, bad.joinRefused(expiring), "refused the bootstrap token")
	if _, err := os.Stat(bad.dataDir); !os.IsNotExist(err) {
		t.Fatalf("a refused join left its data dir %s behind (%v)", bad.dataDir, err)
	}

	start := time.Now()
	w1, w2 := newJoinedNode(t, h1, "worker-1", server), newJoinedNode(t, h2, "worker-2", server)
	for _, w := range []*joinedNode{w1, w2} {
		w.start(token)
		t.Cleanup(w.stop)
	}
	t.Cleanup(func() {
		_, _ = c.kubectlErr("delete", "daemonset", "--all", "--timeout=30s")
		_, _ = c.kubectlErr("delete", "deployment", "--all", "--timeout=30s")
		_, _ = c.kubectlErr("delete", "pods", "--all", "--grace-period=1", "--timeout=60s")
	})
	eventually(t, 120*time.Second, func() error {
		out, err := c.kubectlErr("wait", "--for=condition=Ready", "node/worker-1", "node/worker-2", "--timeout=2s")
		if err != nil {
			return errString(out + "\nworker-1:\n" + w1.log() + "\nworker-2:\n" + w2.log())
		}
		return nil
	})
	t.Logf("two workers joined and Ready %s after their start", time.Since(start).Round(100*time.Millisecond))
	// Three nodes with their roles; the control plane's carries the taint that keeps pods off it.
	eventually(t, 60*time.Second, func() error {
		out := c.kubectl("get", "nodes")
		if strings.Count(out, "worker ") < 2 || !strings.Contains(out, "control-plane,etcd") || strings.Count(out, " Ready ") < 3 {
			return errString("nodes: " + out)
		}
		return nil
	})
	// The whole log: log() keeps only the tail.
	whole, err := os.ReadFile(filepath.Join(c.dataDir, "skiff.log"))
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, string(whole), "control-plane kubelet: on")
	checkControlPlaneNode(t, c, "cp-1")
	// Each node uses its own podCIDR: node IPAM's for the joined workers.
	cidrs := c.kubectl("get", "nodes", "-o", "jsonpath={.items[*].spec.podCIDR}")
	if f := strings.Fields(cidrs); len(f) != 3 || f[0] == f[1] || f[1] == f[2] || f[0] == f[2] {
		t.Fatalf("podCIDRs %q", cidrs)
	}

	archive, err := execOutput(skiffBinary, "images", "build-busybox", "--out", c.dataDir)
	if err != nil {
		t.Fatalf("build image: %v\n%s", err, archive)
	}
	for name, dir := range map[string]string{w1.name: w1.dataDir, w2.name: w2.dataDir, "cp-1": c.dataDir} {
		if out, err := execOutput(skiffBinary, "images", "import", "--data-dir", dir, strings.TrimSpace(archive)); err != nil {
			t.Fatalf("import image on %s: %v\n%s", name, err, out)
		}
	}
	c.kubectl("create", "deployment", "web", "--image=localhost/busybox:local", "--replicas=4", "--",
		"sh", "-c", "echo hello-from-$(hostname); exec httpd -f -p 8080")
	eventually(t, 120*time.Second, func() error {
		out, err := c.kubectlErr("rollout", "status", "deployment/web", "--timeout=2s")
		if err != nil {
			return errString(out + c.kubectl("get", "pods", "-o", "wide"))
		}
		return nil
	})
	placed := c.kubectl("get", "pods", "-l", "app=web", "-o", "jsonpath={range .items[*]}{.spec.nodeName} {.metadata.name}{\"\\n\"}{end}")
	var pod, onWorker1 string
	for _, line := range strings.Split(strings.TrimSpace(placed), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 || (f[0] != "worker-1" && f[0] != "worker-2") {
			t.Fatalf("pod placed off the workers: %q", line)
		}
		pod = f[1]
		if f[0] == "worker-1" {
			onWorker1 = f[1]
		}
	}
	// A DaemonSet that tolerates the control plane's taint runs there too.
	c.stdin(toleratingDaemonSet("everywhere", "node-role.kubernetes.io/control-plane", "NoSchedule"), "apply", "-f", "-")
	eventually(t, 2*time.Minute, func() error {
		pods, err := podsOf(c, "everywhere")
		if err != nil {
			return err
		}
		running := map[string]bool{}
		for _, p := range pods {
			running[p[0]] = running[p[0]] || p[2] == "Running"
		}
		if len(pods) != 3 || !running["cp-1"] || !running["worker-1"] || !running["worker-2"] {
			wide, _ := c.kubectlErr("get", "pods", "-o", "wide")
			return fmt.Errorf("DaemonSet pods %v, want one Running on each of cp-1, worker-1, worker-2\n%s", pods, wide)
		}
		return nil
	})
	// API server -> the worker's kubelet on its own address, with its CSR-issued serving certificate.
	eventually(t, 30*time.Second, func() error {
		if out, _ := c.kubectlErr("logs", pod); !strings.Contains(out, "hello-from-") {
			return errString("logs: " + out)
		}
		return nil
	})
	mustContain(t, c.kubectl("get", "csr"), "kubernetes.io/kube-apiserver-client-kubelet", "kubernetes.io/kubelet-serving", "system:bootstrap:"+id, "Approved,Issued")

	// A restart needs no token: the node finds its certificates.
	w1.stop()
	w1.start("")
	eventually(t, 60*time.Second, func() error {
		if !strings.Contains(w1.log(), "rejoining without a token") {
			return errString("worker-1 restart: " + w1.log())
		}
		out, err := c.kubectlErr("wait", "--for=condition=Ready", "node/worker-1", "--timeout=2s")
		if err != nil {
			return errString(out)
		}
		return nil
	})
	mustContain(t, c.kubectl("get", "nodes"), "worker-1", "worker-2")
	if onWorker1 != "" {
		// The restarted kubelet serves again with the serving certificate it kept on disk.
		eventually(t, 60*time.Second, func() error {
			if out, _ := c.kubectlErr("logs", onWorker1); !strings.Contains(out, "hello-from-") {
				return errString("logs after restart: " + out)
			}
			return nil
		})
	}
}

// checkControlPlaneNode checks the Node of control plane name as `kubectl get nodes -o json` shows
// it: labelled with its roles (control-plane, etcd; not worker) and tainted
// node-role.kubernetes.io/control-plane:NoSchedule.
func checkControlPlaneNode(t *testing.T, c *cluster, name string) {
	t.Helper()
	var nodes corev1.NodeList
	if err := json.Unmarshal([]byte(c.kubectl("get", "nodes", "-o", "json")), &nodes); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Items {
		if n.Name != name {
			continue
		}
		for _, l := range []string{"node-role.kubernetes.io/control-plane", "node-role.kubernetes.io/etcd"} {
			if _, ok := n.Labels[l]; !ok {
				t.Errorf("node %s has no label %s: %v", name, l, n.Labels)
			}
		}
		if _, ok := n.Labels["node-role.kubernetes.io/worker"]; ok {
			t.Errorf("node %s is labelled a worker: %v", name, n.Labels)
		}
		for _, taint := range n.Spec.Taints {
			if taint.Key == "node-role.kubernetes.io/control-plane" && taint.Effect == corev1.TaintEffectNoSchedule {
				return
			}
		}
		t.Fatalf("node %s lacks the taint node-role.kubernetes.io/control-plane:NoSchedule: %v", name, n.Spec.Taints)
	}
	t.Fatalf("no node %s in kubectl get nodes -o json", name)
}

// toleratingDaemonSet is a DaemonSet of busybox pods labelled app=name that tolerate the taint
// key:effect of a control-plane or etcd node's Node.
func toleratingDaemonSet(name, key, effect string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: DaemonSet
metadata: {name: %[1]s}
spec:
  selector: {matchLabels: {app: %[1]s}}
  template:
    metadata: {labels: {app: %[1]s}}
    spec:
      terminationGracePeriodSeconds: 1
      tolerations: [{key: %[2]s, operator: Exists, effect: %[3]s}]
      containers: [{name: c, image: localhost/busybox:local, command: [sh, -c, "exec sleep 3600"]}]
`, name, key, effect)
}
