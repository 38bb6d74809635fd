package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skiff-sh/skiff/internal/proxy"
)

// TestInstallWritesTheUnit: skiff install places the binary and a systemd unit running skiff
// server with the given arguments (not started: this host has no systemd).
func TestInstallWritesTheUnit(t *testing.T) {
	bin, units := t.TempDir(), t.TempDir()
	out, err := execOutput(skiffBinary, "install", "--bin-dir", bin, "--unit-dir", units, "--no-start", "--", "--data-dir", "/var/lib/skiff", "--node-name", "n1")
	if err != nil {
		t.Fatalf("install: %v\n%s", err, out)
	}
	unit, err := os.ReadFile(filepath.Join(units, "skiff.service"))
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, string(unit), "ExecStart="+filepath.Join(bin, "skiff")+" server --data-dir /var/lib/skiff --node-name n1", "KillMode=process")
	if v, err := execOutput(filepath.Join(bin, "skiff"), "version"); err != nil || !strings.Contains(v, "skiff") {
		t.Fatalf("installed binary: %v %s", err, v)
	}
}

// TestUninstallLeavesNothing: a worker node with a running pod is killed (its containers, its
// containerd, its mounts and rules stay behind, as after a crash); skiff uninstall removes all of
// it and the data dir.
func TestUninstallLeavesNothing(t *testing.T) {
	c := newWorkerCluster(t)
	c.kubectl("run", "left", "--image=localhost/busybox:local", "--", "sleep", "3600")
	c.kubectl("wait", "--for=condition=Ready", "pod/left", "--timeout=90s")
	c.kill()
	prefix := proxy.NodePrefix(c.dataDir)
	if !strings.Contains(iptablesSave(t, "nat"), prefix) {
		t.Fatalf("the killed node left no rules to remove (prefix %s)", prefix)
	}
	if !mountsUnder(t, c.dataDir) {
		t.Fatal("the killed node left no mounts to remove")
	}
	units := t.TempDir()
	if err := os.WriteFile(filepath.Join(units, "skiff.service"), []byte("[Unit]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := execOutput(skiffBinary, "uninstall", "--data-dir", c.dataDir); err == nil || !strings.Contains(out, "--yes") {
		t.Fatalf("uninstall without --yes: %v\n%s", err, out)
	}
	out, err := execOutput(skiffBinary, "uninstall", "--data-dir", c.dataDir, "--unit-dir", units, "--bin-dir", t.TempDir(), "--yes")
	if err != nil {
		t.Fatalf("uninstall: %v\n%s", err, out)
	}
	t.Logf("uninstall:\n%s", out)
	mustContain(t, out, "killed", "removed "+c.dataDir)
	eventually(t, 30*time.Second, func() error {
		if mountsUnder(t, c.dataDir) {
			return errString("mounts under the data dir remain")
		}
		if strings.Contains(iptablesSave(t, "nat"), prefix) || strings.Contains(iptablesSave(t, "filter"), prefix) {
			return errString("service proxy rules remain")
		}
		if procs, _ := exec.Command("pgrep", "-f", c.dataDir).Output(); strings.TrimSpace(string(procs)) != "" {
			return errString("processes of the node remain: " + string(procs))
		}
		return nil
	})
	if _, err := os.Stat(c.dataDir); !os.IsNotExist(err) {
		t.Fatalf("data dir still there: %v", err)
	}
	if _, err := os.Stat(filepath.Join(units, "skiff.service")); !os.IsNotExist(err) {
		t.Fatal("unit still there")
	}
}

func mountsUnder(t *testing.T, dir string) bool {
	t.Helper()
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Contains(string(data), " "+dir+"/") || strings.Contains(string(data), " "+dir+" ")
}
