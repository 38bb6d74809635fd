package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Helpers shared by the benchmarks' process starters (skiff's server and upstream's control plane):
// loopback ports, CPU time from /proc and the /readyz wait.

// ProcessCPU is a process's CPU time (user + system) so far, from /proc/<pid>/stat (Linux only).
func ProcessCPU(pid int) (time.Duration, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("read stat of pid %d: %w", pid, err)
	}
	return parseProcStatCPU(string(raw))
}

// clockTicksPerSecond is USER_HZ, 100 on every Linux architecture Go supports.
const clockTicksPerSecond = 100

// parseProcStatCPU reads utime and stime (fields 14 and 15) from a /proc/<pid>/stat line; the
// command name (field 2) may contain spaces, so fields are counted after its closing parenthesis.
func parseProcStatCPU(stat string) (time.Duration, error) {
	end := strings.LastIndexByte(stat, ')')
	if end < 0 {
		return 0, fmt.Errorf("unexpected /proc stat line %q", stat)
	}
	fields := strings.Fields(stat[end+1:])
	// fields[0] is field 3 (state), so utime (14) and stime (15) are fields[11] and fields[12].
	if len(fields) < 13 {
		return 0, fmt.Errorf("unexpected /proc stat line %q", stat)
	}
	var ticks int64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("unexpected /proc stat field %q: %w", f, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicksPerSecond, nil
}

// WaitReadyz polls the API server's /readyz through cfg every interval until it answers "ok", the
// timeout passes, ctx ends or exited (may be nil) yields a process's exit error.
func WaitReadyz(ctx context.Context, cfg *rest.Config, timeout, interval time.Duration, exited <-chan error) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("client for readyz: %w", err)
	}
	var last error
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); {
		select {
		case err := <-exited:
			return fmt.Errorf("process exited before ready: %v", err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(interval):
		}
		body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err == nil && string(body) == "ok" {
			return nil
		}
		last = fmt.Errorf("readyz: %q %v", body, err)
	}
	return errors.Join(fmt.Errorf("not ready within %v", timeout), last)
}

// FreePorts reserves n distinct loopback ports by listening on them together, then releases them.
func FreePorts(n int) ([]int, error) {
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free port: %w", err)
		}
		listeners = append(listeners, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
