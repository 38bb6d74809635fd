package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skiff-sh/skiff/internal/cni"
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
// it and the data dir, and the pod's network namespace, address lease and the node's bridge with
// its masquerade chain. The node has a bridge and pod range of its own, so removing the bridge
// takes nothing from other tests' nodes on this host.
func TestUninstallLeavesNothing(t *testing.T) {
	suffix := fmt.Sprintf("%06x", rand.Uint32()&0xffffff)
	bridge := "sku" + suffix
	cidr := fmt.Sprintf("10.249.%d.0/20", 16*rand.IntN(16))
	c := newWorkerCluster(t, "--cni-bridge", bridge, "--cluster-cidr", cidr)
	t.Cleanup(func() { // in case uninstall failed: the bridge is this test's alone
		_, _ = execOutput("ip", "link", "del", bridge)
		_ = cni.RemoveMasquerade(context.Background(), bridge, []string{cidr})
		_ = os.RemoveAll(filepath.Join("/var/lib/cni/skiff", bridge))
	})
	c.kubectl("run", "left", "--image=localhost/busybox:local", "--", "sleep", "3600")
	c.kubectl("wait", "--for=condition=Ready", "pod/left", "--timeout=90s")
	netns := podNetNamespaces(t, c.dataDir)
	if len(netns) == 0 {
		t.Fatal("the node's containerd names no pod network namespace")
	}
	leaseDir := filepath.Join("/var/lib/cni/skiff", bridge)
	if _, err := os.Stat(leaseDir); err != nil {
		t.Fatalf("the pod's address lease dir: %v", err)
	}
	c.kill()
	prefix := proxy.NodePrefix(c.dataDir)
	if len(proxyRules(t, prefix)) == 0 {
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
		if len(proxyRules(t, prefix)) > 0 {
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
	for _, ns := range netns {
		if _, err := os.Stat(ns); !os.IsNotExist(err) {
			t.Errorf("pod network namespace %s still there (%v)", ns, err)
		}
	}
	if out, err := execOutput("ip", "link", "show", bridge); err == nil {
		t.Errorf("bridge %s still there:\n%s", bridge, out)
	}
	if _, err := os.Stat(leaseDir); !os.IsNotExist(err) {
		t.Errorf("lease dir %s still there (%v)", leaseDir, err)
	}
	if chain := cni.MasqueradeChain(bridge); strings.Contains(iptablesSave(t, "nat"), chain) {
		t.Errorf("masquerade chain %s still there", chain)
	}
	if _, err := os.Stat(filepath.Join(units, "skiff.service")); !os.IsNotExist(err) {
		t.Fatal("unit still there")
	}
}

// podNetNamespaces are the network namespace files the node's containerd made for its sandboxes,
// read from their OCI bundles.
func podNetNamespaces(t *testing.T, dataDir string) []string {
	t.Helper()
	bundles, _ := filepath.Glob(filepath.Join(dataDir, "kubelet", "containerd", "state", "io.containerd.runtime.v2.task", "*", "*", "config.json"))
	netnsPath := regexp.MustCompile(`/(var/)?run/netns/cni-[0-9a-f-]+`)
	var out []string
	for _, b := range bundles {
		raw, err := os.ReadFile(b)
		if err != nil {
			continue
		}
		out = append(out, netnsPath.FindAllString(string(raw), -1)...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func mountsUnder(t *testing.T, dir string) bool {
	t.Helper()
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Contains(string(data), " "+dir+"/") || strings.Contains(string(data), " "+dir+" ")
}
