package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
)

// traceExecs creates n pods one after another (each once the previous one runs), deletes them,
// and counts the programs containerd and everything it starts (CNI plugins, shims, runc, iptables)
// executed meanwhile, by name, with strace following containerd's process tree. strace slows
// what it follows: these runs count programs, they are not timed.
func traceExecs(ctx context.Context, client kubernetes.Interface, dataDir string, n int, timeout time.Duration) (map[string]int, error) {
	pid := 0
	for _, p := range nodeProcesses(dataDir) {
		if p.kind == "containerd" {
			pid = p.pid
		}
	}
	if pid == 0 {
		return nil, fmt.Errorf("no containerd process of %s", dataDir)
	}
	out := filepath.Join(dataDir, "execs.strace")
	defer os.Remove(out)
	cmd := exec.CommandContext(ctx, "strace", "-f", "-qq", "-e", "trace=execve", "-e", "signal=none", "-o", out, "-p", fmt.Sprint(pid))
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("strace: %w", err)
	}
	time.Sleep(time.Second) // strace attaches to every thread of containerd
	var runErr error
	for i := range n {
		if _, runErr = startPods(ctx, client, fmt.Sprintf("trace%03d", i), 1, 1, timeout); runErr != nil {
			break
		}
	}
	if runErr == nil {
		runErr = deletePods(ctx, client, timeout)
	}
	_ = cmd.Process.Signal(os.Interrupt)
	_ = cmd.Wait()
	if runErr != nil {
		return nil, runErr
	}
	return countExecs(out)
}

// execLine matches an execve in strace's output: `PID execve("/path/prog", [...], ...) = 0`, or
// its first half when strace splits it (`<unfinished ...>`); failed ones (a PATH lookup) end in
// "= -1 ...".
var execLine = regexp.MustCompile(`execve\("([^"]+)"`) //nolint:gochecknoglobals // compiled once.

func countExecs(path string) (map[string]int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	counts := map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if m := execLine.FindStringSubmatch(line); m != nil && !strings.Contains(line, "= -1 ") {
			counts[filepath.Base(m[1])]++
		}
	}
	return counts, sc.Err()
}
