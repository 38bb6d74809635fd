package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// rawEtcdValue reads a key straight from the node's embedded etcd, past the API server, with the
// API server's etcd client certificate (etcd answers mutual TLS only).
func (c *cluster) rawEtcdValue(t *testing.T, key string) string {
	t.Helper()
	pkiDir := filepath.Join(c.dataDir, "pki")
	caPEM, err := os.ReadFile(filepath.Join(pkiDir, "etcd", "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	cert, err := tls.LoadX509KeyPair(filepath.Join(pkiDir, "apiserver-etcd-client.crt"), filepath.Join(pkiDir, "apiserver-etcd-client.key"))
	if err != nil {
		t.Fatal(err)
	}
	return etcdGet(t, clientv3.Config{
		Endpoints: []string{"https://127.0.0.1:" + strconv.Itoa(c.ports[1])}, DialTimeout: 10 * time.Second,
		TLS: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
	}, key)
}

// etcdGet reads one key's value with a client of cfg; the key must exist.
func etcdGet(t *testing.T, cfg clientv3.Config, key string) string {
	t.Helper()
	client, err := clientv3.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := client.Get(ctx, key)
	if err != nil || len(resp.Kvs) == 0 {
		t.Fatalf("etcd get %s: %v", key, err)
	}
	return string(resp.Kvs[0].Value)
}

// TestSecretsEncryptionAtRest: a new cluster seals Secrets in etcd (the value is not there in
// clear), kubectl reads them back, and `skiff secrets-encrypt rotate` moves every Secret to a new
// key while reads keep working.
func TestSecretsEncryptionAtRest(t *testing.T) {
	c := newCluster(t)
	const clear = "a-value-that-must-not-be-in-etcd"
	mustContain(t, c.kubectl("create", "secret", "generic", "db", "--from-literal=password="+clear), "created")
	c.kubectl("create", "configmap", "plain", "--from-literal=k=visible-configmap-value")
	key := "/registry/core/secrets/default/db"
	before := c.rawEtcdValue(t, key)
	if !strings.HasPrefix(before, "k8s:enc:secretbox:v1:key-") || strings.Contains(before, clear) ||
		strings.Contains(before, base64.StdEncoding.EncodeToString([]byte(clear))) {
		t.Fatalf("etcd holds the Secret as %q", before[:min(len(before), 80)])
	}
	if cm := c.rawEtcdValue(t, "/registry/core/configmaps/default/plain"); !strings.Contains(cm, "visible-configmap-value") {
		t.Fatalf("a ConfigMap is not stored as the codec writes it: %q", cm[:min(len(cm), 80)])
	}
	readBack := func() {
		t.Helper()
		got := c.kubectl("get", "secret", "db", "-o", "jsonpath={.data.password}")
		if decoded, _ := base64.StdEncoding.DecodeString(strings.TrimSpace(got)); string(decoded) != clear {
			t.Fatalf("kubectl read the Secret as %q", got)
		}
	}
	readBack()
	oldKey := strings.SplitN(before, ":", 6)[4]

	out, err := execOutput(c.bin, "secrets-encrypt", "rotate", "--data-dir", c.dataDir)
	if err != nil {
		t.Fatalf("rotate: %v\n%s\n%s", err, out, c.log())
	}
	mustContain(t, out, "rewrote", "dropped the old keys")
	after := c.rawEtcdValue(t, key)
	newKey := strings.SplitN(after, ":", 6)[4]
	if !strings.HasPrefix(after, "k8s:enc:secretbox:v1:") || newKey == oldKey || strings.Contains(after, clear) {
		t.Fatalf("after rotation etcd holds %q (old key %s)", after[:min(len(after), 80)], oldKey)
	}
	readBack()
	// A restart reads with the rotated configuration.
	c.stop()
	c.start()
	readBack()
}
