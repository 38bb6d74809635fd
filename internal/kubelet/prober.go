package kubelet

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/skiff-sh/skiff/internal/version"
)

type probeKind string

const (
	livenessProbe  probeKind = "Liveness"
	readinessProbe probeKind = "Readiness"
	startupProbe   probeKind = "Startup"

	// maxProbeOutput bounds the probe output quoted in events.
	maxProbeOutput = 10 * 1024
)

type probeKey struct {
	uid       types.UID
	container string
	kind      probeKind
}

// probeResult is the thresholded outcome of one probe of one container
// instance.
type probeResult struct {
	containerID string
	success     bool
}

type probeWorker struct {
	containerID string
	stop        chan struct{}
	// now asks for a probe at once rather than at the next period (a readiness probe when its
	// container's startup probe succeeded, as upstream's manual trigger).
	now chan struct{}
}

// prober runs the containers' probes, one goroutine per probe of a
// running container, and remembers their results for the status.
type prober struct {
	k *Kubelet

	mu      sync.Mutex
	workers map[probeKey]*probeWorker
	results map[probeKey]probeResult
}

func newProber(k *Kubelet) *prober {
	return &prober{k: k, workers: map[probeKey]*probeWorker{}, results: map[probeKey]probeResult{}}
}

func containerProbe(c *corev1.Container, kind probeKind) *corev1.Probe {
	switch kind {
	case livenessProbe:
		return c.LivenessProbe
	case readinessProbe:
		return c.ReadinessProbe
	}
	return c.StartupProbe
}

// result returns a probe's result for a container instance, and whether
// one exists.
func (p *prober) result(uid types.UID, container, containerID string, kind probeKind) (bool, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	r, ok := p.results[probeKey{uid, container, kind}]
	if !ok || r.containerID != containerID {
		return false, false
	}
	return r.success, true
}

// started reports whether a running container passed its startup probe
// (or has none).
func (p *prober) started(uid types.UID, c *corev1.Container, containerID string) bool {
	if c.StartupProbe == nil {
		return true
	}
	ok, known := p.result(uid, c.Name, containerID, startupProbe)
	return known && ok
}

// ready reports whether a running container is ready.
func (p *prober) ready(uid types.UID, c *corev1.Container, containerID string) bool {
	if !p.started(uid, c, containerID) {
		return false
	}
	if c.ReadinessProbe == nil {
		return true
	}
	ok, known := p.result(uid, c.Name, containerID, readinessProbe)
	return known && ok
}

// syncPod starts probe workers for the pod's running containers and stops
// the workers of containers that are gone or replaced, and, once the pod is
// deleted, every worker but readiness.
func (p *prober) syncPod(pod *corev1.Pod, state *podRuntimeState, podIPs []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	wanted := wantedProbes(pod, state)
	for key, w := range p.workers {
		if key.uid == pod.UID && wanted[key] != w.containerID {
			close(w.stop)
			delete(p.workers, key)
		}
	}
	for key, containerID := range wanted {
		if _, ok := p.workers[key]; ok {
			continue
		}
		if r, ok := p.results[key]; ok && r.containerID == containerID && key.kind == startupProbe && r.success {
			continue // startup probes stop once they succeeded
		}
		w := &probeWorker{containerID: containerID, stop: make(chan struct{}), now: make(chan struct{}, 1)}
		p.workers[key] = w
		c := findContainer(pod, key.container)
		go p.run(pod, c, key, w, podIPs)
	}
}

// wantedProbes are the probe workers a pod needs: each probe of each running container (sidecars
// included: they run next to the containers and their readiness is reported), keyed to the
// container instance probed; a deleted pod's readiness probes only (probedKinds).
func wantedProbes(pod *corev1.Pod, state *podRuntimeState) map[probeKey]string {
	wanted := map[probeKey]string{}
	probed := slices.Clone(pod.Spec.Containers)
	for i := range pod.Spec.InitContainers {
		if isSidecar(&pod.Spec.InitContainers[i]) {
			probed = append(probed, pod.Spec.InitContainers[i])
		}
	}
	kinds := probedKinds(pod.DeletionTimestamp != nil)
	for i := range probed {
		c := &probed[i]
		cur := state.latest(c.Name, "")
		if !running(cur) {
			continue
		}
		for _, kind := range kinds {
			if containerProbe(c, kind) != nil {
				wanted[probeKey{pod.UID, c.Name, kind}] = cur.Id
			}
		}
	}
	return wanted
}

// removePod stops a pod's probes and forgets their results.
func (p *prober) removePod(uid types.UID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for key, w := range p.workers {
		if key.uid == uid {
			close(w.stop)
			delete(p.workers, key)
		}
	}
	for key := range p.results {
		if key.uid == uid {
			delete(p.results, key)
		}
	}
}

func (p *prober) stopAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for key, w := range p.workers {
		close(w.stop)
		delete(p.workers, key)
	}
}

func (p *prober) setResult(key probeKey, r probeResult) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	old, ok := p.results[key]
	p.results[key] = r
	return !ok || old != r
}

// probeNow asks the worker of key, if any, for a probe at once.
func (p *prober) probeNow(key probeKey) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if w := p.workers[key]; w != nil {
		select {
		case w.now <- struct{}{}:
		default: // one is asked for already
		}
	}
}

func (p *prober) finish(key probeKey, w *probeWorker) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.workers[key] == w {
		close(w.stop)
		delete(p.workers, key)
	}
}

// run probes one container until stopped: after initialDelaySeconds, every
// periodSeconds, turning results into a state after successThreshold
// successes or failureThreshold failures in a row.
func (p *prober) run(pod *corev1.Pod, c *corev1.Container, key probeKey, w *probeWorker, podIPs []string) {
	k := p.k
	probe := containerProbe(c, key.kind)
	period := time.Duration(max(probe.PeriodSeconds, 1)) * time.Second
	timeout := time.Duration(max(probe.TimeoutSeconds, 1)) * time.Second
	failureThreshold := max(probe.FailureThreshold, 1)
	successThreshold := max(probe.SuccessThreshold, 1)
	if key.kind != readinessProbe {
		successThreshold = 1
	}
	if key.kind == livenessProbe {
		// Liveness is presumed until proven otherwise.
		p.setResult(key, probeResult{containerID: w.containerID, success: true})
	}
	if probe.InitialDelaySeconds > 0 {
		select {
		case <-w.stop:
			return
		case <-k.clock.After(time.Duration(probe.InitialDelaySeconds) * time.Second):
		}
	}
	ticker := k.clock.NewTicker(period)
	defer ticker.Stop()
	successes, failures := int32(0), int32(0)
	for {
		if key.kind == startupProbe || p.started(pod.UID, c, w.containerID) {
			ok, output, warning := k.runProbe(probe, pod, c, w.containerID, podIPs, timeout)
			if warning {
				k.recorder.Eventf(pod, corev1.EventTypeWarning, "ProbeWarning", "%s probe warning: %s", key.kind, output)
			}
			if ok {
				successes, failures = successes+1, 0
			} else {
				successes, failures = 0, failures+1
				k.recorder.Eventf(pod, corev1.EventTypeWarning, "Unhealthy", "%s probe failed: %s", key.kind, output)
			}
			switch {
			case successes >= successThreshold:
				if p.setResult(key, probeResult{containerID: w.containerID, success: true}) {
					k.enqueue(pod.UID)
				}
				if key.kind == startupProbe {
					// Readiness has not been probed while the container was starting: probe it
					// now, not a whole readiness period later.
					p.probeNow(probeKey{key.uid, key.container, readinessProbe})
					p.finish(key, w)
					return
				}
			case failures >= failureThreshold:
				changed := p.setResult(key, probeResult{containerID: w.containerID, success: false})
				if key.kind != readinessProbe {
					k.killUnhealthy(pod, c, key.kind, probe, w.containerID)
					p.finish(key, w)
					k.enqueue(pod.UID)
					return
				}
				if changed {
					k.enqueue(pod.UID)
				}
			}
		}
		select {
		case <-w.stop:
			return
		case <-ticker.C():
		case <-w.now:
		}
	}
}

// killUnhealthy stops a container that failed its liveness or startup
// probe; the pod's restart policy decides what happens next.
func (k *Kubelet) killUnhealthy(pod *corev1.Pod, c *corev1.Container, kind probeKind, probe *corev1.Probe, containerID string) {
	k.recorder.Eventf(pod, corev1.EventTypeNormal, "Killing", "Container %s failed %s probe, will be restarted", c.Name, strings.ToLower(string(kind)))
	grace := gracePeriod(pod)
	if probe.TerminationGracePeriodSeconds != nil {
		grace = max(time.Duration(*probe.TerminationGracePeriodSeconds)*time.Second, minimumGracePeriod)
	}
	k.mu.Lock()
	ctx := k.ctx
	k.mu.Unlock()
	if err := k.runtime.StopContainer(ctx, containerID, grace); err != nil {
		k.log.Warn("kill unhealthy container", "pod", pod.Namespace+"/"+pod.Name, "container", c.Name, "err", err)
	}
}

// runProbe runs one probe attempt and returns its success and output, and whether the success
// comes with a warning (an HTTP redirect to another host, not followed).
func (k *Kubelet) runProbe(probe *corev1.Probe, pod *corev1.Pod, c *corev1.Container, containerID string, podIPs []string, timeout time.Duration) (ok bool, output string, warning bool) {
	k.mu.Lock()
	parent := k.ctx
	k.mu.Unlock()
	ctx, cancel := context.WithTimeout(parent, timeout)
	defer cancel()
	podIP := ""
	if len(podIPs) > 0 {
		podIP = podIPs[0]
	}
	switch {
	case probe.Exec != nil:
		stdout, stderr, code, err := k.runtime.ExecSync(ctx, containerID, probe.Exec.Command, timeout)
		output := truncate(string(stdout)+string(stderr), maxProbeOutput)
		if err != nil {
			if ctx.Err() != nil {
				return false, fmt.Sprintf("command %q timed out", strings.Join(probe.Exec.Command, " ")), false
			}
			return false, err.Error(), false
		}
		if code != 0 {
			return false, fmt.Sprintf("command %q exited with %d: %s", strings.Join(probe.Exec.Command, " "), code, output), false
		}
		return true, output, false
	case probe.HTTPGet != nil:
		return httpProbe(ctx, probe.HTTPGet, c, podIP)
	case probe.TCPSocket != nil:
		host := probe.TCPSocket.Host
		if host == "" {
			host = podIP
		}
		port, err := resolvePort(probe.TCPSocket.Port, c)
		if err != nil {
			return false, err.Error(), false
		}
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err != nil {
			return false, fmt.Sprintf("dial tcp %s: %v", net.JoinHostPort(host, strconv.Itoa(port)), err), false
		}
		conn.Close()
		return true, "", false
	case probe.GRPC != nil:
		ok, out := grpcProbe(ctx, probe.GRPC, podIP)
		return ok, out, false
	}
	return false, "probe has no handler", false
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// resolvePort turns a number or a named container port into a number.
func resolvePort(port intstr.IntOrString, c *corev1.Container) (int, error) {
	if port.Type == intstr.Int {
		return port.IntValue(), nil
	}
	for _, p := range c.Ports {
		if p.Name == port.StrVal {
			return int(p.ContainerPort), nil
		}
	}
	if n, err := strconv.Atoi(port.StrVal); err == nil {
		return n, nil
	}
	return 0, fmt.Errorf("couldn't find port %q in container %s", port.StrVal, c.Name)
}

// httpProbe GETs the action's URL: a 2xx or 3xx answer is a success; a redirect to another host
// is not followed and its success is a warning, as in Kubernetes.
func httpProbe(ctx context.Context, h *corev1.HTTPGetAction, c *corev1.Container, podIP string) (ok bool, output string, warning bool) {
	host := h.Host
	if host == "" {
		host = podIP
	}
	port, err := resolvePort(h.Port, c)
	if err != nil {
		return false, err.Error(), false
	}
	scheme := strings.ToLower(string(h.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	path := h.Path
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	u := &url.URL{Scheme: scheme, Host: net.JoinHostPort(host, strconv.Itoa(port))}
	if parsed, err := url.Parse(path); err == nil {
		u.Path, u.RawQuery = parsed.Path, parsed.RawQuery
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return false, err.Error(), false
	}
	req.Header.Set("User-Agent", version.ProbeUserAgent())
	req.Header.Set("Accept", "*/*")
	for _, hdr := range h.HTTPHeaders {
		if strings.EqualFold(hdr.Name, "host") {
			req.Host = hdr.Value
			continue
		}
		req.Header.Add(hdr.Name, hdr.Value)
	}
	client := &http.Client{
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, DisableKeepAlives: true}, //nolint:gosec // probes do not verify certificates, as in Kubernetes.
		// Redirects to other hosts are not followed.
		CheckRedirect: func(r *http.Request, via []*http.Request) error {
			if r.URL.Hostname() != u.Hostname() || len(via) >= 10 {
				return http.ErrUseLastResponse
			}
			return nil
		},
	}
	resp, err := client.Do(req)
	if err != nil {
		return false, fmt.Sprintf("Get %q: %v", u.String(), err), false
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxProbeOutput))
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		return true, fmt.Sprintf("Probe terminated redirects, Response body: %s", body), true
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return true, string(body), false
	}
	return false, fmt.Sprintf("HTTP probe failed with statuscode: %d", resp.StatusCode), false
}

func grpcProbe(ctx context.Context, g *corev1.GRPCAction, podIP string) (bool, string) {
	addr := net.JoinHostPort(podIP, strconv.Itoa(int(g.Port)))
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return false, err.Error()
	}
	defer conn.Close()
	service := ""
	if g.Service != nil {
		service = *g.Service
	}
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		return false, fmt.Sprintf("failed to connect service %q within %v: %v", addr, ctx.Err(), err)
	}
	if resp.Status != healthpb.HealthCheckResponse_SERVING {
		return false, fmt.Sprintf("service unhealthy (responded with %q)", resp.Status)
	}
	return true, ""
}
