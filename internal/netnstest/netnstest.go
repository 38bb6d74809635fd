package netnstest

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// MustRun runs argv and returns its combined output, failing tb with the output on error.
func MustRun(tb testing.TB, argv ...string) string {
	tb.Helper()
	out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
	if err != nil {
		tb.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, out)
	}
	return string(out)
}

// New creates a network namespace named prefix-<6 random hex digits> with its loopback up, and
// deletes it when the test ends. It skips the test when not run as root or without the tools
// (ip, and each of needs: iptables-restore, conntrack, ...).
func New(tb testing.TB, prefix string, needs ...string) string {
	tb.Helper()
	if os.Geteuid() != 0 {
		tb.Skip("needs root for network namespaces")
	}
	for _, bin := range append([]string{"ip"}, needs...) {
		if _, err := exec.LookPath(bin); err != nil {
			tb.Skipf("%s not installed", bin)
		}
	}
	name := fmt.Sprintf("%s-%06x", prefix, rand.IntN(1<<24))
	MustRun(tb, "ip", "netns", "add", name)
	tb.Cleanup(func() { _ = exec.Command("ip", "netns", "del", name).Run() })
	MustRun(tb, "ip", "-n", name, "link", "set", "lo", "up")
	return name
}

// Run runs f on an OS thread that has entered the named network namespace and returns when f
// does. The thread is discarded afterwards (never unlocked), so no other goroutine ever runs in
// that namespace. The error is the failure to enter it; f did not run then.
func Run(name string, f func()) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		fd, err := os.Open("/var/run/netns/" + name)
		if err != nil {
			done <- err
			return
		}
		defer fd.Close()
		if err := unix.Setns(int(fd.Fd()), unix.CLONE_NEWNET); err != nil {
			done <- fmt.Errorf("enter network namespace %s: %w", name, err)
			return
		}
		f()
		done <- nil
	}()
	return <-done
}
