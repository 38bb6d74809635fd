package kubelet

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"sort"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"

	"github.com/skiff-sh/skiff/internal/kubelet/cri"
	"github.com/skiff-sh/skiff/internal/kubelet/stats"
	"github.com/skiff-sh/skiff/internal/queryparam"
)

// logFollowPoll is how often a followed log file is checked for new lines.
const logFollowPoll = 100 * time.Millisecond

// server is the kubelet's HTTP API (handler): logs, exec, attach, port-forward, the node's pods
// and its resource usage. It holds only what those answers need: the pods through podSource, the
// runtime the streams and stats come from, and the volumes' usage through volumeUsageSource; it
// never changes a pod.
type server struct {
	pods    podSource
	volumes volumeUsageSource
	runtime cri.Runtime
	clock   clock.Clock
	log     *slog.Logger
	// nodeName and dataDir name the node and the filesystem in /stats/summary; nodeLogDir is
	// served at /logs/.
	nodeName, dataDir, nodeLogDir string
	// apiAuth guards the API (Deps.APIAuth); nil requires a verified client certificate.
	apiAuth func(http.Handler) http.Handler
	// nodeStats keeps the previous node sample for /stats/summary's CPU rate (resourcestats.go).
	nodeStats nodeStatsState
}

// podSource is what the server reads of the pods the kubelet runs (the pod sync owns them).
type podSource interface {
	// podByName finds a live (not deleted) pod of this node.
	podByName(namespace, name string) *corev1.Pod
	// livePods lists the live pods of this node.
	livePods() []*corev1.Pod
}

// volumeUsageSource measures the pods' volumes for /stats/summary and /metrics.
type volumeUsageSource interface {
	volumeUsage(ctx context.Context, pods []*corev1.Pod) map[string][]stats.Volume
}

// handler serves the kubelet API the API server calls for logs, exec,
// attach and port-forward:
//
//	GET /healthz
//	GET /containerLogs/{namespace}/{pod}/{container}?follow&previous&tailLines&sinceSeconds&sinceTime&timestamps&limitBytes
//	    /exec/{namespace}/{pod}/{container}?command=...&input&output&error&tty
//	    /attach/{namespace}/{pod}/{container}?input&output&error&tty
//	    /portForward/{namespace}/{pod}?port=...
//
//	GET /pods (the node's pods, a PodList)
//	GET /stats/summary, GET /metrics/resource (resource usage, resourcestats.go), GET /metrics
//	(the claims' kubelet_volume_stats_*)
//	GET /logs/... (the node's log directory, Config.NodeLogDir)
//
// Streaming requests are proxied (with their protocol upgrade) to the
// runtime's streaming server. Every caller is authenticated and authorized
// by Deps.APIAuth (kubeletauth: client certificates or bearer tokens, then
// SubjectAccessReviews on nodes/proxy, nodes/log, ...); without it, a client
// certificate verified by the TLS layer is required. Anonymous callers get 401.
func (s *server) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	mux.HandleFunc("GET /pods", s.servePods)
	mux.HandleFunc("GET /pods/", s.servePods)
	mux.HandleFunc("GET /containerLogs/{namespace}/{pod}/{container}", s.serveLogs)
	mux.HandleFunc("/exec/{namespace}/{pod}/{container}", s.serveExec)
	mux.HandleFunc("/attach/{namespace}/{pod}/{container}", s.serveAttach)
	mux.HandleFunc("/portForward/{namespace}/{pod}", s.servePortForward)
	// Resource usage (resourcestats.go): the Summary API and the resource metrics.
	mux.HandleFunc("GET /stats/summary", s.serveStatsSummary)
	mux.HandleFunc("GET /metrics/resource", s.serveResourceMetrics)
	mux.HandleFunc("GET /metrics", s.serveMetrics)
	// The node's own logs (nodes/log): a listing and the files of NodeLogDir, as Kubernetes'
	// kubelet serves /var/log at /logs/ (what `kubectl get --raw /api/v1/nodes/N/proxy/logs/`
	// reads).
	mux.Handle("GET /logs/", http.StripPrefix("/logs/", http.FileServer(http.Dir(s.nodeLogDir))))
	if s.apiAuth != nil {
		return s.apiAuth(mux)
	}
	return requireClientCertificate(mux)
}

// servePods answers the pods bound to this node that the kubelet runs, as upstream's /pods.
func (s *server) servePods(w http.ResponseWriter, _ *http.Request) {
	list := &corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}}
	for _, pod := range s.pods.livePods() {
		list.Items = append(list.Items, *pod.DeepCopy())
	}
	sort.Slice(list.Items, func(i, j int) bool {
		a, b := list.Items[i], list.Items[j]
		return a.Namespace+"/"+a.Name < b.Namespace+"/"+b.Name
	})
	body, err := json.Marshal(list)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

func requireClientCertificate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// Handler serves the kubelet API (server.handler) for the node's pods.
func (k *Kubelet) Handler() http.Handler { return k.server.handler() }

// Serve serves Handler over TLS on address until ctx ends. tlsConfig must
// carry the kubelet's serving certificate and verify client certificates
// (ClientAuth: tls.RequireAndVerifyClientCert with the API server's CA).
func (k *Kubelet) Serve(ctx context.Context, address string, tlsConfig *tls.Config) error {
	return k.server.serve(ctx, address, tlsConfig)
}

// serve serves handler over TLS on address until ctx ends.
func (s *server) serve(ctx context.Context, address string, tlsConfig *tls.Config) error {
	if tlsConfig == nil || tlsConfig.ClientCAs == nil {
		return errors.New("kubelet server: a TLS config with ClientCAs is required")
	}
	server := &http.Server{Addr: address, Handler: s.handler(), TLSConfig: tlsConfig, ReadHeaderTimeout: 10 * time.Second}
	errs := make(chan error, 1)
	go func() { errs <- server.ListenAndServeTLS("", "") }()
	select {
	case <-ctx.Done():
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = server.Shutdown(shutdown)
		// ListenAndServeTLS returns as soon as Shutdown begins; waiting for it
		// keeps the serving goroutine owned by this call.
		<-errs
		return nil
	case err := <-errs:
		return fmt.Errorf("kubelet server: %w", err)
	}
}

func (s *server) containerFor(w http.ResponseWriter, r *http.Request) (*corev1.Pod, *podRuntimeState, string, bool) {
	namespace, name, container := r.PathValue("namespace"), r.PathValue("pod"), r.PathValue("container")
	pod := s.pods.podByName(namespace, name)
	if pod == nil {
		http.Error(w, fmt.Sprintf("pod %q not found", namespace+"/"+name), http.StatusNotFound)
		return nil, nil, "", false
	}
	if container != "" && findAnyContainer(pod, container) == nil {
		http.Error(w, fmt.Sprintf("container %s is not valid for pod %s", container, name), http.StatusBadRequest)
		return nil, nil, "", false
	}
	state, err := runtimeState(r.Context(), s.runtime, pod.UID)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return nil, nil, "", false
	}
	return pod, state, container, true
}

// logOptions are the query parameters of a log request.
type logOptions struct {
	follow, previous, timestamps bool
	tailLines                    int64
	limitBytes                   int64
	since                        time.Time
}

func parseLogOptions(q url.Values, now time.Time) (logOptions, error) {
	opts := logOptions{follow: queryparam.Bool(q, "follow"), previous: queryparam.Bool(q, "previous"), timestamps: queryparam.Bool(q, "timestamps"), tailLines: -1}
	if v := q.Get("tailLines"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return opts, fmt.Errorf("tailLines: %q must be a non-negative integer", v)
		}
		opts.tailLines = n
	}
	if v := q.Get("limitBytes"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return opts, fmt.Errorf("limitBytes: %q must be a positive integer", v)
		}
		opts.limitBytes = n
	}
	if v := q.Get("sinceSeconds"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return opts, fmt.Errorf("sinceSeconds: %q must be a positive integer", v)
		}
		opts.since = now.Add(-time.Duration(n) * time.Second)
	}
	if v := q.Get("sinceTime"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return opts, fmt.Errorf("sinceTime: %w", err)
		}
		opts.since = t
	}
	return opts, nil
}

// criLogLine is one line of a CRI log file:
// "<RFC3339Nano time> <stdout|stderr> <F|P> <content>".
type criLogLine struct {
	time time.Time
	// stream is the stream the line was written to: "stdout" or "stderr" (a terminal's output
	// is "stdout").
	stream  string
	partial bool
	content []byte
}

func parseCRILogLine(line []byte) (criLogLine, bool) {
	parts := bytes.SplitN(line, []byte(" "), 4)
	if len(parts) < 3 {
		return criLogLine{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, string(parts[0]))
	if err != nil {
		return criLogLine{}, false
	}
	var content []byte
	if len(parts) == 4 {
		content = parts[3]
	}
	return criLogLine{time: t, stream: string(parts[1]), partial: string(parts[2]) == "P", content: content}, true
}

// criLogReader reads the lines of a CRI log file that is still being written: a line not yet
// ended by its newline is kept until the rest arrives.
type criLogReader struct {
	reader  *bufio.Reader
	pending []byte
}

func newCRILogReader(r io.Reader) *criLogReader { return &criLogReader{reader: bufio.NewReader(r)} }

// readAvailable hands each complete line written so far to emit, skipping lines that do not
// parse, and stops at the first error emit returns.
func (c *criLogReader) readAvailable(emit func(criLogLine) error) error {
	for {
		chunk, err := c.reader.ReadBytes('\n')
		c.pending = append(c.pending, chunk...)
		if err != nil {
			return nil // EOF: keep the partial line for later
		}
		line := bytes.TrimRight(c.pending, "\n")
		c.pending = nil
		l, ok := parseCRILogLine(line)
		if !ok {
			continue
		}
		if err := emit(l); err != nil {
			return err
		}
	}
}

func (s *server) serveLogs(w http.ResponseWriter, r *http.Request) {
	pod, state, container, ok := s.containerFor(w, r)
	if !ok {
		return
	}
	opts, err := parseLogOptions(r.URL.Query(), s.clock.Now())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	cur := state.latest(container, "")
	if opts.previous && cur != nil {
		cur = state.previous(cur)
		if cur == nil {
			http.Error(w, fmt.Sprintf("previous terminated container %q in pod %q not found", container, pod.Name), http.StatusBadRequest)
			return
		}
	}
	if cur == nil {
		http.Error(w, fmt.Sprintf("container %q in pod %q is waiting to start: ContainerCreating", container, pod.Name), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	if err := s.writeLogs(r.Context(), w, cur.Id, cur.LogPath, opts); err != nil {
		s.log.Warn("serve logs", "pod", pod.Namespace+"/"+pod.Name, "container", container, "err", err)
	}
}

// writeLogs copies a container's log to w as the options say, following
// the file while the container runs when asked to.
func (s *server) writeLogs(ctx context.Context, w io.Writer, containerID, path string, opts logOptions) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	out := &limitedWriter{w: w, remaining: opts.limitBytes}
	emit := func(l criLogLine) error {
		if !opts.since.IsZero() && l.time.Before(opts.since) {
			return nil
		}
		if opts.timestamps {
			if _, err := io.WriteString(out, l.time.Format(time.RFC3339Nano)+" "); err != nil {
				return err
			}
		}
		if _, err := out.Write(l.content); err != nil {
			return err
		}
		if !l.partial {
			_, err := out.Write([]byte{'\n'})
			return err
		}
		return nil
	}
	reader := newCRILogReader(f)
	var lines []criLogLine
	collect := func(l criLogLine) error {
		lines = append(lines, l)
		return nil
	}
	if err := reader.readAvailable(collect); err != nil {
		return err
	}
	if opts.tailLines >= 0 && int64(len(lines)) > opts.tailLines {
		lines = lines[int64(len(lines))-opts.tailLines:]
	}
	for _, l := range lines {
		if err := emit(l); err != nil {
			return ignoreLimit(err)
		}
	}
	if flusher, ok := w.(http.Flusher); ok {
		flusher.Flush()
	}
	if !opts.follow {
		return nil
	}
	flush := func() {
		if flusher, ok := w.(http.Flusher); ok {
			flusher.Flush()
		}
	}
	return ignoreLimit(s.followLog(ctx, reader, containerID, emit, flush))
}

// followLog hands emit the lines of a container's log as they are written, then flush, until the
// runtime no longer reports the container running (the lines read after that are its last: the
// runtime records the exit only once the output has reached the log) or ctx ends. It returns the
// first error emit returns, nil otherwise.
func (s *server) followLog(ctx context.Context, reader *criLogReader, containerID string, emit func(criLogLine) error, flush func()) error {
	for {
		status, err := s.runtime.ContainerStatus(ctx, containerID)
		finished := err != nil || status.State != runtimeapi.ContainerState_CONTAINER_RUNNING
		if err := reader.readAvailable(emit); err != nil {
			return err
		}
		flush()
		if finished {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-s.clock.After(logFollowPoll):
		}
	}
}

var errLimitReached = errors.New("limitBytes reached") //nolint:gochecknoglobals // sentinel error value.

func ignoreLimit(err error) error {
	if errors.Is(err, errLimitReached) {
		return nil
	}
	return err
}

type limitedWriter struct {
	w         io.Writer
	remaining int64 // 0 means unlimited
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	switch {
	case l.remaining == 0:
		return l.w.Write(p)
	case l.remaining < 0:
		return 0, errLimitReached
	case int64(len(p)) >= l.remaining:
		n, err := l.w.Write(p[:l.remaining])
		l.remaining = -1
		if err == nil {
			err = errLimitReached
		}
		return n, err
	}
	l.remaining -= int64(len(p))
	return l.w.Write(p)
}

func (s *server) serveExec(w http.ResponseWriter, r *http.Request) {
	_, state, container, ok := s.containerFor(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	if len(q["command"]) == 0 {
		http.Error(w, "you must specify at least 1 command", http.StatusBadRequest)
		return
	}
	opts, id, ok := s.streamSession(w, r, state, container)
	if !ok {
		return
	}
	target, err := s.runtime.Exec(r.Context(), opts.execRequest(id, q["command"]))
	s.proxyStream(w, r, target, err)
}

func (s *server) serveAttach(w http.ResponseWriter, r *http.Request) {
	pod, state, container, ok := s.containerFor(w, r)
	if !ok {
		return
	}
	// Where the log stands as the request arrives: everything written from here on reaches the
	// client, however long the checks below take (and a container that has just started is
	// followed from its start: attachFollowFrom).
	var logPath string
	var from int64
	if cur := state.latest(container, ""); cur != nil {
		logPath = cur.LogPath
		var started time.Time
		if cur.StartedAt > 0 {
			started = time.Unix(0, cur.StartedAt)
		}
		from = attachFollowFrom(started, s.clock.Now(), logPosition(logPath))
	}
	opts, id, ok := s.streamSession(w, r, state, container)
	if !ok {
		return
	}
	stdinOnce := false
	if c := findAnyContainer(pod, container); c != nil {
		stdinOnce = c.StdinOnce
	}
	a := &containerAttach{s: s, containerID: id, logPath: logPath, from: from, endsWithInput: attachEndsWithInput(opts.stdin, stdinOnce, opts.tty)}
	s.serveAttachStream(w, r, opts, a)
}

func (s *server) servePortForward(w http.ResponseWriter, r *http.Request) {
	_, state, _, ok := s.containerFor(w, r)
	if !ok {
		return
	}
	sandbox := state.readySandbox()
	if sandbox == nil {
		http.Error(w, "pod sandbox is not ready", http.StatusBadRequest)
		return
	}
	var ports []int32
	for _, p := range r.URL.Query()["port"] {
		n, err := strconv.ParseInt(p, 10, 32)
		if err != nil || n <= 0 || n > 65535 {
			http.Error(w, fmt.Sprintf("invalid port %q", p), http.StatusBadRequest)
			return
		}
		ports = append(ports, int32(n))
	}
	target, err := s.runtime.PortForward(r.Context(), &runtimeapi.PortForwardRequest{PodSandboxId: sandbox.Id, Port: ports})
	s.proxyStream(w, r, target, err)
}

// proxyStream forwards a (to be upgraded) streaming request to the
// runtime's streaming server URL.
func (s *server) proxyStream(w http.ResponseWriter, r *http.Request, target string, err error) {
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	u, err := url.Parse(target)
	if err != nil {
		http.Error(w, fmt.Sprintf("runtime streaming URL %q: %v", target, err), http.StatusInternalServerError)
		return
	}
	if s.serveWebSocketStream(w, r, u) {
		return
	}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL = u
			pr.Out.Host = u.Host
			pr.Out.Header.Del("Authorization")
		},
		Transport: &http.Transport{DialContext: (&net.Dialer{Timeout: 10 * time.Second}).DialContext},
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			http.Error(w, "proxy to container runtime: "+err.Error(), http.StatusBadGateway)
		},
	}
	proxy.ServeHTTP(w, r)
}
