package kubelet

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	clientremotecommand "k8s.io/client-go/tools/remotecommand"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/skiff-sh/skiff/internal/podstream"
)

// attachRun is an attach a test client has under way against the kubelet's API over SPDY.
type attachRun struct {
	stdout, stderr bytes.Buffer
	done           chan error
}

// startAttach attaches to the pod's app container with client-go's SPDY executor, as kubectl
// does, and returns once the kubelet has received the request and noted where the log stands
// (it then asks for the container's process).
func (h *harness) startAttach(pod, query string, stdin io.Reader, tty bool) *attachRun {
	h.t.Helper()
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.kubelet.Handler().ServeHTTP(w, authenticated(r))
	}))
	h.t.Cleanup(server.Close)
	u, err := url.Parse(server.URL + "/attach/default/" + pod + "/app?" + query)
	if err != nil {
		h.t.Fatal(err)
	}
	executor, err := podstream.NewExecutor(podstream.Upstream{URL: u})
	if err != nil {
		h.t.Fatal(err)
	}
	run := &attachRun{done: make(chan error, 1)}
	so := clientremotecommand.StreamOptions{Stdin: stdin, Stdout: &run.stdout, Tty: tty}
	if strings.Contains(query, "error=1") && !tty {
		so.Stderr = &run.stderr
	}
	asked := len(h.runtime.CallsTo("ContainerPID"))
	go func() { run.done <- executor.StreamWithContext(context.Background(), so) }()
	h.eventually("the kubelet received the attach", func() bool { return len(h.runtime.CallsTo("ContainerPID")) > asked })
	return run
}

// wait steps the kubelet's clock (the log is followed on it) until the attach ends.
func (h *harness) waitAttach(run *attachRun) error {
	h.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case err := <-run.done:
			return err
		case <-time.After(5 * time.Millisecond):
			if time.Now().After(deadline) {
				h.t.Fatal("the attach did not end")
			}
			h.clock.Step(logFollowPoll)
		}
	}
}

// appendLog adds CRI log lines ("stdout F text") to the container's log.
func (h *harness) appendLog(path string, lines ...string) {
	h.t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		h.t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		h.t.Fatal(err)
	}
	defer f.Close()
	for _, l := range lines {
		if _, err := io.WriteString(f, h.clock.Now().Format(time.RFC3339Nano)+" "+l+"\n"); err != nil {
			h.t.Fatal(err)
		}
	}
}

// runningApp starts pod with its app container and returns the container's ID and log path.
func (h *harness) runningApp(pod string) (string, string) {
	h.t.Helper()
	p := h.create(makePod(pod).obj())
	h.waitPod("default", pod, "running", podRunning)
	id := h.runtime.RunningContainer(string(p.UID), "app")
	status, err := h.runtime.ContainerStatus(h.t.Context(), id)
	if err != nil {
		h.t.Fatal(err)
	}
	return id, status.LogPath
}

// TestAttachStreamsTheLogFromTheRequest: an attach streams what the container writes from the
// moment the kubelet received it until the container exits, each line to the stream it was
// written to, and then ends with success. What was written before the request is not sent.
// Handed to the runtime's attach, output written before the runtime registered the attach was
// lost (kubectl run -i printed nothing, issue 32 item 7).
func TestAttachStreamsTheLogFromTheRequest(t *testing.T) {
	h := newHarness(t, nil)
	id, logPath := h.runningApp("box")
	h.appendLog(logPath, "stdout F before the attach")
	h.clock.Step(attachReplayWindow + time.Second) // a container with a history
	run := h.startAttach("box", "output=1&error=1", nil, false)
	h.appendLog(logPath, "stdout F hello", "stderr F oops", "stdout P part", "stdout F ial")
	if err := h.runtime.Exit(id, 0); err != nil {
		t.Fatal(err)
	}
	if err := h.waitAttach(run); err != nil {
		t.Fatalf("attach ended with %v, want success", err)
	}
	if got, want := run.stdout.String(), "hello\npartial\n"; got != want {
		t.Errorf("stdout = %q, want %q", got, want)
	}
	if got, want := run.stderr.String(), "oops\n"; got != want {
		t.Errorf("stderr = %q, want %q", got, want)
	}
	if n := len(h.runtime.AttachRequests()); n != 0 {
		t.Errorf("the runtime was asked for %d attaches without stdin or a terminal, want none", n)
	}
}

// TestAttachToAJustStartedContainerGetsItsFirstOutput: a container that started moments before
// the attach (kubectl run -i attaches once it sees the pod Running, after the container's first
// output) is followed from its start, so "hello" written before the request still arrives.
func TestAttachToAJustStartedContainerGetsItsFirstOutput(t *testing.T) {
	h := newHarness(t, nil)
	id, logPath := h.runningApp("box")
	h.appendLog(logPath, "stdout F hello")
	run := h.startAttach("box", "input=1&output=1&error=1", strings.NewReader(""), false)
	if err := h.runtime.Exit(id, 0); err != nil {
		t.Fatal(err)
	}
	if err := h.waitAttach(run); err != nil || run.stdout.String() != "hello\n" {
		t.Fatalf("attach = %v with stdout %q, want success with %q", err, run.stdout.String(), "hello\n")
	}
}

func TestAttachFollowFrom(t *testing.T) {
	requested := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		started time.Time
		want    int64
	}{
		{"just started: from the start", requested.Add(-time.Second), 0},
		{"at the window's end: from the start", requested.Add(-attachReplayWindow), 0},
		{"with a history: from the request", requested.Add(-attachReplayWindow - time.Millisecond), 4096},
		{"no start time yet: from the start", time.Time{}, 0},
	} {
		if got := attachFollowFrom(tc.started, requested, 4096); got != tc.want {
			t.Errorf("%s: attachFollowFrom = %d, want %d", tc.name, got, tc.want)
		}
	}
}

// TestAttachTerminalCarriesStdinToTheRuntime: with a terminal, both of the log's streams are the
// one output stream, and the client's stdin reaches the runtime's attach, asked for with stdin
// and the terminal but without stderr (which a terminal cannot have: issue 32, item 5).
func TestAttachTerminalCarriesStdinToTheRuntime(t *testing.T) {
	h := newHarness(t, nil)
	id, logPath := h.runningApp("box")
	typed := make(chan string, 1)
	runtimeServer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reqs := h.runtime.AttachRequests()
		req := reqs[len(reqs)-1]
		opts := podstream.Options{Stdin: req.Stdin, Stdout: req.Stdout, Stderr: req.Stderr, TTY: req.Tty}
		podstream.ServeSPDY(w, r, opts, streamerFunc(func(ctx context.Context, so clientremotecommand.StreamOptions) error {
			// A line, then the session stays until the kubelet ends it (the container's exit).
			in, err := bufio.NewReader(so.Stdin).ReadString('\n')
			typed <- in
			<-ctx.Done()
			return err
		}), slog.New(slog.DiscardHandler))
	}))
	t.Cleanup(runtimeServer.Close)
	h.runtime.SetStreamingURL(runtimeServer.URL + "/")

	// The client's stdin stays open: its end would detach (attachEndsWithInput).
	stdin, feed := io.Pipe()
	var typing sync.WaitGroup
	t.Cleanup(func() { _ = feed.Close(); typing.Wait() })
	typing.Go(func() { _, _ = io.WriteString(feed, "ls\n") })
	run := h.startAttach("box", "input=1&output=1&error=1&tty=1", stdin, true)
	select {
	case got := <-typed:
		if got != "ls\n" {
			t.Errorf("the runtime read stdin %q, want %q", got, "ls\n")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("stdin never reached the runtime")
	}
	h.appendLog(logPath, "stdout F $ ls", "stderr F ls: denied")
	if err := h.runtime.Exit(id, 0); err != nil {
		t.Fatal(err)
	}
	if err := h.waitAttach(run); err != nil {
		t.Fatalf("attach ended with %v, want success", err)
	}
	if got, want := run.stdout.String(), "$ ls\nls: denied\n"; got != want {
		t.Errorf("terminal output = %q, want %q", got, want)
	}
	reqs := h.runtime.AttachRequests()
	if len(reqs) != 1 {
		t.Fatalf("runtime attach requests = %v, want one", reqs)
	}
	if r := reqs[0]; r.ContainerId != id || !r.Stdin || !r.Tty || r.Stdout || r.Stderr {
		t.Errorf("runtime attach request = %v, want stdin and tty only", r)
	}
}

// streamerFunc is a podstream.Streamer of a function.
type streamerFunc func(context.Context, clientremotecommand.StreamOptions) error

func (f streamerFunc) StreamWithContext(ctx context.Context, so clientremotecommand.StreamOptions) error {
	return f(ctx, so)
}

func TestRuntimeAttachRequest(t *testing.T) {
	for _, tc := range []struct {
		stdin, tty bool
		want       *runtimeapi.AttachRequest
	}{
		{true, false, &runtimeapi.AttachRequest{ContainerId: "c", Stdin: true}},
		{true, true, &runtimeapi.AttachRequest{ContainerId: "c", Stdin: true, Tty: true}},
		// Resizes only: the runtime refuses a session without a stream.
		{false, true, &runtimeapi.AttachRequest{ContainerId: "c", Stdout: true, Tty: true}},
	} {
		got := runtimeAttachRequest("c", tc.stdin, tc.tty)
		if got.String() != tc.want.String() {
			t.Errorf("runtimeAttachRequest(stdin=%v, tty=%v) = %v, want %v", tc.stdin, tc.tty, got, tc.want)
		}
	}
}

func TestAttachEndsWithInput(t *testing.T) {
	for _, tc := range []struct {
		stdin, stdinOnce, tty, want bool
	}{
		{stdin: false, want: false},
		{stdin: true, want: true},
		{stdin: true, stdinOnce: true, want: false}, // kubectl run -i: output until the exit
		{stdin: true, stdinOnce: true, tty: true, want: true},
		{stdin: true, tty: true, want: true},
	} {
		if got := attachEndsWithInput(tc.stdin, tc.stdinOnce, tc.tty); got != tc.want {
			t.Errorf("attachEndsWithInput(stdin=%v, stdinOnce=%v, tty=%v) = %v, want %v", tc.stdin, tc.stdinOnce, tc.tty, got, tc.want)
		}
	}
}
