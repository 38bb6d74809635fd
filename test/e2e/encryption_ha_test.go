package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// rawValue reads a key straight from the external etcd, past every API server.
func (e *externalEtcd) rawValue(t *testing.T, key string) string {
	t.Helper()
	return etcdGet(t, clientv3.Config{Endpoints: []string{e.url()}, DialTimeout: 10 * time.Second}, key)
}

// sealingKey is the encryption key name in a value etcd holds (k8s:enc:secretbox:v1:NAME:...).
func sealingKey(t *testing.T, raw string) string {
	t.Helper()
	parts := strings.SplitN(raw, ":", 6)
	if len(parts) < 6 || !strings.HasPrefix(raw, "k8s:enc:secretbox:v1:") {
		t.Fatalf("etcd holds a Secret not sealed with secretbox: %q", raw[:min(len(raw), 60)])
	}
	return parts[4]
}

// TestSecretsEncryptionRotationAcrossControlPlanes is issue 10's key rotation with two control
// planes: `skiff secrets-encrypt rotate` on either node moves both nodes' configuration and every
// Secret to a new key, with both API servers reading throughout; a control plane that was down
// during a rotation that dropped the only key it had catches up from its peer when it returns.
func TestSecretsEncryptionRotationAcrossControlPlanes(t *testing.T) {
	ext := startExternalEtcd(t)
	etcdURL := ext.url()
	c1 := newCluster(t, "--etcd-servers", etcdURL, "--node-name", "cp-1")
	server := "https://127.0.0.1:" + strconv.Itoa(c1.ports[0])
	dir := filepath.Join(t.TempDir(), "cp2")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	token := c1.createToken("--control-plane", "--ttl", "1h")
	c2 := &cluster{t: t, bin: skiffBinary, dataDir: dir, ports: [3]int{freePort(t), freePort(t), freePort(t)},
		extraArgs: []string{"--server", server, "--token", token, "--etcd-servers", etcdURL, "--node-name", "cp-2"}}
	c2.kubeconfig = filepath.Join(dir, "admin.kubeconfig")
	c2.start()
	t.Cleanup(c2.stop)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("cp-2's log:\n%s", c2.log())
		}
	})

	const secretKey = "/registry/core/secrets/default/db"
	c1.kubectl("create", "secret", "generic", "db", "--from-literal=password=djI=")
	readBoth := func() {
		t.Helper()
		for _, c := range []*cluster{c1, c2} {
			eventually(t, 30*time.Second, func() error {
				out, err := c.kubectlErr("get", "secret", "db", "-o", "jsonpath={.data.password}")
				if err != nil || strings.TrimSpace(out) != "ZGpJPQ==" {
					return errString("read through " + c.dataDir + ": " + out)
				}
				return nil
			})
		}
	}
	readBoth()
	first := sealingKey(t, ext.rawValue(t, secretKey))
	configs := func() (string, string) {
		a, _ := os.ReadFile(filepath.Join(c1.dataDir, "pki", "encryption-config.yaml"))
		b, _ := os.ReadFile(filepath.Join(c2.dataDir, "pki", "encryption-config.yaml"))
		return string(a), string(b)
	}

	// Rotated from the joined node: both nodes end on one configuration with the new key only.
	out, err := execOutput(skiffBinary, "secrets-encrypt", "rotate", "--data-dir", c2.dataDir)
	if err != nil {
		t.Fatalf("rotate on cp-2: %v\n%s\n%s", err, out, c2.log())
	}
	mustContain(t, out, "for reading: in force on 2 API servers", "writes: in force on 2 API servers", "rewrote", "dropped the old keys")
	second := sealingKey(t, ext.rawValue(t, secretKey))
	if second == first {
		t.Fatalf("the Secret is still sealed with %s after the rotation", first)
	}
	a, b := configs()
	if a != b || !strings.Contains(a, second) || strings.Contains(a, first) {
		t.Fatalf("after the rotation the nodes hold different or stale configurations:\ncp-1:\n%s\ncp-2:\n%s", a, b)
	}
	readBoth()

	// cp-2 is down (long enough for its identity Lease to say so) while cp-1 rotates again and
	// drops the key cp-2 has; back up, cp-2 copies the configuration from cp-1 and reads again.
	c2.stop()
	eventually(t, 90*time.Second, func() error {
		out, err := c1.kubectlErr("get", "lease", "-n", "kube-system", "-l", "apiserver.kubernetes.io/identity=kube-apiserver,kubernetes.io/hostname=cp-2",
			"-o", "jsonpath={.items[0].spec.renewTime}")
		if err != nil {
			return errString(out)
		}
		renewed, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(out))
		if err != nil || time.Since(renewed) < 35*time.Second {
			return errString("cp-2's identity lease renewed at " + out)
		}
		return nil
	})
	out, err = execOutput(skiffBinary, "secrets-encrypt", "rotate", "--data-dir", c1.dataDir)
	if err != nil {
		t.Fatalf("rotate on cp-1 with cp-2 down: %v\n%s\n%s", err, out, c1.log())
	}
	mustContain(t, out, "in force on 1 API servers", "dropped the old keys")
	third := sealingKey(t, ext.rawValue(t, secretKey))
	if third == second {
		t.Fatalf("the Secret is still sealed with %s after the second rotation", second)
	}
	c2.extraArgs = []string{"--server", server, "--etcd-servers", etcdURL, "--node-name", "cp-2"}
	c2.start()
	readBoth()
	mustContain(t, c2.logAll(), "encryption configuration updated from the cluster's copy")
	a, b = configs()
	if a != b {
		t.Fatalf("cp-2 did not catch up:\ncp-1:\n%s\ncp-2:\n%s", a, b)
	}
}
