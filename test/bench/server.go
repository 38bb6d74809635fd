package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Server is a skiff server started by the benchmark: `skiff server --roles etcd,controlplane` on free
// loopback ports with its own data directory.
type Server struct {
	cmd     *exec.Cmd
	dataDir string
	ownsDir bool
	exited  chan error
	// Kubeconfig is the admin kubeconfig the server wrote.
	Kubeconfig string
}

// ServerOptions say how to start the server.
type ServerOptions struct {
	// Binary is the skiff executable.
	Binary string
	// DataDir is the server's data directory; empty makes (and later removes) a temporary one.
	DataDir string
	// Log receives the server's output (nil discards it).
	Log io.Writer
	// ExtraArgs are appended to the server command line.
	ExtraArgs []string
	// Env is added to the server's environment ("NAME=value").
	Env []string
}

// KubeletOffArgs turn off the kubelet that a node without the worker role runs by default where it
// can (as root with a container runtime): a benchmark's control plane is measured without one, as
// before that default. A binary from before --control-plane-kubelet (one compared against, which
// runs no kubelet there anyway) gets no flag: its `server -h` does not name it.
func KubeletOffArgs(binary string) []string {
	out, _ := exec.Command(binary, "server", "-h").CombinedOutput() // exits 1 after the usage
	if !bytes.Contains(out, []byte("-control-plane-kubelet")) {
		return nil
	}
	return []string{"--control-plane-kubelet=false"}
}

// StartServer runs the binary and waits until /readyz answers through the admin kubeconfig.
func StartServer(ctx context.Context, opts ServerOptions) (*Server, error) {
	if opts.Binary == "" {
		return nil, errors.New("no skiff binary given")
	}
	s := &Server{dataDir: opts.DataDir, exited: make(chan error, 1)}
	if s.dataDir == "" {
		dir, err := os.MkdirTemp("", "skiff-bench-")
		if err != nil {
			return nil, fmt.Errorf("data dir: %w", err)
		}
		s.dataDir, s.ownsDir = dir, true
	}
	ports, err := FreePorts(4)
	if err != nil {
		s.cleanup()
		return nil, err
	}
	args := append([]string{"server", "--data-dir", s.dataDir, "--roles", "etcd,controlplane",
		"--https-port", strconv.Itoa(ports[0]), "--etcd-client-port", strconv.Itoa(ports[1]),
		"--etcd-peer-port", strconv.Itoa(ports[2]), "--lb-port", strconv.Itoa(ports[3]), "--bind-address", "127.0.0.1", "--log-level", "warn"},
		KubeletOffArgs(opts.Binary)...)
	args = append(args, opts.ExtraArgs...)
	s.cmd = exec.Command(opts.Binary, args...)
	if len(opts.Env) > 0 {
		s.cmd.Env = append(os.Environ(), opts.Env...)
	}
	out := opts.Log
	if out == nil {
		out = io.Discard
	}
	s.cmd.Stdout, s.cmd.Stderr = out, out
	if err := s.cmd.Start(); err != nil {
		s.cleanup()
		return nil, fmt.Errorf("start %s: %w", opts.Binary, err)
	}
	go func() { s.exited <- s.cmd.Wait() }()
	s.Kubeconfig = filepath.Join(s.dataDir, "admin.kubeconfig")
	if err := s.waitReady(ctx); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

func (s *Server) waitReady(ctx context.Context) error {
	deadline := time.Now().Add(90 * time.Second)
	var lastErr error
	for time.Now().Before(deadline) {
		select {
		case err := <-s.exited:
			return fmt.Errorf("skiff server exited before becoming ready: %v", err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		if _, err := os.Stat(s.Kubeconfig); err != nil {
			lastErr = err
			continue
		}
		cfg, err := s.RESTConfig()
		if err != nil {
			lastErr = err
			continue
		}
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return err
		}
		body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err == nil && string(body) == "ok" {
			return nil
		}
		lastErr = fmt.Errorf("readyz: %q %v", body, err)
	}
	return fmt.Errorf("skiff server not ready within 90s: %v", lastErr)
}

// RESTConfig is a client configuration from the admin kubeconfig with client-side rate limiting
// off, so the client never throttles the measurement.
func (s *Server) RESTConfig() (*rest.Config, error) {
	return AdminConfig(s.Kubeconfig)
}

// AdminConfig is a client configuration from a kubeconfig file with client-side rate limiting off.
func AdminConfig(kubeconfig string) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", kubeconfig, err)
	}
	cfg.QPS = 1e6
	cfg.Burst = 1e6
	cfg.Timeout = 60 * time.Second
	return cfg, nil
}

// CPUTime is the CPU time (user + system) the server process has used so far, from
// /proc/<pid>/stat (Linux only).
func (s *Server) CPUTime() (time.Duration, error) {
	return ProcessCPU(s.cmd.Process.Pid)
}

// Stop ends the server (SIGTERM, then SIGKILL after 10s) and removes a temporary data dir.
func (s *Server) Stop() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.exited:
		case <-time.After(10 * time.Second):
			_ = s.cmd.Process.Kill()
			<-s.exited
		}
	}
	s.cleanup()
}

func (s *Server) cleanup() {
	if s.ownsDir {
		os.RemoveAll(s.dataDir)
	}
}
