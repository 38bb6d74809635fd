package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"crypto/x509"

	"github.com/skiff-sh/skiff/test/bench"
)

// environment is what the benchmark runs against: skiff with the backend behind an Ingress, and
// nginx in front of the same pods.
type environment struct {
	server       *bench.Server
	kubeconfig   string
	skiff        target
	nginx        *target
	nginxCmd     *exec.Cmd
	nginxVersion string
	roots        *x509.CertPool
}

// nginx's settings: as many workers as the machine has cores (nginx's "auto" here), and kept-alive
// upstream connections, as ingress-nginx configures it.
const (
	nginxWorkers   = 2
	nginxKeepalive = 320
)

const echoImage = "localhost/ingressbench-echo:1"

// manifest is the backend, its Service and the Ingress with TLS.
func manifest(replicas int) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: echo}
spec:
  replicas: %d
  selector: {matchLabels: {app: echo}}
  template:
    metadata: {labels: {app: echo}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: echo
        image: %s
        readinessProbe: {tcpSocket: {port: 8080}, periodSeconds: 1}
---
apiVersion: v1
kind: Service
metadata: {name: echo}
spec:
  selector: {app: echo}
  ports: [{port: 80, targetPort: 8080}]
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: echo}
spec:
  ingressClassName: skiff
  tls: [{hosts: [%s], secretName: echo-tls}]
  rules:
  - host: %s
    http:
      paths: [{path: /, pathType: Prefix, backend: {service: {name: echo, port: {number: 80}}}}]
`, replicas, echoImage, host, host)
}

func startEnvironment(ctx context.Context, o options, work string, stderr io.Writer) (*environment, error) {
	env := &environment{}
	certFile, keyFile, roots, err := selfSigned(work)
	if err != nil {
		return nil, err
	}
	env.roots = roots
	archive, err := buildEchoImage(ctx, o.binary, work)
	if err != nil {
		return nil, err
	}
	skiffHTTP, err := freeAddr()
	if err != nil {
		return nil, err
	}
	skiffTLS, err := freeAddr()
	if err != nil {
		return nil, err
	}
	logFile, err := os.Create(filepath.Join(work, "skiff.log"))
	if err != nil {
		return nil, err
	}
	dataDir := filepath.Join(work, "skiff")
	fmt.Fprintln(stderr, "starting", o.binary, "with every role; its log:", logFile.Name())
	srv, err := bench.StartServer(ctx, bench.ServerOptions{Binary: o.binary, DataDir: dataDir, Log: logFile, ExtraArgs: []string{
		"--roles", "etcd,controlplane,worker", "--ingress-http-port", port(skiffHTTP), "--ingress-https-port", port(skiffTLS),
	}})
	if err != nil {
		return nil, err
	}
	env.server, env.kubeconfig = srv, srv.Kubeconfig
	env.skiff = target{name: "skiff", httpAddr: skiffHTTP, tlsAddr: skiffTLS, cpu: srv.CPUTime}
	if err := env.deploy(ctx, o, archive, dataDir, certFile, keyFile); err != nil {
		return env, err
	}
	if err := waitAnswers(ctx, env.skiff, roots, 2*time.Minute); err != nil {
		return env, err
	}
	// skiff's idle CPU (API server, controllers, kubelet) over a few seconds, to subtract.
	before, _ := srv.CPUTime()
	time.Sleep(5 * time.Second)
	after, _ := srv.CPUTime()
	env.skiff.idlePerSecond = (after - before) / 5
	if o.nginx != "" {
		if err := env.startNginx(ctx, o.nginx, work, certFile, keyFile); err != nil {
			return env, err
		}
		if err := waitAnswers(ctx, *env.nginx, roots, 30*time.Second); err != nil {
			return env, err
		}
	}
	return env, nil
}

// buildEchoImage builds ./echo statically into a one-layer image archive.
func buildEchoImage(ctx context.Context, binary, work string) (string, error) {
	root := filepath.Join(work, "echo-root")
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", err
	}
	src, err := exec.CommandContext(ctx, "go", "list", "-f", "{{.Dir}}", "github.com/skiff-sh/skiff/test/bench/cmd/ingressbench/echo").Output()
	if err != nil {
		return "", fmt.Errorf("find the echo backend's source (run from the skiff module): %w", err)
	}
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", filepath.Join(root, "echo"), ".")
	build.Dir = strings.TrimSpace(string(src))
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build the echo backend: %w\n%s", err, out)
	}
	out, err := exec.CommandContext(ctx, binary, "images", "build-dir", "--root", root, "--tag", echoImage, "--out", work, "--entrypoint", "/echo").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("build the echo image: %w\n%s", err, out)
	}
	return strings.TrimSpace(string(out)), nil
}

// deploy imports the backend's image and applies the manifest once the node is Ready.
func (env *environment) deploy(ctx context.Context, o options, archive, dataDir, certFile, keyFile string) error {
	if err := poll(ctx, 2*time.Minute, func() error {
		out, err := kubectl(ctx, env.kubeconfig, "", "get", "nodes", "-o", `jsonpath={.items[*].status.conditions[?(@.type=="Ready")].status}`)
		if err == nil && strings.TrimSpace(out) != "True" {
			err = fmt.Errorf("node not Ready: %q", out)
		}
		return err
	}); err != nil {
		return err
	}
	if out, err := exec.CommandContext(ctx, o.binary, "images", "import", "--data-dir", dataDir, archive).CombinedOutput(); err != nil {
		return fmt.Errorf("import the echo image: %w\n%s", err, out)
	}
	if _, err := kubectl(ctx, env.kubeconfig, "", "create", "secret", "tls", "echo-tls", "--cert", certFile, "--key", keyFile); err != nil {
		return err
	}
	if _, err := kubectl(ctx, env.kubeconfig, manifest(o.replicas), "apply", "-f", "-"); err != nil {
		return err
	}
	_, err := kubectl(ctx, env.kubeconfig, "", "rollout", "status", "deployment/echo", "--timeout=120s")
	return err
}

// startNginx runs nginx with the backend's pods as its upstream.
func (env *environment) startNginx(ctx context.Context, binary, work, certFile, keyFile string) error {
	ips, err := kubectl(ctx, env.kubeconfig, "", "get", "pods", "-l", "app=echo", "-o", "jsonpath={.items[*].status.podIP}")
	if err != nil {
		return err
	}
	httpAddr, err := freeAddr()
	if err != nil {
		return err
	}
	tlsAddr, err := freeAddr()
	if err != nil {
		return err
	}
	prefix := filepath.Join(work, "nginx")
	for _, dir := range []string{"logs", "tmp"} {
		if err := os.MkdirAll(filepath.Join(prefix, dir), 0o755); err != nil {
			return err
		}
	}
	conf := filepath.Join(prefix, "nginx.conf")
	if err := os.WriteFile(conf, []byte(nginxConfig(strings.Fields(ips), httpAddr, tlsAddr, certFile, keyFile)), 0o644); err != nil {
		return err
	}
	if out, err := exec.CommandContext(ctx, binary, "-v").CombinedOutput(); err == nil {
		env.nginxVersion = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(string(out)), "nginx version: "))
	}
	cmd := exec.Command(binary, "-p", prefix, "-c", conf, "-g", "daemon off;")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	log, err := os.Create(filepath.Join(prefix, "logs", "stderr.log"))
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start nginx: %w", err)
	}
	env.nginxCmd = cmd
	master := cmd.Process.Pid
	env.nginx = &target{name: "nginx", httpAddr: httpAddr, tlsAddr: tlsAddr, cpu: func() (time.Duration, error) { return groupCPU(master) }}
	return nil
}

// nginxConfig is a reverse proxy of host to the pods, on the two addresses.
func nginxConfig(pods []string, httpAddr, tlsAddr, certFile, keyFile string) string {
	var upstream strings.Builder
	for _, ip := range pods {
		fmt.Fprintf(&upstream, "    server %s;\n", net.JoinHostPort(ip, "8080"))
	}
	return fmt.Sprintf(`worker_processes %d;
error_log logs/error.log warn;
pid logs/nginx.pid;
events { worker_connections 4096; }
http {
  access_log off;
  keepalive_requests 1000000;
  client_body_temp_path tmp/body;
  proxy_temp_path tmp/proxy;
  fastcgi_temp_path tmp/fastcgi;
  uwsgi_temp_path tmp/uwsgi;
  scgi_temp_path tmp/scgi;
  upstream echo {
%s    keepalive %d;
  }
  server {
    listen %s reuseport;
    listen %s ssl http2 reuseport;
    server_name %s;
    ssl_certificate %s;
    ssl_certificate_key %s;
    location / {
      proxy_pass http://echo;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $host;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
    }
  }
}
`, nginxWorkers, upstream.String(), nginxKeepalive, httpAddr, tlsAddr, host, certFile, keyFile)
}

// groupCPU is the CPU time of a process and its children (nginx's master and workers).
func groupCPU(pid int) (time.Duration, error) {
	total, err := bench.ProcessCPU(pid)
	if err != nil {
		return 0, err
	}
	children, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	for _, c := range strings.Fields(string(children)) {
		if n, err := strconv.Atoi(c); err == nil {
			if cpu, err := bench.ProcessCPU(n); err == nil {
				total += cpu
			}
		}
	}
	return total, nil
}

// stop ends nginx, removes the backend's pods, and stops skiff.
func (env *environment) stop(stderr io.Writer) {
	if env.nginxCmd != nil {
		_ = syscall.Kill(-env.nginxCmd.Process.Pid, syscall.SIGQUIT)
		done := make(chan struct{})
		go func() { _ = env.nginxCmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-env.nginxCmd.Process.Pid, syscall.SIGKILL)
		}
	}
	if env.server == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// The pods go before skiff stops, so no container outlives the benchmark.
	if _, err := kubectl(ctx, env.kubeconfig, "", "delete", "deployment", "echo", "--wait=true", "--timeout=90s"); err != nil {
		fmt.Fprintln(stderr, "ingressbench:", err)
	}
	_, _ = kubectl(ctx, env.kubeconfig, "", "wait", "--for=delete", "pod", "-l", "app=echo", "--timeout=90s")
	env.server.Stop()
}

func port(addr string) string {
	_, p, _ := net.SplitHostPort(addr)
	return p
}

// poll calls f every second until it succeeds or within passes.
func poll(ctx context.Context, within time.Duration, f func() error) error {
	deadline := time.Now().Add(within)
	for {
		err := f()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}
