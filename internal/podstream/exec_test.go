package podstream

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"golang.org/x/net/websocket"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/util/exec"
)

// wsExec runs an exec through the translator with client-go's WebSocket executor offering
// protocols, and returns stdout, stderr and the stream's error.
func wsExec(t *testing.T, base, query string, protocols []string, stdin io.Reader, tty bool, sizes remotecommand.TerminalSizeQueue) (string, string, error) {
	t.Helper()
	executor, err := remotecommand.NewWebSocketExecutorForProtocols(&rest.Config{Host: base}, http.MethodGet, base+"/exec?"+query, protocols...)
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	opts := remotecommand.StreamOptions{Stdin: stdin, Stdout: &stdout, Tty: tty, TerminalSizeQueue: sizes}
	if !tty {
		opts.Stderr = &stderr
	}
	err = executor.StreamWithContext(t.Context(), opts)
	return stdout.String(), stderr.String(), err
}

// TestExecOverWebSocket: client-go's WebSocket executor (v5, and v4 as older clients) reaches a
// runtime that speaks only SPDY remotecommand v4: stdin reaches the command and its end (v5's close
// signal) ends it, stdout and stderr come back apart, an exit code arrives as CodeExitError,
// terminal sizes reach the runtime.
func TestExecOverWebSocket(t *testing.T) {
	f := newFakeRuntime(t)
	base := f.translator().URL
	v5 := []string{"v5.channel.k8s.io"}
	v4 := []string{"v4.channel.k8s.io"}

	out, _, err := wsExec(t, base, "command=echo&stdin=1&stdout=1&stderr=1", v5, strings.NewReader("hello\nworld\n"), false, nil)
	if err != nil || out != "hello\nworld\n" {
		t.Errorf("v5 echo: stdout %q, err %v", out, err)
	}
	for _, protocols := range [][]string{v5, v4} {
		out, errOut, err := wsExec(t, base, "command=fail&command=3&command=boom&stdout=1&stderr=1", protocols, nil, false, nil)
		var exitErr exec.CodeExitError
		if !errors.As(err, &exitErr) || exitErr.Code != 3 {
			t.Errorf("%v exit code: err %#v, want CodeExitError 3", protocols, err)
		}
		if out != "out" || errOut != "boom" {
			t.Errorf("%v exit code: stdout %q stderr %q", protocols, out, errOut)
		}
	}
	out, _, err = wsExec(t, base, "command=size&stdout=1&tty=1", v5, nil, true, &fixedSizes{sizes: []remotecommand.TerminalSize{{Width: 80, Height: 24}}})
	if err != nil || out != "80x24" {
		t.Errorf("v5 tty resize: stdout %q, err %v", out, err)
	}
	out, _, err = wsExec(t, base, "command=true&stdout=1", v5, nil, false, nil)
	if err != nil || out != "" {
		t.Errorf("v5 success: stdout %q, err %v", out, err)
	}
}

// fixedSizes hands out its sizes, then blocks until the stream is over (as a terminal that is not
// resized again).
type fixedSizes struct {
	sizes []remotecommand.TerminalSize
}

func (q *fixedSizes) Next() *remotecommand.TerminalSize {
	if len(q.sizes) == 0 {
		return nil
	}
	s := q.sizes[0]
	q.sizes = q.sizes[1:]
	return &s
}

// rawExec speaks a channel protocol by hand (x/net/websocket, one message per frame) and returns
// what each channel received until the server closed.
func rawExec(t *testing.T, base, query, protocol string, send ...[]byte) map[byte]string {
	t.Helper()
	cfg, err := websocket.NewConfig(strings.Replace(base, "http", "ws", 1)+"/exec?"+query, base)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Protocol = []string{protocol}
	ws, err := websocket.DialConfig(cfg)
	if err != nil {
		t.Fatalf("%s: %v", protocol, err)
	}
	defer ws.Close()
	if got := ws.Config().Protocol; len(got) != 1 || got[0] != protocol {
		t.Errorf("negotiated %v, want %s", got, protocol)
	}
	for _, m := range send {
		if err := websocket.Message.Send(ws, m); err != nil {
			t.Fatal(err)
		}
	}
	got := map[byte]string{}
	for {
		var m []byte
		if err := websocket.Message.Receive(ws, &m); err != nil {
			return got
		}
		if len(m) > 0 {
			got[m[0]] += string(m[1:])
		}
	}
}

// TestExecChannelFraming: each served subprotocol frames the channels its own way: raw bytes
// after a channel byte, base64 after a channel digit; from v4 on the error channel carries a
// Status (exit codes included), before it only a failure's message. v5's close signal half-closes
// stdin.
func TestExecChannelFraming(t *testing.T) {
	f := newFakeRuntime(t)
	base := f.translator().URL
	fail := "command=fail&command=2&command=boom&stdout=1&stderr=1"

	got := rawExec(t, base, fail, "v4.channel.k8s.io")
	if got[1] != "out" || got[2] != "boom" || !strings.Contains(got[3], `"reason":"NonZeroExitCode"`) || !strings.Contains(got[3], `"message":"2"`) {
		t.Errorf("v4: %q", got)
	}
	got = rawExec(t, base, fail, "channel.k8s.io")
	if got[1] != "out" || got[2] != "boom" || got[3] != "command terminated with non-zero exit code: exit status 2" {
		t.Errorf("channel.k8s.io: %q", got)
	}
	got = rawExec(t, base, fail, "v4.base64.channel.k8s.io")
	if got['1'] != "b3V0" || got['2'] != "Ym9vbQ==" {
		t.Errorf("v4.base64: %q", got)
	}
	got = rawExec(t, base, "command=echo&stdin=1&stdout=1", "v5.channel.k8s.io", []byte("\x00ping"), []byte{255, 0})
	if got[1] != "ping" || got[3] != `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success"}` {
		t.Errorf("v5 close signal: %q", got)
	}
}

// TestExecRefusals: a WebSocket offering no served subprotocol gets a 400 Status (the handshake
// alone answers a bare 403, which reads as RBAC), and an upstream that cannot be reached is a
// Status on the error channel.
func TestExecRefusals(t *testing.T) {
	f := newFakeRuntime(t)
	base := f.translator().URL
	req, err := http.NewRequest(http.MethodGet, base+"/exec?command=echo&stdout=1", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "websocket")
	req.Header.Set("Sec-WebSocket-Version", "13")
	req.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
	req.Header.Set("Sec-WebSocket-Protocol", "v9.channel.k8s.io")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), `"reason":"BadRequest"`) || !strings.Contains(string(body), "v5.channel.k8s.io") {
		t.Errorf("unsupported subprotocol = %d %s, want a 400 Status naming the served ones", resp.StatusCode, body)
	}

	f.server.Close() // the upstream is gone
	_, _, err = wsExec(t, base, "command=echo&stdout=1", []string{"v5.channel.k8s.io"}, nil, false, nil)
	if err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("unreachable upstream: %v", err)
	}
}
