package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

func buildNodeinit(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("new PID and mount namespaces need root")
	}
	bin := filepath.Join(t.TempDir(), "nodeinit")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

// TestNodeLooksLikeAMachine: inside, the node's mount namespace is entered through /proc/1 as
// e2e.test's host-exec pods do, a mount made there stays there, orphans are reaped, and the
// command's status comes out.
func TestNodeLooksLikeAMachine(t *testing.T) {
	bin := buildNodeinit(t)
	dir := t.TempDir()
	script := `set -e
nsenter --mount=/proc/1/ns/mnt -- sh -c 'mount -t tmpfs nodeinit-test "$0"' "$0"
grep -q nodeinit-test /proc/self/mounts
[ "$(hostname)" = node-a ]
(sleep 0.1 &)
sleep 0.5
for s in /proc/[0-9]*/stat; do
	case $(cut -d" " -f3 "$s" 2>/dev/null) in Z) echo "zombie: $(cat "$s")"; exit 1;; esac
done
exit 7`
	cmd := exec.Command(bin, "--hostname", "node-a", "--", "sh", "-c", script, dir)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 7 {
		t.Fatalf("run: %v, want exit 7\n%s", err, out.String())
	}
	mounts, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(mounts), "nodeinit-test") {
		t.Errorf("a mount made in the node reached the host")
	}
	if h, _ := os.Hostname(); h == "node-a" {
		t.Errorf("the node's hostname reached the host")
	}
}

// TestStopReachesTheCommand: the harness stops a node with SIGINT to the process it started; the
// command gets it, and what the node left running ends with it.
func TestStopReachesTheCommand(t *testing.T) {
	bin := buildNodeinit(t)
	marker := filepath.Join(t.TempDir(), "started")
	// A sleep nothing else runs, to look for afterwards.
	left := fmt.Sprintf("%d.%d", 600+os.Getpid()%1000, time.Now().UnixNano()%1000000)
	script := `sleep "$1" & trap 'exit 42' INT; touch "$0"; while :; do sleep 0.05; done`
	cmd := exec.Command(bin, "--", "sh", "-c", script, marker, left)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(marker); err == nil {
			break
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatalf("command never started\n%s", out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 42 {
		t.Fatalf("wait: %v, want exit 42 from the command's trap\n%s", err, out.String())
	}
	// The background sleep was in the node's PID namespace, which ended with its init.
	if out, err := exec.Command("pgrep", "-f", "^sleep "+left+"$").Output(); err == nil {
		t.Errorf("processes outlived the node: %s", out)
	}
}

func TestParseArgs(t *testing.T) {
	for _, tt := range []struct {
		args     []string
		hostname string
		command  []string
		err      bool
	}{
		{args: []string{"--", "skiff", "server"}, command: []string{"skiff", "server"}},
		{args: []string{"skiff"}, command: []string{"skiff"}},
		{args: []string{"--hostname", "n1", "--", "skiff", "--", "x"}, hostname: "n1", command: []string{"skiff", "--", "x"}},
		{args: []string{"--hostname", "", "--", "skiff"}, err: true},
		{args: []string{"--"}, err: true},
		{args: nil, err: true},
	} {
		hostname, command, err := parseArgs(tt.args)
		if (err != nil) != tt.err || hostname != tt.hostname || !slices.Equal(command, tt.command) {
			t.Errorf("parseArgs(%q) = %q %q %v", tt.args, hostname, command, err)
		}
	}
}
