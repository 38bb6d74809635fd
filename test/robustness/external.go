package robustness

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/utils/clock"
)

// ExternalEtcd is an etcd the control planes of an external-etcd scenario share (Debian's
// etcd-server, /usr/bin/etcd): one member on loopback, plain HTTP, its own data dir. The faults
// of FaultPauseEtcd and FaultKillEtcd act on it; compaction goes to it.
type ExternalEtcd struct {
	Bin, DataDir string
	Client, Peer int
	proc         process
}

// URL is the client URL the control planes are given (--etcd-servers).
func (e *ExternalEtcd) URL() string {
	return "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(e.Client))
}

// Start starts the member (its output in etcd.log of the data dir); Kill and Stop join the
// goroutine that waits for it.
func (e *ExternalEtcd) Start() error {
	peer := "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(e.Peer))
	cmd := exec.Command(e.Bin, "--name", "ext", "--data-dir", filepath.Join(e.DataDir, "data"),
		"--listen-client-urls", e.URL(), "--advertise-client-urls", e.URL(),
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer, "--initial-cluster", "ext="+peer,
		"--quota-backend-bytes", strconv.Itoa(1<<30), "--log-level", "warn")
	e.proc.name = "external etcd"
	return e.proc.start(cmd, filepath.Join(e.DataDir, "etcd.log"))
}

// WaitHealthy waits until the member answers /health with 200.
func (e *ExternalEtcd) WaitHealthy(ctx context.Context, clk clock.WithTicker) error {
	client := &http.Client{Timeout: 2 * time.Second}
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.URL()+"/health", nil)
		if err != nil {
			return err
		}
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("external etcd not healthy: %w", ctx.Err())
		case <-clk.After(200 * time.Millisecond):
		}
	}
}

// Running says whether the process is up.
func (e *ExternalEtcd) Running() bool { return e.proc.running() }

// Kill is kill -9, waiting for the process to end.
func (e *ExternalEtcd) Kill() { e.proc.kill() }

// Stop interrupts the member, killing it after ten seconds.
func (e *ExternalEtcd) Stop() { e.proc.stop() }

// Pause and Resume are SIGSTOP and SIGCONT.
func (e *ExternalEtcd) Pause() error  { return e.proc.signal(syscall.SIGSTOP) }
func (e *ExternalEtcd) Resume() error { return e.proc.signal(syscall.SIGCONT) }

// Etcd is a client of the member.
func (e *ExternalEtcd) Etcd() (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{Endpoints: []string{e.URL()}, DialTimeout: 5 * time.Second})
}
