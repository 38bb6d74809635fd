package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	// 384 MiB: etcd's two 64 MiB WAL segments, its database with the guard's room preallocated
	// in it, and the reserve must leave the fence's lifting point (128 MiB free) reachable once
	// the filler is gone.
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=384m", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		_ = exec.Command("umount", "-l", mnt).Run()
		os.RemoveAll(mnt)
	})
	c := startOn(t, mnt)

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

// TestDiskFilledFromOutsideKeepsNodeAlive is issue 32's scenario: another process fills the file
// system under an etcd,controlplane node at once (dd, faster than any poll of free space). etcd's
// own background commits (leases, compaction) are not API writes the fence can refuse; without
// room for them etcd exits on "failed to commit tx ... no space left on device" and the node
// with it. The node must stay up, serve reads, refuse writes with a Status naming NOSPACE, and
// take writes again by itself once the file is removed, with its reserve back in place.
func TestDiskFilledFromOutsideKeepsNodeAlive(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a file system needs root")
	}
	mnt := smallExt4(t, 400)
	c := startOn(t, mnt)
	alive := func() {
		t.Helper()
		if exited(c.cmd.Process.Pid) {
			t.Fatalf("the node exited; log:\n%s", c.log())
		}
	}
	for i := range 3 {
		c.kubectl("create", "configmap", fmt.Sprintf("before-%d", i), "--from-literal=k=v")
	}
	reserve := filepath.Join(c.dataDir, "etcd", "reserve")
	eventually(t, 10*time.Second, func() error {
		_, err := os.Stat(reserve)
		return err
	})

	// Writers keep going while the disk fills, so that writes accepted just before the guard
	// looks meet the full disk in etcd.
	payload := filepath.Join(t.TempDir(), "payload")
	if err := os.WriteFile(payload, []byte(strings.Repeat("x", 256<<10)), 0o600); err != nil {
		t.Fatal(err)
	}
	stopWriters := make(chan struct{})
	var writers sync.WaitGroup
	for w := range 4 {
		writers.Add(1)
		go func() {
			defer writers.Done()
			for i := 0; ; i++ {
				select {
				case <-stopWriters:
					return
				default:
				}
				_, _ = c.kubectlErr("create", "configmap", fmt.Sprintf("load-%d-%d", w, i), "--from-file=v="+payload)
			}
		}()
	}
	time.Sleep(2 * time.Second)
	fill := filepath.Join(mnt, "fill")
	out, err := exec.Command("dd", "if=/dev/zero", "of="+fill, "bs=1M", "count=600").CombinedOutput()
	time.Sleep(3 * time.Second)
	close(stopWriters)
	writers.Wait()
	if err == nil || !strings.Contains(string(out), "No space left") {
		t.Fatalf("dd did not fill the file system: %v\n%s", err, out)
	}
	// Writes are refused with a Status naming NOSPACE; reads are served; the node lives on
	// while etcd's background commits (the leases of the controllers and of the API server)
	// keep going for a while.
	eventually(t, 30*time.Second, func() error {
		code, st := c.createConfigMap(t, "during")
		if code == http.StatusCreated {
			return fmt.Errorf("a write was accepted with the disk full")
		}
		if code != http.StatusInsufficientStorage || st.Reason != "InsufficientStorage" || !strings.Contains(st.Message, "NOSPACE") {
			return fmt.Errorf("write refused without a 507 InsufficientStorage Status naming NOSPACE: %d %+v", code, st)
		}
		return nil
	})
	for i := range 20 {
		alive()
		mustContain(t, c.kubectl("get", "configmap", fmt.Sprintf("before-%d", i%3), "-o", "name"), "before-")
		time.Sleep(time.Second)
	}
	alive()

	if err := os.Remove(fill); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, func() error {
		out, err := c.kubectlErr("create", "configmap", "after", "--from-literal=k=v")
		if err != nil && !strings.Contains(out, "AlreadyExists") {
			return fmt.Errorf("writes still refused after space was freed: %s", out)
		}
		return nil
	})
	eventually(t, 30*time.Second, func() error {
		_, err := os.Stat(reserve)
		return err
	})
	alive()
}

// createConfigMap POSTs a ConfigMap called name straight to the API server and answers the HTTP
// status code and, for a refusal, the Status (kubectl's create words it its own way).
func (c *cluster) createConfigMap(t *testing.T, name string) (int, metav1.Status) {
	t.Helper()
	tlsCfg, _ := c.adminTLS(t)
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsCfg}}
	body := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q},"data":{"k":"v"}}`, name)
	resp, err := hc.Post("https://127.0.0.1:"+strconv.Itoa(c.ports[0])+"/api/v1/namespaces/default/configmaps", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("create configmap %s: %v\nthe node's log:\n%s", name, err, c.log())
	}
	defer resp.Body.Close()
	var st metav1.Status
	if resp.StatusCode != http.StatusCreated {
		if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
			t.Fatalf("create configmap %s: %d without a Status: %v", name, resp.StatusCode, err)
		}
	}
	return resp.StatusCode, st
}

// exited says whether process pid is gone or a zombie (it exited and nobody waited for it yet).
func exited(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// The state follows the command name in parentheses, which may itself hold spaces.
	rest := string(stat[strings.LastIndexByte(string(stat), ')')+1:])
	return strings.HasPrefix(strings.TrimSpace(rest), "Z")
}

// smallExt4 mounts a file system of mib MiB, ext4 on a loop device as a real disk is (no blocks
// kept for root: skiff and dd both run as root), and removes it at the end of the test.
func smallExt4(t *testing.T, mib int) string {
	t.Helper()
	dir := t.TempDir()
	img, mnt := filepath.Join(dir, "fs.img"), filepath.Join(dir, "mnt")
	if err := os.Mkdir(mnt, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(img, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, int64(mib)<<20); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mkfs.ext4", "-q", "-F", "-m", "0", img).CombinedOutput(); err != nil {
		t.Skipf("mkfs.ext4: %v\n%s", err, out)
	}
	if out, err := exec.Command("mount", "-o", "loop", img, mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot loop-mount a file system here: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
			t.Logf("umount %s: %v\n%s", mnt, err, out)
			_ = exec.Command("umount", "-l", mnt).Run()
		}
	})
	return mnt
}

// startOn starts an etcd,controlplane node with its data dir on the file system at mnt.
func startOn(t *testing.T, mnt string) *cluster {
	t.Helper()
	dataDir := filepath.Join(mnt, "data")
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		t.Fatal(err)
	}
	// The automatic threshold of the tmpfs (64 MiB), not the other tests' fixed one.
	c := &cluster{t: t, bin: skiffBinary, dataDir: dataDir, extraArgs: []string{"--etcd-disk-reserve-bytes", "0"}}
	c.ports = [3]int{freePort(t), freePort(t), freePort(t)}
	c.kubeconfig = filepath.Join(dataDir, "admin.kubeconfig")
	c.start()
	t.Cleanup(c.stop)
	return c
}
