package e2e

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/util/exec"
)

// TestPodStreamsOverWebSockets: exec, attach and port-forward of a real pod over the WebSocket
// protocols only (client-go's v5 and v4 executors, the SPDY-over-WebSocket port-forward dialer,
// and kubectl with its WebSocket switches forced and no fallback taken). Before, the API server
// passed the WebSocket to the kubelet and on to containerd, whose handshake refused
// v5.channel.k8s.io and tunneled SPDY with a bare 403.
func TestPodStreamsOverWebSockets(t *testing.T) {
	c := newWorkerCluster(t)
	c.kubectl("run", "web", "--image=localhost/busybox:local", "--", "httpd", "-f", "-p", "8080")
	// The talker keeps its stdin open between attaches (stdinOnce false) and answers each line.
	c.stdin(`apiVersion: v1
kind: Pod
metadata: {name: talker}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: localhost/busybox:local
    stdin: true
    command: [sh, -c, 'echo attach-ready; while read line; do echo "got:$line"; done']
`, "apply", "-f", "-")
	c.kubectl("wait", "--for=condition=Ready", "pod/web", "pod/talker", "--timeout=90s")
	cfg, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	podURL := func(pod, sub string) string {
		return strings.TrimSuffix(cfg.Host, "/") + "/api/v1/namespaces/default/pods/" + pod + "/" + sub
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	run := func(query string, protocols []string, opts remotecommand.StreamOptions) error {
		executor, err := remotecommand.NewWebSocketExecutorForProtocols(cfg, http.MethodGet, podURL("web", "exec")+"?"+query, protocols...)
		if err != nil {
			t.Fatal(err)
		}
		return executor.StreamWithContext(ctx, opts)
	}
	v5, v4 := []string{"v5.channel.k8s.io"}, []string{"v4.channel.k8s.io"}
	script := url.Values{"command": {"sh", "-c", "echo out; echo err >&2; exit 3"}, "stdout": {"true"}, "stderr": {"true"}}.Encode()

	t.Run("exec exit code and stderr", func(t *testing.T) {
		for _, protocols := range [][]string{v5, v4} {
			var stdout, stderr bytes.Buffer
			err := run(script, protocols, remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr})
			if code := exitCode(err); code != 3 || stdout.String() != "out\n" || stderr.String() != "err\n" {
				t.Errorf("%v: stdout %q stderr %q err %v, want exit 3", protocols, stdout.String(), stderr.String(), err)
			}
		}
	})
	t.Run("exec stdin echo", func(t *testing.T) {
		var stdout bytes.Buffer
		query := url.Values{"command": {"cat"}, "stdin": {"true"}, "stdout": {"true"}}.Encode()
		// cat ends only when its stdin does: v5's close signal reaches it.
		err := run(query, v5, remotecommand.StreamOptions{Stdin: strings.NewReader("line one\nline two\n"), Stdout: &stdout})
		if err != nil || stdout.String() != "line one\nline two\n" {
			t.Errorf("stdin echo: stdout %q, err %v", stdout.String(), err)
		}
	})
	t.Run("exec tty", func(t *testing.T) {
		var stdout bytes.Buffer
		query := url.Values{"command": {"sh", "-c", "test -t 1 && echo is-a-tty"}, "stdout": {"true"}, "tty": {"true"}}.Encode()
		err := run(query, v5, remotecommand.StreamOptions{Stdout: &stdout, Tty: true})
		if err != nil || stdout.String() != "is-a-tty\r\n" {
			t.Errorf("tty: stdout %q, err %v", stdout.String(), err)
		}
	})
	t.Run("attach", func(t *testing.T) {
		executor, err := remotecommand.NewWebSocketExecutor(cfg, http.MethodGet, podURL("talker", "attach")+"?stdin=true&stdout=true&stderr=true")
		if err != nil {
			t.Fatal(err)
		}
		stdin, feed := io.Pipe()
		got := &watchedBuffer{want: "got:over-websockets", seen: make(chan struct{})}
		var attached sync.WaitGroup
		attachErr := make(chan error, 1)
		attached.Go(func() {
			attachErr <- executor.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: stdin, Stdout: got, Stderr: io.Discard})
			// A failed attach never reads its stdin: the line below must not wait for it.
			_ = stdin.CloseWithError(io.ErrClosedPipe)
		})
		attached.Go(func() { _, _ = io.WriteString(feed, "over-websockets\n") })
		select {
		case <-got.seen:
		case err := <-attachErr:
			t.Errorf("attach ended before the answer: %v (stdout %q)", err, got.String())
		case <-ctx.Done():
			t.Errorf("attach: no answer (stdout %q)", got.String())
		}
		// The end of stdin (v5's close signal) ends the attach.
		_ = feed.Close()
		attached.Wait()
	})
	t.Run("port-forward", func(t *testing.T) {
		u, err := url.Parse(podURL("web", "portforward"))
		if err != nil {
			t.Fatal(err)
		}
		dialer, err := portforward.NewSPDYOverWebsocketDialer(u, cfg)
		if err != nil {
			t.Fatal(err)
		}
		stop, ready := make(chan struct{}), make(chan struct{})
		fw, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{"0:8080"}, stop, ready, io.Discard, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		var forwarding sync.WaitGroup
		forwardErr := make(chan error, 1)
		forwarding.Go(func() { forwardErr <- fw.ForwardPorts() })
		defer forwarding.Wait()
		defer close(stop)
		select {
		case <-ready:
		case err := <-forwardErr:
			t.Fatalf("port-forward: %v", err)
		}
		ports, err := fw.GetPorts()
		if err != nil || len(ports) != 1 {
			t.Fatalf("ports %v: %v", ports, err)
		}
		mustContain(t, httpGet(t, ctx, fmt.Sprintf("http://127.0.0.1:%d/", ports[0].Local)), "404 Not Found")
	})
	t.Run("kubectl with websockets forced", func(t *testing.T) {
		out, err := c.kubectlWebSockets(ctx, "exec", "web", "-v=4", "--", "sh", "-c", "echo via-kubectl; exit 5")
		mustContain(t, out, "via-kubectl", "command terminated with exit code 5")
		mustNotContain(t, out, "RemoteCommand fallback", "bad handshake")
		if err == nil {
			t.Errorf("kubectl exec of exit 5 succeeded:\n%s", out)
		}
		out, err = c.kubectlWebSockets(ctx, "exec", "-i", "web", "-v=4", "--", "cat")
		if err != nil {
			t.Errorf("kubectl exec -i: %v\n%s", err, out)
		}
		mustContain(t, out, "piped-through")
		mustNotContain(t, out, "RemoteCommand fallback")
		forwardWithKubectl(t, ctx, c)
	})
}

// kubectlWebSockets runs kubectl with the WebSocket protocols forced (its defaults since v1.31,
// set so an older default cannot hide a fallback), with "piped-through\n" on stdin.
func (c *cluster) kubectlWebSockets(ctx context.Context, args ...string) (string, error) {
	cmd := c.kubectlCmd(ctx, "piped-through\n", args...)
	cmd.Env = append(cmd.Env, "KUBECTL_REMOTE_COMMAND_WEBSOCKETS=true", "KUBECTL_PORT_FORWARD_WEBSOCKETS=true")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// forwardWithKubectl runs kubectl port-forward (WebSockets forced, no fallback taken) to the web
// pod's 8080 and fetches a page through it.
func forwardWithKubectl(t *testing.T, ctx context.Context, c *cluster) {
	t.Helper()
	fwCtx, stop := context.WithCancel(ctx)
	cmd := c.kubectlCmd(fwCtx, "", "port-forward", "pod/web", "--address=127.0.0.1", ":8080", "-v=4")
	cmd.Env = append(cmd.Env, "KUBECTL_PORT_FORWARD_WEBSOCKETS=true")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stop()
		_ = cmd.Wait()
		mustNotContain(t, stderr.String(), "fallback to secondary dialer")
	}()
	forwarding := regexp.MustCompile(`Forwarding from 127\.0\.0\.1:(\d+) -> 8080`)
	lines := bufio.NewScanner(stdout)
	for lines.Scan() {
		if m := forwarding.FindStringSubmatch(lines.Text()); m != nil {
			mustContain(t, httpGet(t, ctx, "http://127.0.0.1:"+m[1]+"/"), "404 Not Found")
			return
		}
	}
	t.Fatalf("kubectl port-forward never forwarded: %s", stderr.String())
}

// httpGet fetches u (a forwarded loopback port) and returns the body.
func httpGet(t *testing.T, ctx context.Context, u string) string {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return string(body)
}

// exitCode is the exit code an exec error carries, -1 for none.
func exitCode(err error) int {
	var exitErr exec.CodeExitError
	if errors.As(err, &exitErr) {
		return exitErr.Code
	}
	return -1
}

// watchedBuffer collects output and closes seen once it contains want.
type watchedBuffer struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	want string
	seen chan struct{}
	once sync.Once
}

func (w *watchedBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := w.buf.Write(p)
	if strings.Contains(w.buf.String(), w.want) {
		w.once.Do(func() { close(w.seen) })
	}
	return n, err
}

func (w *watchedBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}
