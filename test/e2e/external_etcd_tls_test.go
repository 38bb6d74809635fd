package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skiff-sh/skiff/internal/etcd"
	"github.com/skiff-sh/skiff/internal/pki"
)

// externalTLSCluster is three Debian etcd processes on loopback with TLS and client-certificate
// auth on both sides, certificates from a CA the test makes with internal/pki.
type externalTLSCluster struct {
	caFile, certFile, keyFile string // a client certificate for skiff
	clientURLs                []string
	cmds                      []*exec.Cmd
}

func startExternalTLSCluster(t *testing.T) *externalTLSCluster {
	t.Helper()
	if _, err := os.Stat("/usr/bin/etcd"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("/usr/bin/etcd missing under CI: hack/install-etcd.sh should have installed it")
		}
		t.Skip("/usr/bin/etcd not installed (run hack/install-etcd.sh)")
	}
	dir := t.TempDir()
	now := time.Now()
	ca, err := pki.LoadOrCreateCA(dir, "ca", "external-etcd-ca", now)
	if err != nil {
		t.Fatal(err)
	}
	memberCert, memberKey, err := ca.EnsureLeaf(dir, "member", pki.Leaf{CommonName: "etcd", DNSNames: []string{"localhost"}, IPs: []net.IP{net.ParseIP("127.0.0.1")}, Server: true, Client: true}, now)
	if err != nil {
		t.Fatal(err)
	}
	clientCert, clientKey, err := ca.EnsureLeaf(dir, "skiff-client", pki.Leaf{CommonName: "skiff-apiserver", Client: true}, now)
	if err != nil {
		t.Fatal(err)
	}
	e := &externalTLSCluster{caFile: filepath.Join(dir, "ca.crt"), certFile: clientCert, keyFile: clientKey}
	var peers []string
	peerURLs := make([]string, 3)
	for i := range 3 {
		e.clientURLs = append(e.clientURLs, fmt.Sprintf("https://127.0.0.1:%d", freePort(t)))
		peerURLs[i] = fmt.Sprintf("https://127.0.0.1:%d", freePort(t))
		peers = append(peers, fmt.Sprintf("ext%d=%s", i, peerURLs[i]))
	}
	for i := range 3 {
		cmd := exec.Command("/usr/bin/etcd", "--name", fmt.Sprintf("ext%d", i), "--data-dir", filepath.Join(dir, fmt.Sprintf("data%d", i)),
			"--listen-client-urls", e.clientURLs[i], "--advertise-client-urls", e.clientURLs[i],
			"--listen-peer-urls", peerURLs[i], "--initial-advertise-peer-urls", peerURLs[i],
			"--initial-cluster", strings.Join(peers, ","), "--initial-cluster-state", "new", "--initial-cluster-token", "skiff-e2e-tls",
			"--cert-file", memberCert, "--key-file", memberKey, "--trusted-ca-file", e.caFile, "--client-cert-auth",
			"--peer-cert-file", memberCert, "--peer-key-file", memberKey, "--peer-trusted-ca-file", e.caFile, "--peer-client-cert-auth",
			"--log-level", "error", "--logger", "zap")
		logFile, err := os.Create(filepath.Join(dir, fmt.Sprintf("etcd%d.log", i)))
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stdout, cmd.Stderr = logFile, logFile
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		e.cmds = append(e.cmds, cmd)
		t.Cleanup(func() {
			if cmd.ProcessState == nil {
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
			}
			_ = logFile.Close()
		})
	}
	tlsCfg, err := etcd.ClientTLSConfig(e.caFile, e.certFile, e.keyFile)
	if err != nil {
		t.Fatal(err)
	}
	client, err := etcd.NewClient(e.clientURLs, tlsCfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	eventually(t, time.Minute, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		return etcd.CheckHealth(ctx, client)
	})
	return e
}

func (e *externalTLSCluster) kill(i int) {
	_ = e.cmds[i].Process.Kill()
	_ = e.cmds[i].Wait()
}

// TestExternalEtcdTLSCluster runs skiff on a 3-member Debian etcd cluster that requires TLS client
// certificates (--etcd-cafile/--etcd-certfile/--etcd-keyfile), lists its members through the
// membership API, keeps writing after one member dies, and saves a snapshot with the same files.
func TestExternalEtcdTLSCluster(t *testing.T) {
	ext := startExternalTLSCluster(t)
	c := newCluster(t, "--etcd-servers="+strings.Join(ext.clientURLs, ","),
		"--etcd-cafile="+ext.caFile, "--etcd-certfile="+ext.certFile, "--etcd-keyfile="+ext.keyFile)
	c.kubectl("create", "configmap", "on-external-tls")
	r := c.status(t)
	if r.Etcd == nil || len(r.Etcd.Members) != 3 || !r.Etcd.Quorum || r.Etcd.LeaderID == "" {
		t.Fatalf("external members: %+v %s", r.Etcd, r.EtcdError)
	}
	// One member dies (the first, which the client may be connected to): two of three keep quorum.
	ext.kill(0)
	eventually(t, time.Minute, func() error {
		_, err := c.kubectlErr("create", "configmap", fmt.Sprintf("after-kill-%d", time.Now().UnixNano()), "--request-timeout=20s")
		return err
	})
	c.kubectl("get", "configmap", "on-external-tls")
	if out, err := exec.Command(c.bin, "etcd", "snapshot", "save", "--data-dir", c.dataDir, filepath.Join(t.TempDir(), "snap.db")).CombinedOutput(); err != nil {
		t.Fatalf("snapshot save from external TLS etcd: %v\n%s", err, out)
	}
}
