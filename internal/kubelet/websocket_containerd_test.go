package kubelet_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/util/exec"
)

// checkKubeletWebSockets talks to the kubelet's own streaming endpoints as a WebSocket-only client
// would (client-go's v5 executor and its SPDY-over-WebSocket port-forward dialer), in front of
// containerd's streaming server, which knows neither v5.channel.k8s.io nor tunneled SPDY and
// refused both with a bare 403 while the kubelet proxied them as they came.
func checkKubeletWebSockets(t *testing.T, ctx context.Context, cfg *rest.Config, base string) {
	t.Helper()
	run := func(query string, stdin io.Reader) (string, string, error) {
		executor, err := remotecommand.NewWebSocketExecutor(cfg, http.MethodGet, base+"/exec/default/web/httpd?"+query)
		if err != nil {
			t.Fatal(err)
		}
		var stdout, stderr strings.Builder
		opts := remotecommand.StreamOptions{Stdin: stdin, Stdout: &stdout, Stderr: &stderr}
		err = executor.StreamWithContext(ctx, opts)
		return stdout.String(), stderr.String(), err
	}
	out, _, err := run("command=cat&command=/etc/podinfo/name&output=1&error=1", nil)
	if err != nil || out != "web" {
		t.Errorf("v5 exec through the kubelet: stdout %q, err %v", out, err)
	}
	// stdin reaches the command and its end (v5's close signal) ends cat.
	out, _, err = run("command=cat&input=1&output=1&error=1", strings.NewReader("typed\n"))
	if err != nil || out != "typed\n" {
		t.Errorf("v5 exec with stdin: stdout %q, err %v", out, err)
	}
	out, errOut, err := run("command=sh&command=-c&command=echo+o%3B+echo+e+>%262%3B+exit+4&output=1&error=1", nil)
	var exitErr exec.CodeExitError
	if !errors.As(err, &exitErr) || exitErr.Code != 4 || out != "o\n" || errOut != "e\n" {
		t.Errorf("v5 exec exit code: stdout %q stderr %q err %#v, want exit 4", out, errOut, err)
	}

	// Port-forward to the pod's httpd (8080) through the kubelet, tunneled SPDY.
	u, err := url.Parse(base + "/portForward/default/web")
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
		t.Fatalf("port-forward through the kubelet: %v", err)
	}
	ports, err := fw.GetPorts()
	if err != nil || len(ports) != 1 {
		t.Fatalf("forwarded ports %v: %v", ports, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/index.html", ports[0].Local), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET through the forwarded port: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET through the forwarded port = %d %q", resp.StatusCode, body)
	}
}
