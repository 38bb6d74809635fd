package e2e

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestFullDiskRefusesWritesAndRecovers: a node whose data dir is a small tmpfs, filled almost to
// the brim, refuses writes with a 507 naming NOSPACE (and says so in /readyz?verbose) instead of
// letting etcd meet a full disk and exit; reads keep working; once space is freed writes work
// again by themselves, and every write acknowledged before is still there.
func TestFullDiskRefusesWritesAndRecovers(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	mnt, err := os.MkdirTemp("", "skfull")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=256m", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		_ = exec.Command("umount", "-l", mnt).Run()
		os.RemoveAll(mnt)
	})
	dataDir := filepath.Join(mnt, "data")
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		t.Fatal(err)
	}
	c := &cluster{t: t, bin: skiffBinary, dataDir: dataDir}
	c.ports = [3]int{freePort(t), freePort(t), freePort(t)}
	c.kubeconfig = filepath.Join(dataDir, "admin.kubeconfig")
	c.start()
	t.Cleanup(c.stop)

	var acked []string
	for i := range 20 {
		name := fmt.Sprintf("before-%d", i)
		c.kubectl("create", "configmap", name, "--from-literal=k=v")
		acked = append(acked, name)
	}

	// Fill the disk until less than the 64 MiB etcd keeps remains.
	filler := filepath.Join(mnt, "filler")
	var st syscall.Statfs_t
	if err := syscall.Statfs(mnt, &st); err != nil {
		t.Fatal(err)
	}
	free := int64(st.Bavail) * int64(st.Bsize)
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 1<<20)
	for written := int64(0); written < free-40<<20; written += int64(len(chunk)) {
		if _, err := f.Write(chunk); err != nil {
			break
		}
	}
	f.Close()

	eventually(t, 30*time.Second, func() error {
		out, err := c.kubectlErr("create", "configmap", "during", "--from-literal=k=v")
		if err == nil {
			acked = append(acked, "during")
			return fmt.Errorf("a write was accepted with the disk nearly full")
		}
		if !strings.Contains(out, "NOSPACE") {
			return fmt.Errorf("write refused without naming NOSPACE: %s", out)
		}
		return nil
	})
	mustContain(t, c.kubectl("get", "configmap", "before-0"), "before-0")
	if body := c.readyzVerbose(t); !strings.Contains(body, "NOSPACE") {
		t.Errorf("/readyz?verbose does not name NOSPACE: %s", body)
	}
	if r := c.status(t); r.Etcd == nil || len(r.Etcd.Alarms) == 0 || !strings.Contains(r.Etcd.Alarms[0], "NOSPACE") {
		t.Errorf("skiff status does not show the NOSPACE alarm: %+v %s", r.Etcd, r.EtcdError)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, func() error {
		out, err := c.kubectlErr("create", "configmap", "after", "--from-literal=k=v")
		if err != nil && !strings.Contains(out, "AlreadyExists") {
			return fmt.Errorf("writes still refused after space was freed: %s", out)
		}
		return nil
	})
	out := c.kubectl("get", "configmaps", "-o", "name")
	for _, name := range acked {
		if !strings.Contains(out, "configmap/"+name+"\n") {
			t.Errorf("acknowledged write %s lost", name)
		}
	}
	if c.cmd.ProcessState != nil {
		t.Fatalf("the node exited; log:\n%s", c.log())
	}
}

// readyzVerbose is the body of the API server's /readyz?verbose, asked directly (not through the
// node-local balancer) with the admin's credentials.
func (c *cluster) readyzVerbose(t *testing.T) string {
	t.Helper()
	tlsCfg, _ := c.adminTLS(t)
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsCfg.Clone()}}
	resp, err := hc.Get("https://127.0.0.1:" + strconv.Itoa(c.ports[0]) + "/readyz?verbose")
	if err != nil {
		t.Fatalf("readyz: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return string(body)
}
