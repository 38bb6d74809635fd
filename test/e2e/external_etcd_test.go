package e2e

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// externalEtcd is Debian's etcd started by the test on loopback ports.
type externalEtcd struct {
	t       *testing.T
	dataDir string
	client  int
	peer    int
	cmd     *exec.Cmd
}

func startExternalEtcd(t *testing.T) *externalEtcd {
	t.Helper()
	if _, err := os.Stat("/usr/bin/etcd"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("/usr/bin/etcd missing under CI: hack/install-etcd.sh should have installed it")
		}
		t.Skip("/usr/bin/etcd not installed (run hack/install-etcd.sh)")
	}
	e := &externalEtcd{t: t, dataDir: t.TempDir(), client: freePort(t), peer: freePort(t)}
	e.start()
	t.Cleanup(e.kill)
	return e
}

func (e *externalEtcd) url() string { return "http://127.0.0.1:" + strconv.Itoa(e.client) }

func (e *externalEtcd) start() {
	e.t.Helper()
	peer := "http://127.0.0.1:" + strconv.Itoa(e.peer)
	e.cmd = exec.Command("/usr/bin/etcd", "--name", "ext", "--data-dir", filepath.Join(e.dataDir, "data"),
		"--listen-client-urls", e.url(), "--advertise-client-urls", e.url(),
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", "ext="+peer, "--log-level", "error")
	logFile, err := os.OpenFile(filepath.Join(e.dataDir, "etcd.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		e.t.Fatal(err)
	}
	e.cmd.Stdout, e.cmd.Stderr = logFile, logFile
	if err := e.cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	eventually(e.t, 30*time.Second, func() error {
		resp, err := http.Get(e.url() + "/health")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return errString("etcd health " + resp.Status)
		}
		return nil
	})
}

func (e *externalEtcd) kill() {
	if e.cmd != nil && e.cmd.Process != nil {
		_ = e.cmd.Process.Kill()
		_, _ = e.cmd.Process.Wait()
		e.cmd = nil
	}
}

// TestExternalEtcdOutage runs skiff on an external etcd, kills etcd during a write load, and checks
// that /readyz reports the outage, that it recovers when etcd returns, and that every acknowledged
// write survived.
func TestExternalEtcdOutage(t *testing.T) {
	etcd := startExternalEtcd(t)
	c := newCluster(t, "--etcd-servers="+etcd.url())

	writes := startWriteRecorder(t, "ext", c)
	writes.waitForMore(t, 3, time.Minute)
	down := time.Now()
	etcd.kill()
	eventually(t, 20*time.Second, func() error {
		out, err := c.kubectlErr("get", "--raw", "/readyz")
		if err == nil {
			return errString("readyz still ok: " + out)
		}
		return nil
	})
	etcd.start()
	eventually(t, 30*time.Second, func() error {
		out, err := c.kubectlErr("get", "--raw", "/readyz")
		if err != nil || strings.TrimSpace(out) != "ok" {
			return errString("readyz not ok yet: " + out)
		}
		return nil
	})
	writes.waitForMore(t, 3, time.Minute)
	writes.stopAndCheck(t, c, "the etcd outage", down)
}

type errString string

func (e errString) Error() string { return string(e) }
