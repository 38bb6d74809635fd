package main

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
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

	"github.com/skiff-sh/skiff/test/bench"
)

// controlPlane is what a scenario runs against: skiff's server, or upstream's etcd, kube-apiserver
// and kube-scheduler.
type controlPlane interface {
	RESTConfig() (*rest.Config, error)
	// CPUTime is the CPU time all of the control plane's processes used so far.
	CPUTime() (time.Duration, error)
	// BeforeRelease runs once the scheduler's Lease is held, before the pods are created (upstream
	// starts its scheduler here: a kube-scheduler that loses its Lease exits).
	BeforeRelease(ctx context.Context) error
	// AfterScenario runs once a scenario's pods are all bound.
	AfterScenario()
	Stop()
}

// upstream is Kubernetes' control plane: Debian's etcd, kube-apiserver and kube-scheduler built
// from source, on loopback ports, in a temporary directory. No controller manager runs (like
// skiff's server with node lifecycle and IPAM off, nothing else touches the fake nodes), so the
// ServiceAccount admission plugin is off (no token controller makes the default ServiceAccount),
// and so is TaintNodesByCondition (no node lifecycle controller lifts the not-ready taint it adds).
type upstream struct {
	dir, binDir string
	log         io.Writer
	etcd, api   *process
	scheduler   *process
	schedCPU    time.Duration // CPU of kube-scheduler processes already stopped
	apiURL      string
	token       string
	kubeconfig  string
}

type process struct {
	cmd    *exec.Cmd
	exited chan error
}

func startProcess(log io.Writer, name string, args ...string) (*process, error) {
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &process{cmd: cmd, exited: make(chan error, 1)}
	go func() { p.exited <- cmd.Wait() }()
	return p, nil
}

func (p *process) stop() {
	if p == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

func (p *process) cpu() time.Duration {
	if p == nil {
		return 0
	}
	if st := p.cmd.ProcessState; st != nil {
		return st.UserTime() + st.SystemTime()
	}
	cpu, _ := bench.ProcessCPU(p.cmd.Process.Pid)
	return cpu
}

func startUpstream(ctx context.Context, binDir, etcdBin string, log io.Writer) (*upstream, error) {
	dir, err := os.MkdirTemp("", "schedbench-upstream-")
	if err != nil {
		return nil, err
	}
	u := &upstream{dir: dir, binDir: binDir, log: log, token: "schedbench-admin-token"}
	if u.log == nil {
		u.log = io.Discard
	}
	ok := false
	defer func() {
		if !ok {
			u.Stop()
		}
	}()
	ports, err := bench.FreePorts(3)
	if err != nil {
		return nil, err
	}
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	if u.etcd, err = startProcess(u.log, etcdBin, "--name", "schedbench", "--data-dir", filepath.Join(dir, "etcd"),
		"--listen-client-urls", etcdURL, "--advertise-client-urls", etcdURL,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", "schedbench="+peerURL, "--quota-backend-bytes", strconv.Itoa(8<<30)); err != nil {
		return nil, err
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	keyFile := filepath.Join(dir, "sa.key")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600); err != nil {
		return nil, err
	}
	tokens := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte(u.token+",admin,admin,system:masters\n"), 0o600); err != nil {
		return nil, err
	}
	u.apiURL = fmt.Sprintf("https://127.0.0.1:%d", ports[2])
	if u.api, err = startProcess(u.log, filepath.Join(binDir, "kube-apiserver"),
		"--etcd-servers", etcdURL, "--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1",
		"--secure-port", strconv.Itoa(ports[2]), "--cert-dir", filepath.Join(dir, "certs"),
		"--token-auth-file", tokens, "--authorization-mode", "RBAC",
		"--service-account-issuer", "https://kubernetes.default.svc", "--service-account-key-file", keyFile,
		"--service-account-signing-key-file", keyFile, "--service-cluster-ip-range", "10.250.0.0/24",
		"--disable-admission-plugins", "ServiceAccount,TaintNodesByCondition", "--endpoint-reconciler-type", "none"); err != nil {
		return nil, err
	}
	u.kubeconfig = filepath.Join(dir, "kubeconfig")
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q, insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: %q}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`, u.apiURL, u.token)
	if err := os.WriteFile(u.kubeconfig, []byte(kc), 0o600); err != nil {
		return nil, err
	}
	if err := u.waitReady(ctx); err != nil {
		return nil, err
	}
	ok = true
	return u, nil
}

func (u *upstream) waitReady(ctx context.Context) error {
	cfg, err := u.RESTConfig()
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(2 * time.Minute)
	var last error
	for time.Now().Before(deadline) {
		select {
		case err := <-u.api.exited:
			return fmt.Errorf("kube-apiserver exited: %v", err)
		case err := <-u.etcd.exited:
			return fmt.Errorf("etcd exited: %v", err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(300 * time.Millisecond):
		}
		body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err == nil && string(body) == "ok" {
			return nil
		}
		last = fmt.Errorf("readyz: %q %v", body, err)
	}
	return fmt.Errorf("kube-apiserver not ready within 2m: %w", last)
}

// RESTConfig is the admin's, unthrottled.
func (u *upstream) RESTConfig() (*rest.Config, error) {
	return &rest.Config{Host: u.apiURL, BearerToken: u.token, TLSClientConfig: rest.TLSClientConfig{Insecure: true},
		QPS: 1e6, Burst: 1e6, Timeout: 60 * time.Second}, nil
}

// CPUTime sums etcd, kube-apiserver and every kube-scheduler run so far.
func (u *upstream) CPUTime() (time.Duration, error) {
	return u.etcd.cpu() + u.api.cpu() + u.schedCPU + u.scheduler.cpu(), nil
}

// BeforeRelease starts a kube-scheduler with scheduler_perf's client limits (QPS and burst
// 5000); it syncs its informers and waits for the held Lease.
func (u *upstream) BeforeRelease(context.Context) error {
	cfgFile := filepath.Join(u.dir, "scheduler.yaml")
	cfg := fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection: {kubeconfig: %q, qps: 5000, burst: 5000}
leaderElection: {leaderElect: true}
`, u.kubeconfig)
	if err := os.WriteFile(cfgFile, []byte(cfg), 0o600); err != nil {
		return err
	}
	ports, err := bench.FreePorts(1)
	if err != nil {
		return err
	}
	u.scheduler, err = startProcess(u.log, filepath.Join(u.binDir, "kube-scheduler"), "--config", cfgFile,
		"--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(ports[0]),
		"--authentication-kubeconfig", u.kubeconfig, "--authorization-kubeconfig", u.kubeconfig, "--v=2")
	return err
}

// AfterScenario stops the scenario's kube-scheduler (the next one starts behind a held Lease).
func (u *upstream) AfterScenario() {
	if u.scheduler == nil {
		return
	}
	u.scheduler.stop()
	u.schedCPU += u.scheduler.cpu()
	u.scheduler = nil
}

// Stop ends every process and removes the directory.
func (u *upstream) Stop() {
	u.AfterScenario()
	u.api.stop()
	u.etcd.stop()
	if u.dir != "" {
		os.RemoveAll(u.dir)
	}
}

// server is what bench.Server offers.
type server interface {
	RESTConfig() (*rest.Config, error)
	CPUTime() (time.Duration, error)
	Stop()
}

// skiffServer adapts bench.Server to controlPlane.
type skiffServer struct{ server }

func (skiffServer) BeforeRelease(context.Context) error { return nil }
func (skiffServer) AfterScenario()                      {}

var errNoUpstream = errors.New("--upstream: kube-apiserver and kube-scheduler not found there")

func checkUpstream(dir string) error {
	for _, b := range []string{"kube-apiserver", "kube-scheduler"} {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			return fmt.Errorf("%w: %v", errNoUpstream, err)
		}
	}
	return nil
}
