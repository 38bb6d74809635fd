package e2e

import (
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"crypto/rand"
)

// TestEtcdOnlyNodes: a first etcd,controlplane node, then etcd-only nodes (`--roles etcd --server
// --token`, a --control-plane token) and a control-plane node without a member of its own that
// uses the cluster's etcd members (`--roles controlplane --server --token`, no --etcd-servers):
//   - each etcd-only node is added as a learner and promoted, runs no API server, and its admin
//     kubeconfig reaches the API through its node-local balancer; `skiff status` lists it;
//   - the control plane learns the etcd-only member that joined after it (its etcd endpoints);
//   - with the first node killed, the etcd-only members keep quorum and the other API server
//     still writes; an etcd-only node restarts without its token.
//
// All nodes share port numbers on loopback addresses 127.<x>.<y>.1-4.
func TestEtcdOnlyNodes(t *testing.T) {
	v, err := rand.Int(rand.Reader, big.NewInt(200))
	if err != nil {
		t.Fatal(err)
	}
	prefix := fmt.Sprintf("127.66.%d.", 20+v.Int64())
	ip := func(i int) string { return fmt.Sprintf("%s%d", prefix, i) }
	first := newCluster(t, "--bind-address="+ip(1), "--node-name=cp-1")
	token := first.createToken("--control-plane", "--ttl", "1h")
	server := fmt.Sprintf("https://%s:%d", ip(1), first.ports[0])
	node := func(i int, name, roles string) *cluster {
		dir := filepath.Join(t.TempDir(), name)
		if err := os.MkdirAll(dir, 0o700); err != nil { // the harness logs into it
			t.Fatal(err)
		}
		c := &cluster{t: t, bin: first.bin, dataDir: dir, ports: first.ports, roles: roles,
			extraArgs: []string{"--bind-address=" + ip(i), "--node-name=" + name, "--server", server, "--token", token}}
		c.kubeconfig = filepath.Join(dir, "admin.kubeconfig")
		began := time.Now()
		c.start() // ready: /readyz answers through the node's own balancer
		t.Cleanup(c.stop)
		t.Logf("figure: %s (--roles %s) join to ready: %s", name, roles, time.Since(began).Round(100*time.Millisecond))
		return c
	}
	e2 := node(2, "etcd-2", "etcd")
	mustContain(t, wholeLog(e2), "etcd learner promoted to a voting member", "skiff etcd node ready")
	mustNotContain(t, wholeLog(e2), "skiff node ready") // no API server of its own
	cp3 := node(3, "cp-3", "controlplane")
	mustContain(t, wholeLog(cp3), "API server uses the cluster's etcd members")
	e4 := node(4, "etcd-4", "etcd")

	// Three voters, the etcd-only ones among them, in `skiff status` on the etcd-only node itself.
	eventually(t, time.Minute, func() error {
		r := e4.status(t)
		if r.Etcd == nil || len(r.Etcd.Members) != 3 || !r.Etcd.Quorum {
			return fmt.Errorf("want 3 members with quorum: %+v %s", r.Etcd, r.EtcdError)
		}
		for _, m := range r.Etcd.Members {
			if m.IsLearner || !m.Healthy {
				return fmt.Errorf("member %s not a healthy voter", m.Name)
			}
		}
		return nil
	})
	out, err := execOutput(skiffBinary, "status", "--data-dir", e2.dataDir)
	if err != nil {
		t.Fatalf("skiff status on the etcd-only node: %v\n%s", err, out)
	}
	mustContain(t, out, "etcd-2", "etcd-4", "cp-1")
	// cp-3 joined before etcd-4: it learns the new member's client URL.
	eventually(t, 2*time.Minute, func() error {
		data, _ := os.ReadFile(filepath.Join(cp3.dataDir, "etcd-endpoints"))
		if !strings.Contains(string(data), ip(4)) || len(strings.Fields(string(data))) != 3 {
			return fmt.Errorf("cp-3's etcd endpoints: %q", data)
		}
		return nil
	})

	// The first node goes: the etcd-only members keep quorum, cp-3 keeps writing.
	first.kill()
	eventually(t, time.Minute, func() error {
		out, err := cp3.kubectlErr("create", "configmap", "after-cp-1", "--request-timeout=15s")
		if err != nil && !strings.Contains(out, "AlreadyExists") {
			return fmt.Errorf("write through cp-3 with cp-1 gone: %v: %s", err, out)
		}
		return nil
	})

	// An etcd-only node restarts without its token, from its keys and its member's data, pointed at
	// a live API server (the kubernetes endpoints list no loopback address for its balancer to learn).
	e2.stop()
	e2.extraArgs = withoutToken(e2.extraArgs)
	for i, a := range e2.extraArgs {
		if a == server {
			e2.extraArgs[i] = fmt.Sprintf("https://%s:%d", ip(3), first.ports[0])
		}
	}
	e2.start()
	mustContain(t, e2.kubectl("get", "configmap", "after-cp-1"), "after-cp-1")
	mustContain(t, wholeLog(e2), "rejoining without a token")
	eventually(t, time.Minute, func() error {
		r := cp3.status(t)
		if r.Etcd == nil || !r.Etcd.Quorum {
			return fmt.Errorf("no quorum: %+v %s", r.Etcd, r.EtcdError)
		}
		for _, m := range r.Etcd.Members {
			if m.Name == "etcd-2" && !m.Healthy {
				return fmt.Errorf("restarted etcd-2 not healthy yet")
			}
		}
		return nil
	})
}

// wholeLog is a node's whole log (log() keeps only its tail, which etcd's warnings under load fill).
func wholeLog(c *cluster) string {
	data, _ := os.ReadFile(filepath.Join(c.dataDir, "skiff.log"))
	return string(data)
}
