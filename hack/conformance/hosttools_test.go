package conformance

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// harnessTools are the commands the harness runs that a fresh Debian machine may lack (beyond
// its essential packages): each is a fake executable in the tests' PATH unless a case leaves it
// out.
var harnessTools = []string{"etcd", "containerd", "runc", "iptables", "busybox", "ip", "bridge", "ss", "conntrack", "nsenter", "pgrep", "unshare", "git", "kubectl", "go"}

// checkHost runs `hack/conformance.sh --check-host` with a PATH of only bash, dirname and date
// (what the script needs to parse its arguments) and the fakes named in have, and a fake gcc
// unless gcc is "": "static" finds a static libc, "dynamic" does not.
func checkHost(t *testing.T, have []string, gcc string) string {
	t.Helper()
	bin := t.TempDir()
	for _, tool := range []string{"bash", "dirname", "date"} {
		path, err := exec.LookPath(tool)
		if err != nil {
			t.Skipf("%s: %v", tool, err)
		}
		if err := os.Symlink(path, filepath.Join(bin, tool)); err != nil {
			t.Fatal(err)
		}
	}
	fake := func(name, body string) {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, tool := range have {
		fake(tool, "exit 0")
	}
	switch gcc {
	case "static":
		fake("gcc", `[ "$1" = -print-file-name=libc.a ] && echo /usr/lib/x86_64-linux-gnu/libc.a`)
	case "dynamic":
		fake("gcc", `[ "$1" = -print-file-name=libc.a ] && echo libc.a`) // gcc's answer when it has none
	}
	cmd := exec.Command("bash", "hack/conformance.sh", "--check-host")
	cmd.Dir = "../.."
	cmd.Env = []string{"PATH=" + bin, "HOME=" + t.TempDir()}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("conformance.sh --check-host: %v\n%s", err, out)
	}
	return string(out)
}

func without(tools []string, drop ...string) []string {
	var out []string
	for _, tool := range tools {
		if !strings.Contains(" "+strings.Join(drop, " ")+" ", " "+tool+" ") {
			out = append(out, tool)
		}
	}
	return out
}

// TestCheckHostFreshMachine: on a machine with none of the harness's tools, the harness plans
// Debian's etcd (the etcd image is made of it: issue 32 item 3), the runtime, the compiler with
// a static libc, iproute2, util-linux and git (the CSI images' sources), and kubectl; Go it can only name.
func TestCheckHostFreshMachine(t *testing.T) {
	out := checkHost(t, nil, "")
	for _, want := range []string{
		"run hack/install-etcd.sh\n",
		"run hack/install-runtime.sh\n",
		"apt-get install gcc iproute2 util-linux procps git libc6-dev\n",
		"build kubectl v1.33.13 into ",
		"missing go: ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("plan lacks %q:\n%s", want, out)
		}
	}
}

// TestCheckHostOnlyEtcdMissing is the machine: everything but etcd there, so the one step
// is hack/install-etcd.sh; with etcd too, nothing is done.
func TestCheckHostOnlyEtcdMissing(t *testing.T) {
	if out := checkHost(t, without(harnessTools, "etcd"), "static"); out != "run hack/install-etcd.sh\n" {
		t.Errorf("plan with only etcd missing:\n%s", out)
	}
	if out := checkHost(t, harnessTools, "static"); out != "host tools: all present\n" {
		t.Errorf("plan with every tool there:\n%s", out)
	}
	if out := checkHost(t, harnessTools, "dynamic"); out != "apt-get install libc6-dev\n" {
		t.Errorf("plan without gcc's static libc:\n%s", out)
	}
	if out := checkHost(t, harnessTools, ""); out != "apt-get install gcc libc6-dev\n" {
		t.Errorf("plan without gcc:\n%s", out)
	}
	if out := checkHost(t, without(harnessTools, "kubectl"), "static"); !strings.HasPrefix(out, "build kubectl v1.33.13 into ") || strings.Count(out, "\n") != 1 {
		t.Errorf("plan without kubectl:\n%s", out)
	}
}
