package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skiff-sh/skiff/internal/nodeadmin"
)

// Helpers for HA topologies with workers on the multinode harness (multinode_test.go): the first
// control plane on the test bridge's host address, the others in network namespaces of their own
// (like the workers; in one namespace every connection between two local addresses has the
// destination as its source, which etcd's peer certificate check refuses), all on one set of port
// numbers, as the kubernetes endpoints carry a single port.

// haControlPlane starts (or joins, with server and token) an etcd,controlplane node in h (nil: the
// host, on the bridge's address) with the given ports; extra goes to skiff server. Its kubeconfig
// for the test reaches its API server directly (its own balancer listens on its namespace's
// loopback).
func haControlPlane(t *testing.T, n *testNet, h *netHost, name string, ports [3]int, server, token string, extra ...string) *cluster {
	t.Helper()
	return haControlPlaneOn(t, skiffBinary, n, h, name, ports, server, token, extra...)
}

// haControlPlaneOn is haControlPlane running the skiff binary bin.
func haControlPlaneOn(t *testing.T, bin string, n *testNet, h *netHost, name string, ports [3]int, server, token string, extra ...string) *cluster {
	t.Helper()
	return haNodeOn(t, bin, n, h, name, "", ports, server, token, extra...)
}

// haNodeOn is haControlPlaneOn for a node of roles ("": etcd,controlplane), such as an etcd-only
// node ("etcd"), whose admin kubeconfig reaches the API through its balancer.
func haNodeOn(t *testing.T, bin string, n *testNet, h *netHost, name, roles string, ports [3]int, server, token string, extra ...string) *cluster {
	t.Helper()
	dir := filepath.Join(os.TempDir(), "skha"+randomID(t))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	addr := n.HostIP()
	if h != nil {
		addr = h.IP
	}
	args := append([]string{"--bind-address", addr, "--advertise-address", addr, "--node-name", name}, extra...)
	if server != "" {
		args = append(args, "--server", server, "--token", token)
	}
	c := &cluster{t: t, bin: bin, dataDir: dir, ports: ports, extraArgs: args, roles: roles}
	c.kubeconfig = filepath.Join(dir, "admin.kubeconfig")
	switch {
	case h == nil:
		c.start()
	case roles == "etcd":
		// No API server of its own, and its balancer listens on the namespace's loopback: the
		// test reaches the API through the server it joined, once the node says it is ready.
		startInNamespace(c, h, n.HostIP())
		eventually(t, 90*time.Second, func() error {
			if !strings.Contains(c.log(), "skiff etcd node ready") {
				return fmt.Errorf("etcd-only node %s not ready:\n%s", name, c.log())
			}
			return nil
		})
	default:
		startInNamespace(c, h, addr)
	}
	t.Cleanup(c.stop)
	return c
}

// startInNamespace starts c's skiff server in h's network namespace and waits for its API server,
// through a copy of its admin kubeconfig that names addr.
func startInNamespace(c *cluster, h *netHost, addr string) {
	c.t.Helper()
	logFile, err := os.OpenFile(filepath.Join(c.dataDir, "skiff.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		c.t.Fatal(err)
	}
	c.logFile = logFile
	c.cmd = h.Command(c.bin, c.serverArgs()...)
	c.cmd.Stdout, c.cmd.Stderr = logFile, logFile
	if err := c.cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	admin := filepath.Join(c.dataDir, "admin.kubeconfig")
	c.kubeconfig = filepath.Join(c.dataDir, "direct.kubeconfig")
	eventually(c.t, 90*time.Second, func() error {
		data, err := os.ReadFile(admin)
		if err != nil {
			return err
		}
		direct := regexp.MustCompile(`server: https://[^\s]+`).ReplaceAll(data, []byte("server: https://"+addr+":"+strconv.Itoa(c.ports[0])))
		return os.WriteFile(c.kubeconfig, direct, 0o600)
	})
	c.waitReady()
}

// reapKilledWorker removes what a worker killed with -9 leaves behind: its containerd shims and
// their containers (each shim names its -address under the worker's data dir), the pods' network
// namespaces, then the mounts under the data dir.
func reapKilledWorker(t *testing.T, dir string) {
	podNets := map[string]bool{}
	var killTree func(pid string)
	killTree = func(pid string) {
		if ns, err := exec.Command("ip", "netns", "identify", pid).Output(); err == nil && strings.HasPrefix(string(ns), "cni-") {
			podNets[strings.TrimSpace(string(ns))] = true
		}
		children, _ := exec.Command("pgrep", "-P", pid).Output()
		for _, c := range strings.Fields(string(children)) {
			killTree(c)
		}
		if n, err := strconv.Atoi(pid); err == nil {
			if p, err := os.FindProcess(n); err == nil {
				_ = p.Kill()
			}
		}
	}
	shims, _ := exec.Command("pgrep", "-f", "containerd-shim.* -address "+dir+"/").Output()
	for _, pid := range strings.Fields(string(shims)) {
		killTree(pid)
	}
	for ns := range podNets {
		_ = exec.Command("ip", "netns", "del", ns).Run()
	}
	mounts, _ := os.ReadFile("/proc/mounts")
	var under []string
	for _, line := range strings.Split(string(mounts), "\n") {
		if f := strings.Fields(line); len(f) > 1 && strings.HasPrefix(f[1], dir+"/") {
			under = append(under, f[1])
		}
	}
	for i := len(under) - 1; i >= 0; i-- {
		if out, err := exec.Command("umount", "-l", under[i]).CombinedOutput(); err != nil {
			t.Logf("umount %s: %v %s", under[i], err, out)
		}
	}
}

// haStatus is `skiff status -o json` through c's test kubeconfig.
func haStatus(t *testing.T, c *cluster) (nodeadmin.Report, error) {
	out, err := exec.Command(skiffBinary, "status", "-o", "json", "--kubeconfig", c.kubeconfig).Output()
	var r nodeadmin.Report
	if err != nil {
		return r, fmt.Errorf("skiff status: %v", err)
	}
	if err := json.Unmarshal(out, &r); err != nil {
		return r, fmt.Errorf("skiff status -o json: %v\n%s", err, out)
	}
	return r, nil
}

// withoutToken drops --server's --token from a node's arguments (a restart needs none).
func withoutToken(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		if args[i] == "--token" {
			i++
			continue
		}
		out = append(out, args[i])
	}
	return out
}

// importBusybox builds the busybox image once and imports it into each worker's containerd.
func importBusybox(t *testing.T, c *cluster, workers ...*joinedNode) {
	t.Helper()
	archive, err := execOutput(skiffBinary, "images", "build-busybox", "--out", c.dataDir)
	if err != nil {
		t.Fatalf("build image: %v\n%s", err, archive)
	}
	for _, w := range workers {
		if out, err := execOutput(skiffBinary, "images", "import", "--data-dir", w.dataDir, strings.TrimSpace(archive)); err != nil {
			t.Fatalf("import image on %s: %v\n%s", w.name, err, out)
		}
	}
}

// waitNodesReady waits for the named Nodes' Ready condition.
func waitNodesReady(t *testing.T, c *cluster, timeout time.Duration, names ...string) {
	t.Helper()
	args := []string{"wait", "--for=condition=Ready", "--timeout=2s"}
	for _, n := range names {
		args = append(args, "node/"+n)
	}
	eventually(t, timeout, func() error {
		if out, err := c.kubectlErr(args...); err != nil {
			return errString(out)
		}
		return nil
	})
}

// evictableDeployment is a Deployment of sleeping busybox pods that tolerate an unreachable or
// not-ready node for only tolerateSeconds (the defaults are 300 s).
func evictableDeployment(name string, replicas, tolerateSeconds int) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: %[1]s}
spec:
  replicas: %[2]d
  selector: {matchLabels: {app: %[1]s}}
  template:
    metadata: {labels: {app: %[1]s}}
    spec:
      terminationGracePeriodSeconds: 1
      tolerations:
      - {key: node.kubernetes.io/unreachable, operator: Exists, effect: NoExecute, tolerationSeconds: %[3]d}
      - {key: node.kubernetes.io/not-ready, operator: Exists, effect: NoExecute, tolerationSeconds: %[3]d}
      containers:
      - name: c
        image: localhost/busybox:local
        command: [sh, -c, "exec sleep 3600"]
`, name, replicas, tolerateSeconds)
}

// podsOf lists "node name phase" of the pods labelled app=name that are not being deleted.
func podsOf(c *cluster, app string) ([][3]string, error) {
	out, err := c.kubectlErr("get", "pods", "-l", "app="+app, "--request-timeout=10s", "-o",
		`jsonpath={range .items[*]}{.spec.nodeName} {.metadata.name} {.status.phase} {.metadata.deletionTimestamp}{"\n"}{end}`)
	if err != nil {
		return nil, fmt.Errorf("%v: %s", err, out)
	}
	var pods [][3]string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 3 { // a fourth field is a deletion timestamp
			pods = append(pods, [3]string{f[0], f[1], f[2]})
		}
	}
	return pods, nil
}

// leaseRenewTime is a node's Lease renewTime in kube-node-lease.
func leaseRenewTime(c *cluster, node string) (time.Time, error) {
	out, err := c.kubectlErr("get", "lease", "-n", "kube-node-lease", node, "--request-timeout=10s", "-o", "jsonpath={.spec.renewTime}")
	if err != nil {
		return time.Time{}, fmt.Errorf("%v: %s", err, out)
	}
	return time.Parse(time.RFC3339Nano, strings.TrimSpace(out))
}

// TestHAStackedWithWorkers is the HA topology with workers, and the figures of each join:
//   - a first etcd,controlplane node, two more joining stacked (etcd learner, promoted, then their
//     API servers), all on addresses of the test bridge with one set of ports;
//   - two worker-only nodes, each in its own network namespace, joined through the API server of
//     the node holding the etcd leader; their kubelet, proxy and DNS go through their node-local
//     balancer, which learns the other two API servers from the kubernetes endpoints;
//   - kill -9 of that node (the etcd leader, and the API server the workers joined through): the
//     workers' kubelets keep renewing their Leases through the others, the Nodes stay Ready, the
//     pods on them keep running, and a new Deployment's pods schedule and run;
//   - a worker lost for good (kill -9, never back): its Node goes Unknown and is tainted
//     unreachable, and its pods are evicted after their tolerationSeconds and recreated on the
//     other worker.
func TestHAStackedWithWorkers(t *testing.T) {
	n := newTestNet(t)
	ports := [3]int{freePort(t), freePort(t), freePort(t)}
	// Upstream's default grace period. It must stay well above the kubelets' Lease renewal interval
	// (10 s): with 8 s healthy workers flapped to Unknown, and with 20 s a worker on this loaded
	// machine (load average 60) once went NotReady after the control-plane kill and lost its pods.
	grace := []string{"--node-monitor-grace-period=40s"}
	began := time.Now()
	cp1 := haControlPlane(t, n, nil, "cp-1", ports, "", "", grace...)
	t.Logf("figure: single node (etcd,controlplane) start to serving: %s", time.Since(began).Round(100*time.Millisecond))
	token := cp1.createToken("--control-plane", "--ttl", "1h")
	workerToken := cp1.createToken()
	url := func(ip string) string { return "https://" + ip + ":" + strconv.Itoa(ports[0]) }
	cps := map[string]*cluster{"cp-1": cp1}
	addrs := map[string]string{"cp-1": n.HostIP()}
	hosts := map[string]*netHost{}
	for i := range 2 {
		name := fmt.Sprintf("cp-%d", i+2)
		h := n.addHost()
		began := time.Now()
		cps[name], addrs[name], hosts[name] = haControlPlane(t, n, h, name, ports, url(n.HostIP()), token, grace...), h.IP, h
		t.Logf("figure: stacked control plane %s join to serving: %s", name, time.Since(began).Round(100*time.Millisecond))
	}
	var leader string
	eventually(t, time.Minute, func() error {
		r, err := haStatus(t, cp1)
		if err != nil {
			return err
		}
		if r.Etcd == nil || len(r.Etcd.Members) != 3 || !r.Etcd.Quorum {
			return fmt.Errorf("want 3 members with quorum: %+v %s", r.Etcd, r.EtcdError)
		}
		for _, m := range r.Etcd.Members {
			if m.IsLearner || !m.Healthy {
				return fmt.Errorf("member %s not a healthy voter", m.Name)
			}
			if m.IsLeader {
				leader = m.Name
			}
		}
		if cps[leader] == nil {
			return fmt.Errorf("no leader among %v yet: %q", r.Etcd.Members, leader)
		}
		return nil
	})
	victim := cps[leader]
	var survivor *cluster
	for name, c := range cps {
		if name != leader {
			survivor = c
		}
	}
	victimURL, victimHost := url(addrs[leader]), hosts[leader]
	// The kubernetes endpoints list the three API servers before the workers join.
	eventually(t, time.Minute, func() error {
		if got, err := endpointsOf(survivor); err != nil || len(strings.Fields(got)) != 3 {
			return fmt.Errorf("kubernetes endpoints %q (%v)", got, err)
		}
		return nil
	})

	w1, w2 := newJoinedNode(t, n.addHost(), "worker-1", victimURL), newJoinedNode(t, n.addHost(), "worker-2", victimURL)
	began = time.Now()
	for _, w := range []*joinedNode{w1, w2} {
		// Cleanups run last first: pods deleted while the kubelets run, then the workers stopped,
		// then whatever a killed worker left behind reaped.
		t.Cleanup(func() { reapKilledWorker(t, w.dataDir) })
		w.start(workerToken)
		t.Cleanup(w.stop)
	}
	t.Cleanup(func() {
		_, _ = survivor.kubectlErr("delete", "deployment", "--all", "--timeout=30s")
		_, _ = survivor.kubectlErr("delete", "pods", "--all", "--grace-period=1", "--timeout=60s")
	})
	waitNodesReady(t, survivor, 3*time.Minute, "worker-1", "worker-2")
	t.Logf("figure: two workers (started together) join to Ready: %s", time.Since(began).Round(100*time.Millisecond))
	// Each worker's balancer learned all three API servers.
	for _, w := range []*joinedNode{w1, w2} {
		eventually(t, time.Minute, func() error {
			data, _ := os.ReadFile(filepath.Join(w.dataDir, "lb-backends"))
			if len(strings.Fields(string(data))) != 3 {
				return fmt.Errorf("%s's balancer learned %q\n%s", w.name, data, w.log())
			}
			return nil
		})
		whole, _ := os.ReadFile(w.logPath())
		mustContain(t, string(whole), "node-local API load balancer listening")
	}
	importBusybox(t, survivor, w1, w2)
	survivor.stdin(evictableDeployment("steady", 4, 5), "apply", "-f", "-")
	eventually(t, 3*time.Minute, func() error {
		if out, err := survivor.kubectlErr("rollout", "status", "deployment/steady", "--timeout=2s"); err != nil {
			return errString(out)
		}
		return nil
	})
	steady, err := podsOf(survivor, "steady")
	if err != nil || len(steady) != 4 {
		t.Fatalf("pods of steady: %v (%v)", steady, err)
	}
	t.Logf("steady's pods: %v", steady)

	// Kill the etcd leader's node, the API server the workers joined through, with a writer on
	// each surviving control plane recording every acknowledged write across it.
	var survivors []*cluster
	for name, c := range cps {
		if name != leader {
			survivors = append(survivors, c)
		}
	}
	writes := startWriteRecorder(t, "haw", survivors...)
	writes.waitForMore(t, 3, time.Minute)
	killed := time.Now()
	victim.kill()
	t.Logf("killed %s (etcd leader, the workers' --server)", leader)
	for _, w := range []string{"worker-1", "worker-2"} {
		eventually(t, 2*time.Minute, func() error {
			renewed, err := leaseRenewTime(survivor, w)
			if err != nil {
				return err
			}
			if !renewed.After(killed.Add(time.Second)) {
				return fmt.Errorf("%s's Lease last renewed %s, before the kill", w, renewed)
			}
			return nil
		})
	}
	t.Logf("figure: both workers' Leases renewed through another API server %s after the kill", time.Since(killed).Round(100*time.Millisecond))
	waitNodesReady(t, survivor, time.Minute, "worker-1", "worker-2")
	// The pods that ran keep running: the same pods, still Running.
	after, err := podsOf(survivor, "steady")
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(after) != fmt.Sprint(steady) {
		t.Fatalf("the workers' pods changed across the control-plane kill:\nbefore %v\nafter  %v", steady, after)
	}
	// New pods still schedule and run, on the workers.
	survivor.stdin(evictableDeployment("fresh", 2, 5), "apply", "-f", "-")
	eventually(t, 3*time.Minute, func() error {
		if out, err := survivor.kubectlErr("rollout", "status", "deployment/fresh", "--timeout=2s"); err != nil {
			pods, _ := survivor.kubectlErr("get", "pods", "-o", "wide")
			return errString(out + pods)
		}
		return nil
	})
	t.Logf("figure: a new Deployment rolled out %s after the kill", time.Since(killed).Round(100*time.Millisecond))
	writes.waitForMore(t, 5, time.Minute)
	writes.stopAndCheck(t, survivor, "the control-plane kill", killed)

	// A worker lost for good: worker-1 is killed and never comes back.
	var onW1 int
	for _, p := range after {
		if p[0] == "worker-1" {
			onW1++
		}
	}
	lost := time.Now()
	_ = w1.cmd.Process.Kill()
	<-w1.done
	w1.logFile.Close()
	w1.cmd = nil
	eventually(t, 2*time.Minute, func() error {
		status, _ := survivor.kubectlErr("get", "node", "worker-1", "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`)
		taints, _ := survivor.kubectlErr("get", "node", "worker-1", "-o", "jsonpath={.spec.taints}")
		if strings.TrimSpace(status) != "Unknown" || !strings.Contains(taints, "node.kubernetes.io/unreachable") || !strings.Contains(taints, "NoExecute") {
			return fmt.Errorf("worker-1 Ready=%q taints %s", status, taints)
		}
		return nil
	})
	t.Logf("figure: lost worker Ready=Unknown and tainted unreachable %s after the kill", time.Since(lost).Round(100*time.Millisecond))
	eventually(t, 3*time.Minute, func() error {
		pods, err := podsOf(survivor, "steady")
		if err != nil {
			return err
		}
		running := 0
		for _, p := range pods {
			if p[0] == "worker-1" {
				return fmt.Errorf("pod %s still on the lost worker (not evicted yet)", p[1])
			}
			if p[2] == "Running" {
				running++
			}
		}
		if running != 4 {
			wide, _ := survivor.kubectlErr("get", "pods", "-o", "wide", "--request-timeout=10s")
			nodes, _ := survivor.kubectlErr("get", "nodes", "--request-timeout=10s")
			rs, _ := survivor.kubectlErr("get", "rs", "--request-timeout=10s")
			leases, _ := survivor.kubectlErr("get", "lease", "-n", "kube-node-lease", "-o", "yaml", "--request-timeout=10s")
			return fmt.Errorf("%d of 4 pods running on the other worker: %v\n%s\n%s\n%s\n%s\nworker-2:\n%s", running, pods, wide, nodes, rs, leases, w2.log())
		}
		return nil
	})
	t.Logf("figure: %d pods of the lost worker recreated and running on worker-2 %s after the kill (tolerationSeconds 5, grace period 40s)",
		onW1, time.Since(lost).Round(100*time.Millisecond))
	// The killed control plane comes back without its token and serves again.
	victim.extraArgs = withoutToken(victim.extraArgs)
	if leader == "cp-1" {
		victim.start()
	} else {
		startInNamespace(victim, victimHost, addrs[leader])
	}
	mustContain(t, victim.kubectl("get", "deployment", "fresh"), "fresh")
}
