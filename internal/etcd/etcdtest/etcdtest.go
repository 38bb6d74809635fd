// Package etcdtest starts throw-away etcd members for tests: an embedded member in a temp dir, or
// Debian's /usr/bin/etcd as an external process, both on free loopback ports. Test-only helpers;
// production code must not import it.
package etcdtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/skiff-sh/skiff/internal/etcd"
)

// ExternalBinary is where hack/install-etcd.sh puts Debian's etcd.
const ExternalBinary = "/usr/bin/etcd"

// FreePort returns a loopback TCP port nobody listens on right now.
func FreePort(t testing.TB) int {
	t.Helper()
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// Options tune a test member.
type Options struct {
	// WatchProgressNotifyInterval (default 100ms) makes bookmark tests fast.
	WatchProgressNotifyInterval time.Duration
}

// StartEmbedded runs an embedded member in a temp dir until the test ends and returns it ready.
func StartEmbedded(t testing.TB, opts Options) *etcd.Member {
	t.Helper()
	m, stop, err := StartEmbeddedInDir(t.TempDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return m
}

// StartEmbeddedInDir runs an embedded member with its data under dir (for TestMain, which has no
// testing.TB) and waits until it is ready; stop shuts it down. A free port is found by listening
// and closing, so another process may take it before etcd binds it (the race detector's tests run
// beside the end-to-end clusters in CI): a start that finds its port taken is tried again on new
// ports, in a new data dir.
func StartEmbeddedInDir(dir string, opts Options) (m *etcd.Member, stop func(), err error) {
	const attempts = 5
	for i := range attempts {
		sub := "etcd"
		if i > 0 {
			sub = fmt.Sprintf("etcd-%d", i)
		}
		m, stop, err = startEmbeddedOnce(filepath.Join(dir, sub), opts)
		if err == nil || !portTaken(err) {
			return m, stop, err
		}
	}
	return nil, nil, fmt.Errorf("%d attempts: %w", attempts, err)
}

// portTaken says whether err is a listener's port already bound by someone else.
func portTaken(err error) bool {
	return errors.Is(err, syscall.EADDRINUSE) || strings.Contains(err.Error(), "address already in use")
}

func startEmbeddedOnce(dataDir string, opts Options) (m *etcd.Member, stop func(), err error) {
	if opts.WatchProgressNotifyInterval == 0 {
		opts.WatchProgressNotifyInterval = 100 * time.Millisecond
	}
	clientPort, err := freePort()
	if err != nil {
		return nil, nil, err
	}
	peerPort, err := freePort()
	if err != nil {
		return nil, nil, err
	}
	cfg := etcd.Config{
		Name:                        "test",
		DataDir:                     dataDir,
		ListenClientURLs:            []string{fmt.Sprintf("http://127.0.0.1:%d", clientPort)},
		ListenPeerURLs:              []string{fmt.Sprintf("http://127.0.0.1:%d", peerPort)},
		WatchProgressNotifyInterval: opts.WatchProgressNotifyInterval,
		ReadyTimeout:                30 * time.Second,
		LogLevel:                    "error",
	}
	m, err = etcd.Start(context.Background(), cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("start embedded etcd: %w", err)
	}
	select {
	case <-m.Ready():
		return m, m.Stop, nil
	case <-m.Failed():
		m.Stop()
		return nil, nil, fmt.Errorf("embedded etcd: %w", m.Err())
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Client returns a client of m closed when the test ends.
func Client(t testing.TB, m *etcd.Member) *clientv3.Client {
	t.Helper()
	c, err := m.Client()
	if err != nil {
		t.Fatalf("etcd client: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// StartExternal runs /usr/bin/etcd on free loopback ports in a temp dir until the test ends and
// returns its client URL. Without the binary the test is skipped, unless CI is set: there a missing
// binary is a failure, because hack/install-etcd.sh should have installed it.
func StartExternal(t testing.TB) string {
	t.Helper()
	if _, err := os.Stat(ExternalBinary); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s missing with CI set: run hack/install-etcd.sh", ExternalBinary)
		}
		t.Skipf("%s missing: run hack/install-etcd.sh to test against an external etcd", ExternalBinary)
	}
	clientURL := fmt.Sprintf("http://127.0.0.1:%d", FreePort(t))
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", FreePort(t))
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, ExternalBinary,
		"--name", "external",
		"--data-dir", filepath.Join(dir, "data"),
		"--listen-client-urls", clientURL,
		"--advertise-client-urls", clientURL,
		"--listen-peer-urls", peerURL,
		"--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", "external="+peerURL,
		"--initial-cluster-state", "new",
		"--log-level", "warn",
		"--logger", "zap",
	)
	logFile, err := os.Create(filepath.Join(dir, "etcd.log"))
	if err != nil {
		cancel()
		t.Fatalf("etcd log file: %v", err)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("start %s: %v", ExternalBinary, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cancel()
		<-exited
		_ = logFile.Close()
	})
	waitHealthy(t, clientURL, exited, filepath.Join(dir, "etcd.log"))
	return clientURL
}

func waitHealthy(t testing.TB, clientURL string, exited <-chan error, logPath string) {
	t.Helper()
	c, err := etcd.NewClient([]string{clientURL}, nil, nil)
	if err != nil {
		t.Fatalf("client for external etcd: %v", err)
	}
	defer c.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := c.Get(ctx, "health-probe")
		cancel()
		if err == nil {
			return
		}
		select {
		case werr := <-exited:
			logs, _ := os.ReadFile(logPath)
			t.Fatalf("external etcd exited: %v\n%s", werr, logs)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("external etcd at %s not healthy: %v", clientURL, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
