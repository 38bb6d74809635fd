package containerd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/utils/clock"
)

// Supervisor runs containerd as a child process and keeps it running.
type Supervisor struct {
	cfg   Config
	clock clock.Clock
	log   *slog.Logger

	readyOnce sync.Once
	ready     chan struct{}

	mu       sync.Mutex
	pid      int
	restarts int
}

// New validates cfg (after filling in defaults) and returns a Supervisor.
// clk may be nil for the real clock; log may be nil for slog.Default().
func New(cfg Config, clk clock.Clock, log *slog.Logger) (*Supervisor, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("containerd config: %w", err)
	}
	if clk == nil {
		clk = clock.RealClock{}
	}
	if log == nil {
		log = slog.Default()
	}
	return &Supervisor{cfg: cfg, clock: clk, log: log.With("component", "containerd"), ready: make(chan struct{})}, nil
}

// Config returns the defaulted configuration.
func (s *Supervisor) Config() Config { return s.cfg }

// Address is the containerd (and CRI) unix socket path.
func (s *Supervisor) Address() string { return s.cfg.Address }

// Endpoint is the CRI endpoint URL of the socket ("unix:///...").
func (s *Supervisor) Endpoint() string { return "unix://" + s.cfg.Address }

// Ready is closed once containerd first answers on its socket.
func (s *Supervisor) Ready() <-chan struct{} { return s.ready }

// PID is the running containerd's process ID, 0 when none runs.
func (s *Supervisor) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pid
}

// Restarts counts how often containerd was restarted after exiting.
func (s *Supervisor) Restarts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.restarts
}

func (s *Supervisor) pidFile() string { return s.cfg.StateDir + "/skiff-containerd.pid" }

// Run writes the configuration, starts containerd and restarts it with
// backoff whenever it exits, until ctx ends; then it stops containerd
// (SIGTERM, SIGKILL after StopTimeout) and returns. Running containers are
// left alone: their shims outlive containerd.
func (s *Supervisor) Run(ctx context.Context) error {
	if err := s.cfg.WriteFiles(); err != nil {
		return err
	}
	s.stopStale()
	backoff := s.cfg.RestartBackoff
	for {
		started := s.clock.Now()
		err := s.runOnce(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if s.clock.Since(started) >= s.cfg.BackoffReset {
			backoff = s.cfg.RestartBackoff
		}
		s.log.Error("containerd exited; restarting", "err", err, "after", backoff)
		select {
		case <-ctx.Done():
			return nil
		case <-s.clock.After(backoff):
		}
		backoff = min(backoff*2, s.cfg.MaxRestartBackoff)
		s.mu.Lock()
		s.restarts++
		s.mu.Unlock()
	}
}

// runOnce starts containerd, waits for it to exit or for ctx to end.
func (s *Supervisor) runOnce(ctx context.Context) error {
	logFile, err := os.OpenFile(s.cfg.LogPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("containerd log: %w", err)
	}
	defer logFile.Close()
	_ = os.Remove(s.cfg.Address) // a stale socket would fool the readiness check
	args := []string{"--config", s.cfg.ConfigPath()}
	binary := s.cfg.Binary
	if s.cfg.NetNSPath != "" {
		args = append([]string{"--net=" + s.cfg.NetNSPath, "--", s.cfg.Binary}, args...)
		binary = "nsenter"
	}
	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Its own process group keeps a terminal's Ctrl-C from reaching containerd
	// before skiff has stopped its pods; Pdeathsig stops it if skiff dies.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start containerd: %w", err)
	}
	s.mu.Lock()
	s.pid = cmd.Process.Pid
	s.mu.Unlock()
	_ = os.WriteFile(s.pidFile(), []byte(strconv.Itoa(cmd.Process.Pid)), 0o600)
	s.log.Info("containerd started", "pid", cmd.Process.Pid, "address", s.cfg.Address)

	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		s.mu.Lock()
		s.pid = 0
		s.mu.Unlock()
		_ = os.Remove(s.pidFile())
	}()

	waitCtx, cancelWait := context.WithTimeout(ctx, s.cfg.StartTimeout)
	socketUp := make(chan error, 1)
	go func() { socketUp <- WaitForSocket(waitCtx, s.cfg.Address, s.clock) }()

	for {
		select {
		case err := <-socketUp:
			cancelWait()
			if err == nil {
				s.log.Info("containerd ready", "address", s.cfg.Address)
				s.readyOnce.Do(func() { close(s.ready) })
			} else if ctx.Err() == nil {
				s.log.Error("containerd socket did not come up", "err", err)
				s.terminate(cmd, exited)
				return fmt.Errorf("containerd socket: %w", err)
			}
			socketUp = nil
		case err := <-exited:
			cancelWait()
			return fmt.Errorf("containerd exited: %w (see %s)", exitError(err), s.cfg.LogPath())
		case <-ctx.Done():
			cancelWait()
			s.terminate(cmd, exited)
			return ctx.Err()
		}
	}
}

func exitError(err error) error {
	if err == nil {
		return errors.New("exit status 0")
	}
	return err
}

// terminate sends SIGTERM, then SIGKILL after StopTimeout, and waits.
func (s *Supervisor) terminate(cmd *exec.Cmd, exited <-chan error) {
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-s.clock.After(s.cfg.StopTimeout):
		_ = cmd.Process.Kill()
		<-exited
	}
	s.log.Info("containerd stopped", "pid", cmd.Process.Pid)
}

// stopStale stops a containerd left running by a previous skiff that died
// without stopping it, recognised by its pid file and its command line
// naming this instance's config.
func (s *Supervisor) stopStale() {
	data, err := os.ReadFile(s.pidFile())
	if err != nil {
		return
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 1 {
		return
	}
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil || !strings.Contains(string(cmdline), s.cfg.ConfigPath()) {
		return
	}
	s.log.Warn("stopping containerd left by a previous run", "pid", pid)
	_ = syscall.Kill(pid, syscall.SIGTERM)
	deadline := s.clock.Now().Add(s.cfg.StopTimeout)
	for s.clock.Now().Before(deadline) {
		if syscall.Kill(pid, 0) != nil {
			return
		}
		<-s.clock.After(50 * time.Millisecond)
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
}

// WaitForSocket polls until a unix socket at path accepts connections or ctx
// ends. clk may be nil for the real clock.
func WaitForSocket(ctx context.Context, path string, clk clock.Clock) error {
	if clk == nil {
		clk = clock.RealClock{}
	}
	var lastErr error
	for {
		var d net.Dialer
		conn, err := d.DialContext(ctx, "unix", path)
		if err == nil {
			conn.Close()
			return nil
		}
		lastErr = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for %s: %w (last error: %v)", path, ctx.Err(), lastErr)
		case <-clk.After(50 * time.Millisecond):
		}
	}
}
