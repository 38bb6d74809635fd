package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestSecondServerOnTheDataDirIsRefused: a second skiff on a running node's data dir exits at once
// naming the running process, changes nothing there, and the first node keeps serving.
func TestSecondServerOnTheDataDirIsRefused(t *testing.T) {
	c := newCluster(t)
	kubeconfig, err := os.ReadFile(c.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// Other ports, so only the data dir collides.
	second := exec.CommandContext(ctx, c.bin, "server", "--data-dir", c.dataDir, "--roles", "etcd,controlplane",
		"--bind-address", "127.0.0.1", "--https-port", strconv.Itoa(freePort(t)),
		"--etcd-client-port", strconv.Itoa(freePort(t)), "--etcd-peer-port", strconv.Itoa(freePort(t)))
	out, err := second.CombinedOutput()
	if err == nil || ctx.Err() != nil {
		t.Fatalf("second skiff on the data dir: err %v (context %v), output:\n%s", err, ctx.Err(), out)
	}
	want := fmt.Sprintf("data dir %s is in use by skiff (pid %d)", c.dataDir, c.cmd.Process.Pid)
	if !strings.Contains(string(out), want) {
		t.Fatalf("second skiff said:\n%s\nwant it to contain %q", out, want)
	}
	if after, err := os.ReadFile(filepath.Join(c.dataDir, "admin.kubeconfig")); err != nil || string(after) != string(kubeconfig) {
		t.Fatalf("admin.kubeconfig changed by the refused node (err %v)", err)
	}
	mustContain(t, c.kubectl("get", "namespaces"), "kube-system")
}
