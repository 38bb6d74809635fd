package containerd

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The test binary doubles as a fake containerd: with fakeModeEnv set it reads
// the grpc address from --config and serves it, so the supervisor's process
// handling is tested without the real daemon.
const (
	fakeModeEnv  = "SKIFF_FAKE_CONTAINERD"
	fakeStartEnv = "SKIFF_FAKE_CONTAINERD_STARTS"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(fakeModeEnv); mode != "" {
		os.Exit(fakeContainerd(mode))
	}
	os.Exit(m.Run())
}

func fakeContainerd(mode string) int {
	startsFile := os.Getenv(fakeStartEnv)
	previous, _ := os.ReadFile(startsFile)
	_ = os.WriteFile(startsFile, append(previous, 'x'), 0o600)
	if mode == "crash-first" && len(previous) == 0 {
		return 3
	}
	if len(os.Args) < 3 || os.Args[1] != "--config" {
		return 2
	}
	address, err := grpcAddress(os.Args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	l, err := net.Listen("unix", address)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM)
	<-stop
	l.Close()
	return 0
}

func grpcAddress(config string) (string, error) {
	f, err := os.Open(config)
	if err != nil {
		return "", err
	}
	defer f.Close()
	inGRPC := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "[") {
			inGRPC = line == "[grpc]"
		}
		if inGRPC && strings.HasPrefix(line, "address = ") {
			return strings.Trim(strings.TrimPrefix(line, "address = "), `"`), nil
		}
	}
	return "", fmt.Errorf("no grpc address in %s", config)
}

func startFake(t *testing.T, mode string) (*Supervisor, context.CancelFunc, <-chan error, string) {
	t.Helper()
	starts := filepath.Join(t.TempDir(), "starts")
	t.Setenv(fakeModeEnv, mode)
	t.Setenv(fakeStartEnv, starts)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "skiff-ctrd-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	cfg := Default(dir)
	cfg.Binary = self
	cfg.RestartBackoff, cfg.MaxRestartBackoff = 10*time.Millisecond, 40*time.Millisecond
	cfg.StartTimeout, cfg.StopTimeout = 10*time.Second, 5*time.Second
	sup, err := New(cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	result := make(chan error, 1)
	finished := make(chan struct{})
	go func() {
		result <- sup.Run(ctx)
		close(finished)
	}()
	t.Cleanup(func() {
		cancel()
		<-finished
	})
	return sup, cancel, result, starts
}

func waitReady(t *testing.T, sup *Supervisor) {
	t.Helper()
	select {
	case <-sup.Ready():
	case <-time.After(20 * time.Second):
		t.Fatal("containerd never became ready")
	}
}

func TestSupervisorStartsAndStops(t *testing.T) {
	sup, cancel, done, _ := startFake(t, "serve")
	waitReady(t, sup)
	pid := sup.PID()
	if pid == 0 {
		t.Fatal("no pid while running")
	}
	if _, err := os.Stat(sup.Config().ConfigPath()); err != nil {
		t.Errorf("config not written: %v", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run = %v after cancel, want nil", err)
	}
	if err := syscall.Kill(pid, 0); err == nil {
		t.Errorf("containerd pid %d still alive after stop", pid)
	}
	if sup.PID() != 0 {
		t.Errorf("PID = %d after stop", sup.PID())
	}
}

func TestSupervisorRestartsAfterCrash(t *testing.T) {
	sup, _, _, starts := startFake(t, "crash-first")
	waitReady(t, sup)
	if got := sup.Restarts(); got != 1 {
		t.Errorf("Restarts = %d, want 1", got)
	}
	data, _ := os.ReadFile(starts)
	if len(data) != 2 {
		t.Errorf("fake containerd started %d times, want 2", len(data))
	}
	// A kill of the running instance is also recovered from.
	pid := sup.PID()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for sup.Restarts() < 2 || sup.PID() == 0 || sup.PID() == pid {
		if time.Now().After(deadline) {
			t.Fatalf("not restarted after kill: restarts %d pid %d", sup.Restarts(), sup.PID())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := WaitForSocket(t.Context(), sup.Address(), nil); err != nil {
		t.Fatal(err)
	}
}
