package e2e

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
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

	var mu sync.Mutex
	var acked []string
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 1000; i++ {
			select {
			case <-stop:
				return
			default:
			}
			name := "ext-" + itoa(i)
			if _, err := c.kubectlErr("create", "configmap", name, "--request-timeout=5s"); err == nil {
				mu.Lock()
				acked = append(acked, name)
				mu.Unlock()
			}
		}
	}()
	time.Sleep(2 * time.Second)
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
	time.Sleep(time.Second)
	close(stop)
	wg.Wait()
	out := c.kubectl("get", "configmaps", "-o", "name")
	mu.Lock()
	defer mu.Unlock()
	if len(acked) == 0 {
		t.Fatal("no write was acknowledged")
	}
	for _, n := range acked {
		if !strings.Contains(out, "configmap/"+n+"\n") {
			t.Fatalf("acknowledged write %s lost across the etcd outage", n)
		}
	}
	t.Logf("%d acknowledged writes present after the etcd outage", len(acked))
}

type errString string

func (e errString) Error() string { return string(e) }
