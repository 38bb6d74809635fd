package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skiff-sh/skiff/internal/podnet"
)

// podNetCluster is a control plane on the host (no kubelet: nothing of the pod network lands in
// the host's own namespace) and three joined workers, each in a network namespace of its own on
// the test's bridge, with the busybox image and nettool (hostPath /tools) on every node.
type podNetCluster struct {
	c       *cluster
	net     *testNet
	workers []*joinedNode
	tools   string
}

func newPodNetCluster(t *testing.T) *podNetCluster {
	t.Helper()
	n := newTestNet(t)
	c := newTmpfsJoinCluster(t, n)
	token := c.createToken()
	pc := &podNetCluster{c: c, net: n}
	for i := 1; i <= 3; i++ {
		w := newJoinedNode(t, n.addHost(), fmt.Sprintf("worker-%d", i), c.ServerURL(n))
		w.start(token)
		t.Cleanup(w.stop)
		pc.workers = append(pc.workers, w)
	}
	t.Cleanup(func() {
		_, _ = c.kubectlErr("delete", "pods,services", "--all", "--grace-period=1", "--timeout=60s")
	})
	eventually(t, 300*time.Second, func() error {
		out, err := c.kubectlErr("wait", "--for=condition=Ready", "node/worker-1", "node/worker-2", "node/worker-3", "--timeout=2s")
		if err != nil {
			logs := ""
			for _, w := range pc.workers {
				logs += "\n" + w.name + ":\n" + w.log()
			}
			return errString(out + logs)
		}
		return nil
	})
	archive, err := execOutput(skiffBinary, "images", "build-busybox", "--out", c.dataDir)
	if err != nil {
		t.Fatalf("build image: %v\n%s", err, archive)
	}
	for _, w := range pc.workers {
		if out, err := execOutput(skiffBinary, "images", "import", "--data-dir", w.dataDir, strings.TrimSpace(archive)); err != nil {
			t.Fatalf("import image on %s: %v\n%s", w.name, err, out)
		}
	}
	pc.tools = filepath.Join(os.TempDir(), "skjt"+randomID(t))
	t.Cleanup(func() { os.RemoveAll(pc.tools) })
	buildNettool(t, pc.tools)
	return pc
}

// newTmpfsJoinCluster is newJoinCluster without a kubelet, its data dir on a tmpfs of its own:
// the embedded etcd refuses writes when its file system has less than a twentieth free, which
// the shared test machine's disk often has not.
func newTmpfsJoinCluster(t *testing.T, n *testNet) *cluster {
	t.Helper()
	dir := filepath.Join(os.TempDir(), "skjm"+randomID(t))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	run(t, "mount", "-t", "tmpfs", "-o", "size=768m,mode=0700", "tmpfs", dir)
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
	c := &cluster{t: t, bin: skiffBinary, dataDir: dir, extraArgs: []string{"--bind-address", n.HostIP(), "--advertise-address", n.HostIP(), "--node-name", "cp-1"}}
	c.ports = [3]int{freePort(t), freePort(t), freePort(t)}
	c.kubeconfig = filepath.Join(c.dataDir, "admin.kubeconfig")
	c.start()
	t.Cleanup(c.stop)
	return c
}

// podCIDR is a node's pod range.
func (pc *podNetCluster) podCIDR(t *testing.T, node string) string {
	t.Helper()
	var cidr string
	eventually(t, 30*time.Second, func() error {
		cidr = pc.c.kubectl("get", "node", node, "-o", "jsonpath={.spec.podCIDR}")
		if cidr == "" {
			return fmt.Errorf("%s has no podCIDR yet", node)
		}
		return nil
	})
	return cidr
}

// podRoutes are the pod-network routes in a worker's namespace.
func podRoutes(t *testing.T, w *joinedNode) string {
	t.Helper()
	out, err := w.host.Command("ip", "-4", "route", "show", "proto", fmt.Sprint(podnet.Protocol)).CombinedOutput()
	if err != nil {
		t.Fatalf("ip route in %s: %v\n%s", w.name, err, out)
	}
	return string(out)
}

// whoamiPod runs nettool's http-whoami on :8080 on node, labelled app=who.
func (pc *podNetCluster) whoamiPod(name, node string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
  labels: {app: who}
spec:
  nodeName: %s
  terminationGracePeriodSeconds: 1
  containers:
  - name: who
    image: localhost/busybox:local
    command: ["/tools/nettool", "http-whoami", "8080"]
    ports: [{containerPort: 8080}]
    readinessProbe:
      tcpSocket: {port: 8080}
      periodSeconds: 1
    volumeMounts: [{name: tools, mountPath: /tools}]
  volumes:
  - name: tools
    hostPath: {path: %s}
---
`, name, node, pc.tools)
}

// natRulesFor waits until a worker's nat table has rules for addr (a cluster IP).
func natRulesFor(t *testing.T, w *joinedNode, addrs ...string) {
	t.Helper()
	eventually(t, 60*time.Second, func() error {
		out, err := hostRules(w.host.Command)
		if err != nil {
			return fmt.Errorf("iptables-save in %s: %v: %s", w.name, err, out)
		}
		for _, a := range addrs {
			if !hostHasVIPRule(out, a) {
				return fmt.Errorf("no rule for %s on %s yet", a, w.name)
			}
		}
		return nil
	})
}

// TestPodNetworkAcrossNodes is issue 9's pod network with three workers in network namespaces:
// every worker routes the others' podCIDRs via their addresses; pod-to-pod traffic crosses nodes
// without NAT (the server sees the client pod's IP), directly and through a Service; a Service
// name resolves and answers from a pod on every node and from every node itself; a node that
// leaves takes its routes with it (from the others, and its own on a clean stop).
//
// The same cluster first serves the load balancer checks (loadBalancerService, once a test of its own), so
// the three workers start once for both.
func TestPodNetworkAcrossNodes(t *testing.T) {
	pc := newPodNetCluster(t)
	t.Run("load balancer service", func(t *testing.T) {
		loadBalancerService(t, pc.forTest(t))
		// Its pods and Services go before the pod network's own (the same names and labels).
		pc.forTest(t).c.kubectl("delete", "pods,services", "-l", "app=who", "--grace-period=1", "--timeout=60s")
		pc.forTest(t).c.kubectl("delete", "services", "lb", "lb2", "--ignore-not-found", "--timeout=60s")
	})
	t.Run("pod network", func(t *testing.T) { podNetworkAcrossNodes(t, pc.forTest(t)) })
}

// forTest is pc with kubectl failures reported to t (a subtest) instead of the test that
// started the cluster.
func (pc *podNetCluster) forTest(t *testing.T) *podNetCluster {
	c := *pc.c
	c.t = t
	sub := *pc
	sub.c = &c
	return &sub
}

func podNetworkAcrossNodes(t *testing.T, pc *podNetCluster) {
	c := pc.c
	cidrs := map[string]string{}
	for _, w := range pc.workers {
		cidrs[w.name] = pc.podCIDR(t, w.name)
	}
	// Every worker holds a route to each other worker's podCIDR via that worker's address.
	for _, w := range pc.workers {
		eventually(t, 60*time.Second, func() error {
			routes := podRoutes(t, w)
			for _, o := range pc.workers {
				if o == w {
					continue
				}
				if want := cidrs[o.name] + " via " + o.host.IP; !strings.Contains(routes, want) {
					return fmt.Errorf("%s: no %q in\n%s", w.name, want, routes)
				}
			}
			return nil
		})
	}

	var manifest strings.Builder
	for i, w := range pc.workers {
		manifest.WriteString(pc.whoamiPod(fmt.Sprintf("who-%d", i+1), w.name))
	}
	manifest.WriteString(`apiVersion: v1
kind: Service
metadata:
  name: who
spec:
  selector: {app: who}
  ports: [{port: 80, targetPort: 8080}]
`)
	c.stdin(manifest.String(), "apply", "-f", "-")
	eventually(t, 180*time.Second, func() error {
		out, err := c.kubectlErr("wait", "--for=condition=Ready", "pod", "-l", "app=who", "--timeout=2s")
		if err != nil || strings.Count(out, "condition met") < 3 {
			return errString(out + c.kubectl("get", "pods", "-o", "wide"))
		}
		return nil
	})
	ips := map[string]string{}
	podIPs := func() {
		for i := range pc.workers {
			name := fmt.Sprintf("who-%d", i+1)
			ips[name] = c.kubectl("get", "pod", name, "-o", "jsonpath={.status.podIP}")
		}
	}
	podIPs()

	// (busybox 1.35's wget crashes with -T, hence timeout.)
	// Pod to pod across nodes, every ordered pair: the server sees the client pod's own address.
	// A failed request is retried (with the pods' addresses read again) for a while: on this
	// shared machine a node under load may still be redoing a sandbox.
	for i := range pc.workers {
		for j := range pc.workers {
			if i == j {
				continue
			}
			client, server := fmt.Sprintf("who-%d", i+1), fmt.Sprintf("who-%d", j+1)
			var out string
			eventually(t, 60*time.Second, func() error {
				var err error
				if out, err = c.kubectlErr("exec", client, "--", "timeout", "10", "wget", "-q", "-O", "-", "http://"+ips[server]+":8080/"); err != nil {
					podIPs()
					return fmt.Errorf("%s -> %s (%s): %v\n%s\n%s", client, server, ips[server], err, out, c.kubectl("get", "pods", "-o", "wide"))
				}
				return nil
			})
			if want := server + " " + ips[client]; !strings.Contains(out, want) {
				t.Errorf("%s -> %s answered %q, want %q (no NAT between pods)", client, server, strings.TrimSpace(out), want)
			}
		}
	}

	// A Service and cluster DNS from a pod on every node, and from every node itself. The rules for
	// the Service and for kube-dns exist on each node before anything is sent to them.
	vip := c.kubectl("get", "svc", "who", "-o", "jsonpath={.spec.clusterIP}")
	dnsIP := c.kubectl("get", "svc", "-n", "kube-system", "kube-dns", "-o", "jsonpath={.spec.clusterIP}")
	for _, w := range pc.workers {
		natRulesFor(t, w, vip, dnsIP)
	}
	for i, w := range pc.workers {
		client := fmt.Sprintf("who-%d", i+1)
		seen := map[string]bool{}
		out, err := c.kubectlErr("exec", client, "--", "sh", "-c", "for i in $(seq 30); do timeout 10 wget -q -O - http://who.default.svc.cluster.local/ || exit 1; done")
		if err != nil {
			t.Fatalf("Service by name from %s on %s: %v\n%s", client, w.name, err, out)
		}
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			f := strings.Fields(line)
			if len(f) != 2 {
				t.Errorf("from %s through the Service: %q", client, line)
				continue
			}
			seen[f[0]] = true
			// A pod reaching itself through its Service is masqueraded (hairpin, as kube-proxy);
			// any other pod sees the client's own address.
			if f[0] != client && f[1] != ips[client] {
				t.Errorf("from %s through the Service: %q, want the client's own address %s", client, line, ips[client])
			}
		}
		if len(seen) < 2 {
			t.Errorf("from %s: 30 requests reached only %v", client, seen)
		}
		fromNode, err := w.host.Command("wget", "-q", "-T", "5", "-O", "-", "http://"+vip+"/").CombinedOutput()
		if err != nil || !strings.Contains(string(fromNode), "who-") {
			t.Errorf("cluster IP from node %s: %v\n%s", w.name, err, fromNode)
		}
	}

	// worker-3 leaves: stopped and its Node deleted; the others drop its route, and its own
	// namespace holds none of the pod network's routes or chains.
	gone := pc.workers[2]
	c.kubectl("delete", "pod", "who-3", "--grace-period=1", "--wait=false")
	gone.stop()
	c.kubectl("delete", "node", gone.name)
	for _, w := range pc.workers[:2] {
		eventually(t, 60*time.Second, func() error {
			if routes := podRoutes(t, w); strings.Contains(routes, cidrs[gone.name]) {
				return fmt.Errorf("%s still routes %s:\n%s", w.name, cidrs[gone.name], routes)
			}
			return nil
		})
	}
	if routes := strings.TrimSpace(podRoutes(t, gone)); routes != "" {
		t.Errorf("the stopped node kept its routes:\n%s", routes)
	}
	out, _ := gone.host.Command("iptables-save", "-t", "nat").CombinedOutput()
	if strings.Contains(string(out), "skiff pod network") {
		t.Errorf("the stopped node kept its masquerade chain:\n%s", out)
	}
	// The two that stay still reach each other.
	after, err := c.kubectlErr("exec", "who-1", "--", "timeout", "10", "wget", "-q", "-O", "-", "http://"+ips["who-2"]+":8080/")
	if err != nil || !strings.Contains(after, "who-2 "+ips["who-1"]) {
		t.Errorf("who-1 -> who-2 after worker-3 left: %v %q", err, after)
	}
}
