package e2e

import (
	"context"
	"encoding/json"
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
	second := exec.CommandContext(ctx, c.bin, append([]string{"server", "--data-dir", c.dataDir, "--roles", "etcd,controlplane",
		"--bind-address", "127.0.0.1", "--https-port", strconv.Itoa(freePort(t)),
		"--etcd-client-port", strconv.Itoa(freePort(t)), "--etcd-peer-port", strconv.Itoa(freePort(t))},
		kubeletOffArgs(c.bin, "etcd,controlplane")...)...)
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

// TestDamagedCredentialsStopTheNode: a damaged serving key or a deleted service-account key stops
// the node at start with a message naming the file and the fix; nothing is silently regenerated
// (every token or client that trusted the old one would stop working). Restored, the node starts.
func TestDamagedCredentialsStopTheNode(t *testing.T) {
	c := newCluster(t)
	c.stop()
	pkiDir := filepath.Join(c.dataDir, "pki")
	for _, tt := range []struct {
		file   string
		damage func(path string) error
		want   string
	}{
		{"apiserver.key", func(p string) error { return os.WriteFile(p, []byte("garbage"), 0o600) }, "key " + filepath.Join(pkiDir, "apiserver.key") + " is damaged"},
		{"sa.key", os.Remove, "key " + filepath.Join(pkiDir, "sa.key") + " is missing: restore it from a backup"},
	} {
		path := filepath.Join(pkiDir, tt.file)
		saved, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := tt.damage(path); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		out, err := exec.CommandContext(ctx, c.bin, c.serverArgs()...).CombinedOutput()
		timedOut := ctx.Err()
		cancel()
		if err == nil || timedOut != nil || !strings.Contains(string(out), tt.want) {
			t.Fatalf("start with %s damaged: err %v (context %v); want a refusal containing %q, output:\n%s", tt.file, err, timedOut, tt.want, out)
		}
		after, _ := os.ReadFile(path)
		if tt.file == "apiserver.key" && string(after) != "garbage" {
			t.Fatalf("%s was rewritten by the refused start", tt.file)
		}
		if err := os.WriteFile(path, saved, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	c.start()
	mustContain(t, c.kubectl("get", "namespaces"), "kube-system")
}

// TestOneLogFormat: with --log-format json every line the node prints (its own, etcd's, klog's)
// is one JSON record, and a clean stop prints no error.
func TestOneLogFormat(t *testing.T) {
	c := newCluster(t, "--log-format", "json")
	mustContain(t, c.kubectl("get", "namespaces"), "kube-system")
	c.stop()
	data, err := os.ReadFile(filepath.Join(c.dataDir, "skiff.log"))
	if err != nil {
		t.Fatal(err)
	}
	components := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var rec struct {
			Level     string `json:"level"`
			Msg       string `json:"msg"`
			Component string `json:"component"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("a log line is not JSON (%v): %s", err, line)
		}
		if rec.Level == "ERROR" {
			t.Errorf("a clean start and stop logged an error: %s", line)
		}
		components[rec.Component] = true
	}
	for _, want := range []string{"etcd", "scheduler", "controller-manager"} {
		if !components[want] {
			t.Errorf("no log line from %s; components seen: %v", want, components)
		}
	}
}

// TestEtcdSnapshotSaveAndRestore: a snapshot taken from a running node, restored into a new data dir
// (with the old pki/ copied, as docs/user/backups.md says), starts a node with every object of the snapshot
// and none written after it.
func TestEtcdSnapshotSaveAndRestore(t *testing.T) {
	c := newCluster(t)
	for i := range 5 {
		c.kubectl("create", "configmap", fmt.Sprintf("kept-%d", i), "--from-literal=k=v")
	}
	backup := filepath.Join(t.TempDir(), "backup.db")
	out, err := exec.Command(c.bin, "etcd", "snapshot", "save", "--data-dir", c.dataDir, backup).CombinedOutput()
	if err != nil {
		t.Fatalf("snapshot save: %v\n%s", err, out)
	}
	mustContain(t, string(out), "saved "+backup)
	c.kubectl("create", "configmap", "after-the-snapshot", "--from-literal=k=v")
	c.stop()

	restored := &cluster{t: t, bin: c.bin, dataDir: t.TempDir()}
	restored.ports = [3]int{freePort(t), freePort(t), freePort(t)}
	restored.kubeconfig = filepath.Join(restored.dataDir, "admin.kubeconfig")
	out, err = exec.Command(c.bin, "etcd", "snapshot", "restore", "--data-dir", restored.dataDir,
		"--etcd-peer-port", strconv.Itoa(restored.ports[2]), "--bind-address", "127.0.0.1", backup).CombinedOutput()
	if err != nil {
		t.Fatalf("snapshot restore: %v\n%s", err, out)
	}
	if err := os.CopyFS(filepath.Join(restored.dataDir, "pki"), os.DirFS(filepath.Join(c.dataDir, "pki"))); err != nil {
		t.Fatal(err)
	}
	restored.start()
	t.Cleanup(restored.stop)
	names := restored.kubectl("get", "configmaps", "-o", "name")
	for i := range 5 {
		mustContain(t, names, fmt.Sprintf("configmap/kept-%d", i))
	}
	if strings.Contains(names, "after-the-snapshot") {
		t.Fatalf("a configmap written after the snapshot came back:\n%s", names)
	}
	// The old credentials still work: the CA and the service-account key came with pki/.
	token := restored.kubectl("create", "token", "default")
	if token == "" {
		t.Fatal("no token from the restored node")
	}
}
