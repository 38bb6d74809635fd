package e2e

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// requireRuntime skips (or, under CI, fails) when containerd is not installed.
func requireRuntime(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the worker role needs root")
	}
	for _, bin := range []string{"containerd", "runc", "ctr"} {
		if _, err := exec.LookPath(bin); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s missing under CI: hack/install-runtime.sh should have installed it", bin)
			}
			t.Skipf("%s not installed (run hack/install-runtime.sh)", bin)
		}
	}
}

// newWorkerCluster starts a whole single-node cluster (all roles) with the busybox image imported,
// and deletes its pods before stopping it, so no container outlives the test. extraArgs go to
// skiff server.
func newWorkerCluster(t *testing.T, extraArgs ...string) *cluster {
	t.Helper()
	return newWorkerClusterOf(t, skiffBinary, extraArgs...)
}

// newWorkerClusterOf is newWorkerCluster with bin run as `skiff server` (e.g. a wrapper of it).
func newWorkerClusterOf(t *testing.T, bin string, extraArgs ...string) *cluster {
	t.Helper()
	requireRuntime(t)
	// A short data dir keeps containerd's socket path under the unix-socket limit.
	dir, err := os.MkdirTemp("/tmp", "skw")
	if err != nil {
		t.Fatal(err)
	}
	// Each cluster gets its own bridge and pod network: pods a killed node of an earlier test left
	// running on the host's default cni0 (or its leases and ARP entries) never meet this test's pods.
	bridge := fmt.Sprintf("skb%06x", rand.IntN(1<<24))
	extraArgs = append([]string{"--cni-bridge", bridge, "--cluster-cidr", freePodNetwork(t)}, extraArgs...)
	c := &cluster{t: t, bin: bin, dataDir: dir, roles: "etcd,controlplane,worker", extraArgs: extraArgs}
	c.ports = [3]int{freePort(t), freePort(t), freePort(t)}
	c.kubeconfig = filepath.Join(c.dataDir, "admin.kubeconfig")
	began := time.Now()
	c.start()
	t.Cleanup(func() {
		_, _ = c.kubectlErr("delete", "pods", "--all", "--all-namespaces", "--grace-period=1", "--timeout=60s")
		c.stop()
		// A stopped node leaves its containers running by design: those whose pods the delete
		// above did not end in time (a local CI run left two clusters' web pods, their shims and
		// mounts behind) go with the node's shims.
		reapKilledWorker(t, dir)
		removeProxyRules(t, dir)
		_ = exec.Command("ip", "link", "del", bridge).Run()
		os.RemoveAll(filepath.Join("/var/lib/cni/skiff", bridge))
		os.RemoveAll(dir)
	})
	// Registered after the stop above, so it runs first: a failed test shows why its pods are
	// where they are while the node still answers.
	t.Cleanup(func() {
		if t.Failed() {
			c.dumpState()
		}
	})
	eventually(t, 90*time.Second, func() error {
		out, err := c.kubectlErr("wait", "--for=condition=Ready", "node", "--all", "--timeout=2s")
		if err != nil {
			return errString(out)
		}
		return nil
	})
	t.Logf("figure: single node (all roles) start to Node Ready: %s", time.Since(began).Round(100*time.Millisecond))
	archive, err := execOutput(skiffBinary, "images", "build-busybox", "--out", dir)
	if err != nil {
		t.Fatalf("build image: %v\n%s", err, archive)
	}
	if out, err := execOutput(skiffBinary, "images", "import", "--data-dir", dir, strings.TrimSpace(archive)); err != nil {
		t.Fatalf("import image: %v\n%s", err, out)
	}
	return c
}

// TestSingleNodeRunsPods is the README's promise: `skiff server` alone is a cluster on which
// `kubectl run` of an imported image reaches Running and serves on its pod IP.
func TestSingleNodeRunsPods(t *testing.T) {
	c := newWorkerCluster(t)
	out := c.kubectl("get", "nodes", "-o", "wide")
	mustContain(t, out, "Ready", "control-plane,etcd,worker", "containerd://")
	c.kubectl("run", "web", "--image=localhost/busybox:local", "--", "httpd", "-f", "-p", "8080")
	c.kubectl("wait", "--for=condition=Ready", "pod/web", "--timeout=60s")
	ip := c.kubectl("get", "pod", "web", "-o", "jsonpath={.status.podIP}")
	if ip == "" {
		t.Fatal("running pod has no IP")
	}
	var body string
	eventually(t, 20*time.Second, func() error {
		resp, err := http.Get("http://" + ip + ":8080/")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		body = string(data)
		return nil
	})
	mustContain(t, body, "404 Not Found") // busybox httpd with an empty document root answers
	mustContain(t, c.kubectl("get", "pod", "web"), "1/1", "Running")

	// Every pod gets a bound service-account token, the CA bundle and its namespace, and the token
	// authenticates against the API server.
	sa := "/var/run/secrets/kubernetes.io/serviceaccount"
	mustContain(t, c.kubectl("exec", "web", "--", "ls", sa), "ca.crt", "namespace", "token")
	mustContain(t, c.kubectl("exec", "web", "--", "cat", sa+"/namespace"), "default")
	token := c.kubectl("exec", "web", "--", "cat", sa+"/token")
	podsURL := "https://127.0.0.1:" + itoa(c.ports[0]) + "/api/v1/namespaces/default/pods"
	out, err := execOutput("curl", "-s", "--cacert", filepath.Join(c.dataDir, "pki", "ca.crt"), "-H", "Authorization: Bearer "+token, podsURL)
	if err != nil {
		t.Fatal(err)
	}
	// RBAC gives the default service account nothing; bound to view, it lists the pods.
	mustContain(t, out, `"code":403`, `system:serviceaccount:default:default`)
	c.kubectl("create", "rolebinding", "default-view", "--clusterrole=view", "--serviceaccount=default:default")
	eventually(t, 30*time.Second, func() error {
		out, err = execOutput("curl", "-s", "--cacert", filepath.Join(c.dataDir, "pki", "ca.crt"), "-H", "Authorization: Bearer "+token, podsURL)
		if err == nil && !strings.Contains(out, `"kind":"PodList"`) {
			return errString("pods as the pod's service account: " + out)
		}
		return err
	})
	mustContain(t, out, `"kind":"PodList"`, `"name":"web"`)

	// Logs, exec, port-forward and cp go API server -> kubelet HTTPS -> CRI streaming.
	c.kubectl("run", "talker", "--image=localhost/busybox:local", "--", "sh", "-c", "echo hello-from-the-log; exec httpd -f -p 8081")
	c.kubectl("wait", "--for=condition=Ready", "pod/talker", "--timeout=60s")
	eventually(t, 10*time.Second, func() error {
		if out, _ := c.kubectlErr("logs", "talker"); !strings.Contains(out, "hello-from-the-log") {
			return errString("logs: " + out)
		}
		return nil
	})
	mustContain(t, c.kubectl("exec", "talker", "--", "echo", "exec-works"), "exec-works")
	mustContain(t, c.stdin("piped-through-stdin\n", "exec", "-i", "talker", "--", "cat"), "piped-through-stdin")
	local := filepath.Join(c.dataDir, "cp-source.txt")
	if err := os.WriteFile(local, []byte("copied-in\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c.kubectl("cp", local, "talker:/tmp/copied.txt")
	mustContain(t, c.kubectl("exec", "talker", "--", "cat", "/tmp/copied.txt"), "copied-in")
	port := freePort(t)
	pf := c.kubectlCmd(t.Context(), "", "port-forward", "pod/talker", itoa(port)+":8081")
	if err := pf.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = pf.Process.Kill(); _, _ = pf.Process.Wait() }()
	eventually(t, 20*time.Second, func() error {
		resp, err := http.Get("http://127.0.0.1:" + itoa(port) + "/")
		if err != nil {
			return err
		}
		resp.Body.Close()
		return nil
	})
	out, err = c.kubectlErr("logs", "talker", "-c", "nope")
	if err == nil {
		t.Fatal("logs of a missing container succeeded")
	}
	mustContain(t, out, "container nope is not valid for pod talker")
	// httpd as PID 1 ignores SIGTERM: without a short grace period the delete waits 30 s.
	c.kubectl("delete", "pod", "web", "talker", "--grace-period=1", "--timeout=60s")
}

// freePodNetwork is a pod network 10.N.0.0/16 (N from 160 to 199) that no interface of the host
// has an address in. A node killed without its cleanup (a test binary stopped mid-run) leaves its
// bridge with the network's first /24 routed to it, and a new node on the same network then had
// its pods unreachable from the host ("no route to host" on every readiness probe).
func freePodNetwork(t *testing.T) string {
	t.Helper()
	inUse := map[byte]bool{}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatalf("host addresses: %v", err)
	}
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok {
			if ip4 := ipn.IP.To4(); ip4 != nil && ip4[0] == 10 {
				inUse[ip4[1]] = true
			}
		}
	}
	start := rand.IntN(40)
	for i := range 40 {
		n := byte(160 + (start+i)%40)
		if !inUse[n] {
			return fmt.Sprintf("10.%d.0.0/16", n)
		}
	}
	t.Fatal("every pod network 10.160-199.0.0/16 has an address on this host: remove the bridges stopped nodes left (ip link show type bridge)")
	return ""
}
