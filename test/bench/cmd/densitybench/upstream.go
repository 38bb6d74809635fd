package main

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
	"k8s.io/client-go/tools/clientcmd"

	"github.com/skiff-sh/skiff/test/bench"
)

// upstream is Kubernetes' own control plane started for comparison: Debian's etcd,
// kube-apiserver, kube-controller-manager and kube-scheduler (built from v1.33 sources), each its
// own process, on loopback ports, with a static admin token and AlwaysAllow authorization.
type upstream struct {
	dir        string
	procs      []*exec.Cmd
	names      []string
	kubeconfig string
}

const upstreamToken = "densitybench-admin-token"

func startUpstream(ctx context.Context, binDir, etcdBinary string, log io.Writer) (*upstream, error) {
	dir, err := os.MkdirTemp("", "densitybench-upstream-")
	if err != nil {
		return nil, err
	}
	u := &upstream{dir: dir}
	ok := false
	defer func() {
		if !ok {
			u.stop()
		}
	}()
	ports, err := bench.FreePorts(5)
	if err != nil {
		return nil, err
	}
	etcdPort, peerPort, apiPort, kcmPort, schedPort := ports[0], ports[1], ports[2], ports[3], ports[4]
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	saKey := filepath.Join(dir, "sa.key")
	if err := os.WriteFile(saKey, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600); err != nil {
		return nil, err
	}
	tokens := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte(upstreamToken+",admin,admin-uid,system:masters\n"), 0o600); err != nil {
		return nil, err
	}
	apiURL := "https://127.0.0.1:" + strconv.Itoa(apiPort)
	u.kubeconfig = filepath.Join(dir, "admin.kubeconfig")
	kubeconfig := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: up, cluster: {server: %q, insecure-skip-tls-verify: true}}]
users: [{name: admin, user: {token: %q}}]
contexts: [{name: up, context: {cluster: up, user: admin}}]
current-context: up
`, apiURL, upstreamToken)
	if err := os.WriteFile(u.kubeconfig, []byte(kubeconfig), 0o600); err != nil {
		return nil, err
	}
	peer := "http://127.0.0.1:" + strconv.Itoa(peerPort)
	client := "http://127.0.0.1:" + strconv.Itoa(etcdPort)
	if err := u.start(log, "etcd", etcdBinary, "--name", "default", "--data-dir", filepath.Join(dir, "etcd"),
		"--listen-client-urls", client, "--advertise-client-urls", client, "--listen-peer-urls", peer,
		"--initial-advertise-peer-urls", peer, "--initial-cluster", "default="+peer, "--quota-backend-bytes", strconv.Itoa(8<<30)); err != nil {
		return nil, err
	}
	if err := u.start(log, "kube-apiserver", filepath.Join(binDir, "kube-apiserver"), "--etcd-servers", client,
		"--secure-port", strconv.Itoa(apiPort), "--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1",
		"--cert-dir", filepath.Join(dir, "certs"), "--token-auth-file", tokens, "--authorization-mode", "AlwaysAllow",
		"--service-account-key-file", saKey, "--service-account-signing-key-file", saKey,
		"--service-account-issuer", "https://kubernetes.default.svc", "--service-cluster-ip-range", "10.96.0.0/16",
		"--endpoint-reconciler-type", "none"); err != nil {
		return nil, err
	}
	cfg, err := restConfig(u.kubeconfig)
	if err != nil {
		return nil, err
	}
	if err := bench.WaitReadyz(ctx, cfg, 2*time.Minute, 500*time.Millisecond, nil); err != nil {
		return nil, fmt.Errorf("kube-apiserver: %w", err)
	}
	if err := u.start(log, "kube-controller-manager", filepath.Join(binDir, "kube-controller-manager"), "--kubeconfig", u.kubeconfig,
		"--authentication-kubeconfig", u.kubeconfig, "--authorization-kubeconfig", u.kubeconfig,
		"--leader-elect=false", "--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(kcmPort),
		"--service-account-private-key-file", saKey, "--use-service-account-credentials=false",
		"--cluster-cidr", "10.0.0.0/10", "--allocate-node-cidrs=true"); err != nil {
		return nil, err
	}
	if err := u.start(log, "kube-scheduler", filepath.Join(binDir, "kube-scheduler"), "--kubeconfig", u.kubeconfig,
		"--authentication-kubeconfig", u.kubeconfig, "--authorization-kubeconfig", u.kubeconfig,
		"--leader-elect=false", "--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(schedPort)); err != nil {
		return nil, err
	}
	ok = true
	return u, nil
}

func (u *upstream) start(log io.Writer, name, binary string, args ...string) error {
	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", name, err)
	}
	u.procs = append(u.procs, cmd)
	u.names = append(u.names, name)
	return nil
}

func (u *upstream) processes() []proc {
	out := make([]proc, 0, len(u.procs))
	for i, cmd := range u.procs {
		out = append(out, proc{name: u.names[i], pid: cmd.Process.Pid, controlPlane: true})
	}
	return out
}

// stop ends the processes in reverse order and removes the directory.
func (u *upstream) stop() {
	for i := len(u.procs) - 1; i >= 0; i-- {
		cmd := u.procs[i]
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

func restConfig(kubeconfig string) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst, cfg.Timeout = 1e6, 1e6, 60*time.Second
	return cfg, nil
}
