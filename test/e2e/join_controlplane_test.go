package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestJoinControlPlane: HA with external etcd. A second control plane on the same etcd joins with
// a --control-plane token, gets the cluster's keys (CA, service-account key, encryption
// configuration) over the token's authenticated channel after checking the CA pin, and serves the
// same cluster; an ordinary worker token may not read the keys; a restart needs no token.
func TestJoinControlPlane(t *testing.T) {
	ext := startExternalEtcd(t)
	etcdURL := ext.url()
	c1 := newCluster(t, "--etcd-servers", etcdURL)
	server := "https://127.0.0.1:" + strconv.Itoa(c1.ports[0])

	dir := filepath.Join(t.TempDir(), "cp2")
	joinArgs := func(token string) []string {
		return []string{"--server", server, "--token", token, "--etcd-servers", etcdURL, "--node-name", "cp-2"}
	}
	// A worker token may not read the keys: refused, and nothing left behind.
	workerToken := c1.createToken()
	refused := &cluster{t: t, bin: skiffBinary, dataDir: dir, ports: [3]int{freePort(t), freePort(t), freePort(t)}, extraArgs: joinArgs(workerToken)}
	out, err := exec.Command(skiffBinary, refused.serverArgs()...).CombinedOutput()
	if err == nil {
		t.Fatalf("a worker token joined a control plane:\n%s", out)
	}
	mustContain(t, string(out), "may not join control-plane nodes")
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("a refused join left %s behind (%v)", dir, err)
	}

	// A service-account key rotated before the join: the token uploads the retired key with the
	// new one, so the joined API server verifies tokens of both (issue 30).
	oldToken := strings.TrimSpace(c1.kubectl("create", "token", "default", "--duration=1h"))
	if out, err := execOutput(skiffBinary, "certificate", "rotate-sa-key", "--data-dir", c1.dataDir); err != nil {
		t.Fatalf("skiff certificate rotate-sa-key: %v\n%s", err, out)
	}
	newToken := strings.TrimSpace(c1.kubectl("create", "token", "default", "--duration=1h"))
	cpToken := c1.createToken("--control-plane", "--ttl", "1h")
	c2 := &cluster{t: t, bin: skiffBinary, dataDir: dir, ports: [3]int{freePort(t), freePort(t), freePort(t)}, extraArgs: joinArgs(cpToken)}
	c2.kubeconfig = filepath.Join(dir, "admin.kubeconfig")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	c2.start()
	t.Cleanup(c2.stop)
	t.Logf("figure: control plane on external etcd, join to serving: %s", time.Since(began).Round(100*time.Millisecond))

	ca1, _ := os.ReadFile(filepath.Join(c1.dataDir, "pki", "ca.crt"))
	ca2, _ := os.ReadFile(filepath.Join(dir, "pki", "ca.crt"))
	if len(ca1) == 0 || !bytes.Equal(ca1, ca2) {
		t.Fatal("the joined control plane does not share the cluster CA")
	}
	wantKIDs := []string{tokenHeaderKID(t, oldToken), tokenHeaderKID(t, newToken)}
	slices.Sort(wantKIDs)
	if got := jwksKeyIDs(t, c2); !slices.Equal(got, wantKIDs) {
		t.Errorf("the joined control plane's JWKS lists %v, want the retired and the new key %v", got, wantKIDs)
	}
	url2 := "https://127.0.0.1:" + strconv.Itoa(c2.ports[0])
	for name, tok := range map[string]string{"retired": oldToken, "new": newToken} {
		if got, err := tokenWhoami(t, url2, filepath.Join(dir, "pki", "ca.crt"), tok); err != nil || got != "system:serviceaccount:default:default" {
			t.Errorf("a token of the %s service-account key at the joined control plane: %q, %v", name, got, err)
		}
	}
	// One cluster: written through one API server, read through the other.
	c2.kubectl("create", "configmap", "via-cp2", "--from-literal=k=v")
	mustContain(t, c1.kubectl("get", "configmap", "via-cp2", "-o", "jsonpath={.data.k}"), "v")
	// Secrets sealed by one API server open at the other: they share the encryption key.
	c2.kubectl("create", "secret", "generic", "sealed-by-cp2", "--from-literal=k=djI=")
	mustContain(t, c1.kubectl("get", "secret", "sealed-by-cp2", "-o", "jsonpath={.data.k}"), "ZGpJPQ==")
	// Service-account tokens of one API server are good at the other (the shared sa.key).
	tok := c1.kubectl("create", "token", "default")
	podsURL := "https://127.0.0.1:" + itoa(c2.ports[0]) + "/api/v1/namespaces/default/pods"
	out2, err := execOutput("curl", "-s", "--cacert", filepath.Join(dir, "pki", "ca.crt"), "-H", "Authorization: Bearer "+strings.TrimSpace(tok), podsURL)
	if err != nil {
		t.Fatalf("cp-2 with cp-1's service-account token: %v\n%s", err, out2)
	}
	// Authenticated as the service account (RBAC then refuses it the pods).
	mustContain(t, out2, `"code":403`, "system:serviceaccount:default:default")

	// A restart finds the keys and needs no token.
	c2.stop()
	c2.extraArgs = []string{"--server", server, "--etcd-servers", etcdURL, "--node-name", "cp-2"}
	c2.start()
	mustContain(t, c2.log(), "rejoining without a token")
	mustContain(t, c2.kubectl("get", "configmap", "via-cp2"), "via-cp2")
}
