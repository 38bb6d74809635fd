package bench

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
)

// Upstream is an upstream kube-apiserver on its own etcd (Debian's /usr/bin/etcd), on free loopback
// ports with a temporary directory, for side-by-side figures.
type Upstream struct {
	etcd, apiserver *exec.Cmd
	dir             string
	// Config reaches the API server as a system:masters user (static token).
	Config *rest.Config
}

// UpstreamOptions say how to start it.
type UpstreamOptions struct {
	// Dir holds kube-apiserver (e.g. /root/.cache/skiff-upstream/bin).
	Dir string
	// Etcd is the etcd binary (default /usr/bin/etcd).
	Etcd string
	Log  io.Writer
}

// StartUpstream starts etcd and kube-apiserver and waits for /readyz.
func StartUpstream(ctx context.Context, opts UpstreamOptions) (*Upstream, error) {
	if opts.Etcd == "" {
		opts.Etcd = "/usr/bin/etcd"
	}
	out := opts.Log
	if out == nil {
		out = io.Discard
	}
	dir, err := os.MkdirTemp("", "skiff-bench-upstream-")
	if err != nil {
		return nil, err
	}
	u := &Upstream{dir: dir}
	ports, err := FreePorts(3)
	if err != nil {
		u.Stop()
		return nil, err
	}
	clientURL := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	peerURL := "http://127.0.0.1:" + strconv.Itoa(ports[1])
	u.etcd = exec.Command(opts.Etcd, "--name", "bench", "--data-dir", filepath.Join(dir, "etcd"),
		"--listen-client-urls", clientURL, "--advertise-client-urls", clientURL,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", "bench="+peerURL, "--quota-backend-bytes", strconv.Itoa(8<<30))
	u.etcd.Stdout, u.etcd.Stderr = out, out
	if err := u.etcd.Start(); err != nil {
		u.Stop()
		return nil, fmt.Errorf("start etcd: %w", err)
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		u.Stop()
		return nil, err
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		u.Stop()
		return nil, err
	}
	const token = "listbench-admin-token"
	files := map[string][]byte{
		"sa.key":     pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}),
		"sa.pub":     pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}),
		"tokens.csv": []byte(token + ",admin,admin,system:masters\n"),
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			u.Stop()
			return nil, err
		}
	}
	u.apiserver = exec.Command(filepath.Join(opts.Dir, "kube-apiserver"),
		"--etcd-servers", clientURL, "--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1",
		"--secure-port", strconv.Itoa(ports[2]), "--cert-dir", filepath.Join(dir, "certs"),
		"--service-account-key-file", filepath.Join(dir, "sa.pub"),
		"--service-account-signing-key-file", filepath.Join(dir, "sa.key"),
		"--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
		"--token-auth-file", filepath.Join(dir, "tokens.csv"),
		"--service-cluster-ip-range", "10.96.0.0/16", "--authorization-mode", "RBAC")
	u.apiserver.Stdout, u.apiserver.Stderr = out, out
	if err := u.apiserver.Start(); err != nil {
		u.Stop()
		return nil, fmt.Errorf("start kube-apiserver: %w", err)
	}
	u.Config = &rest.Config{
		Host:            "https://127.0.0.1:" + strconv.Itoa(ports[2]),
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{Insecure: true},
		QPS:             1e6, Burst: 1e6, Timeout: 60 * time.Second,
	}
	if err := WaitReadyz(ctx, u.Config, 90*time.Second, 250*time.Millisecond, nil); err != nil {
		u.Stop()
		return nil, err
	}
	return u, nil
}

// APIServerPID and EtcdPID are the processes.
func (u *Upstream) APIServerPID() int { return u.apiserver.Process.Pid }
func (u *Upstream) EtcdPID() int      { return u.etcd.Process.Pid }

// Stop ends both processes and removes the directory.
func (u *Upstream) Stop() {
	for _, cmd := range []*exec.Cmd{u.apiserver, u.etcd} {
		if cmd == nil || cmd.Process == nil {
			continue
		}
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}
	os.RemoveAll(u.dir)
}
