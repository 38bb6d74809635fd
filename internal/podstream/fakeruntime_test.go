package podstream

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/remotecommand"
	"k8s.io/streaming/pkg/httpstream"
	"k8s.io/streaming/pkg/httpstream/spdy"
)

// streamWait bounds how long the fake runtime waits for a client's streams: a safety net for a
// broken test, never reached by a passing one.
const streamWait = 30 * time.Second

// fakeRuntime is a runtime streaming server as containerd's answers the kubelet: SPDY only,
// remotecommand up to v4 on /exec and port-forward on /portforward. Its commands (the command
// query parameter) are:
//
//	echo          copies stdin to stdout until stdin ends, exits 0
//	fail CODE MSG writes "out" to stdout and MSG to stderr, exits CODE
//	size          writes the first terminal size it is sent ("80x24") to stdout, exits 0
//
// Port-forward echoes each data stream back, prefixed with its port.
type fakeRuntime struct {
	t        testing.TB
	server   *httptest.Server
	handlers sync.WaitGroup
}

func newFakeRuntime(t testing.TB) *fakeRuntime {
	f := &fakeRuntime{t: t}
	mux := http.NewServeMux()
	mux.HandleFunc("/exec", f.serveExec)
	mux.HandleFunc("/portforward", f.servePortForward)
	f.server = httptest.NewServer(mux)
	t.Cleanup(func() {
		f.server.Close()
		f.handlers.Wait()
	})
	return f
}

// upstream is the fake's URL for path with r's query.
func (f *fakeRuntime) upstream(path string, r *http.Request) Upstream {
	u, err := url.Parse(f.server.URL + path)
	if err != nil {
		f.t.Fatal(err)
	}
	u.RawQuery = r.URL.RawQuery
	return Upstream{URL: u}
}

// translator serves ServeExec on /exec and ServeTunnel on /portforward in front of f.
func (f *fakeRuntime) translator() *httptest.Server {
	log := slog.New(slog.DiscardHandler)
	mux := http.NewServeMux()
	mux.HandleFunc("/exec", func(w http.ResponseWriter, r *http.Request) {
		ServeExec(w, r, OptionsFromQuery(r.URL.Query()), f.upstream("/exec", r), log)
	})
	mux.HandleFunc("/portforward", func(w http.ResponseWriter, r *http.Request) {
		ServeTunnel(w, r, f.upstream("/portforward", r), log)
	})
	mux.HandleFunc("/refused", func(w http.ResponseWriter, r *http.Request) {
		ServeTunnel(w, r, f.upstream("/nothing-here", r), log)
	})
	s := httptest.NewServer(mux)
	f.t.Cleanup(s.Close)
	return s
}

// accept upgrades r to SPDY and collects n streams by their streamType.
func (f *fakeRuntime) accept(w http.ResponseWriter, r *http.Request, protocols []string, n int) (httpstream.Connection, map[string][]httpstream.Stream, bool) {
	if _, err := httpstream.Handshake(r, w, protocols); err != nil {
		return nil, nil, false
	}
	arrived := make(chan httpstream.Stream, n)
	conn := spdy.NewResponseUpgrader().UpgradeResponse(w, r, func(s httpstream.Stream, _ <-chan struct{}) error {
		arrived <- s
		return nil
	})
	if conn == nil {
		return nil, nil, false
	}
	streams := map[string][]httpstream.Stream{}
	timeout := time.NewTimer(streamWait)
	defer timeout.Stop()
	for range n {
		select {
		case s := <-arrived:
			kind := s.Headers().Get(corev1.StreamType)
			streams[kind] = append(streams[kind], s)
		case <-timeout.C:
			f.t.Errorf("fake runtime: %d of %d streams arrived", len(streams), n)
			conn.Close()
			return nil, nil, false
		}
	}
	return conn, streams, true
}

func (f *fakeRuntime) serveExec(w http.ResponseWriter, r *http.Request) {
	f.handlers.Add(1)
	defer f.handlers.Done()
	opts := OptionsFromQuery(r.URL.Query())
	n := 1
	for _, on := range []bool{opts.Stdin, opts.Stdout, opts.Stderr, opts.TTY} {
		if on {
			n++
		}
	}
	protocols := []string{remotecommand.StreamProtocolV4Name, remotecommand.StreamProtocolV3Name, remotecommand.StreamProtocolV2Name, remotecommand.StreamProtocolV1Name}
	conn, streams, ok := f.accept(w, r, protocols, n)
	if !ok {
		return
	}
	defer conn.Close()
	one := func(kind string) httpstream.Stream {
		if s := streams[kind]; len(s) > 0 {
			return s[0]
		}
		return nil
	}
	status := f.run(r.URL.Query()["command"], one)
	data, err := json.Marshal(status)
	if err != nil {
		f.t.Error(err)
		return
	}
	_, _ = one(corev1.StreamTypeError).Write(data)
	for _, ss := range streams {
		for _, s := range ss {
			_ = s.Close()
		}
	}
}

// run carries out a fake command on the streams and returns its outcome as the v4 error stream
// reports it.
func (f *fakeRuntime) run(command []string, stream func(string) httpstream.Stream) *metav1.Status {
	success := &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess}
	if len(command) == 0 {
		return success
	}
	switch command[0] {
	case "echo":
		_, _ = io.Copy(stream(corev1.StreamTypeStdout), stream(corev1.StreamTypeStdin))
	case "size":
		var size struct{ Width, Height uint16 }
		if err := json.NewDecoder(stream(corev1.StreamTypeResize)).Decode(&size); err != nil {
			f.t.Errorf("fake runtime: resize: %v", err)
		}
		fmt.Fprintf(stream(corev1.StreamTypeStdout), "%dx%d", size.Width, size.Height)
	case "fail":
		code, _ := strconv.Atoi(command[1])
		_, _ = io.WriteString(stream(corev1.StreamTypeStdout), "out")
		_, _ = io.WriteString(stream(corev1.StreamTypeStderr), command[2])
		return &metav1.Status{
			TypeMeta: success.TypeMeta, Status: metav1.StatusFailure, Reason: remotecommand.NonZeroExitCodeReason,
			Message: fmt.Sprintf("command terminated with non-zero exit code: exit status %d", code),
			Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: remotecommand.ExitCodeCauseType, Message: command[1]}}},
		}
	}
	return success
}

func (f *fakeRuntime) servePortForward(w http.ResponseWriter, r *http.Request) {
	f.handlers.Add(1)
	defer f.handlers.Done()
	// One forwarded connection: its error stream and its data stream.
	conn, streams, ok := f.accept(w, r, []string{"portforward.k8s.io"}, 2)
	if !ok {
		return
	}
	defer conn.Close()
	for _, data := range streams[corev1.StreamTypeData] {
		body, _ := io.ReadAll(data)
		_, _ = fmt.Fprintf(data, "port %s: %s", data.Headers().Get(corev1.PortHeader), body)
		_ = data.Close()
	}
	for _, e := range streams[corev1.StreamTypeError] {
		_ = e.Close()
	}
}
