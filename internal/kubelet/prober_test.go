package kubelet

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func execProbe(cmd string, failureThreshold int32) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{cmd}}},
		PeriodSeconds: 1, TimeoutSeconds: 1, FailureThreshold: failureThreshold, SuccessThreshold: 1,
	}
}

func TestReadinessProbeGatesReady(t *testing.T) {
	h := newHarness(t, nil)
	h.runtime.SetExecExitCode("check-ready", 1)
	h.create(makePod("gated").container(corev1.Container{Name: "app", ReadinessProbe: execProbe("check-ready", 1)}).obj())
	pod := h.waitPod("default", "gated", "running but not ready", func(p *corev1.Pod) bool {
		return podRunning(p) && h.hasEvent("Warning Unhealthy Readiness probe failed")
	})
	if s := statusOf(pod, "app"); s.Ready {
		t.Errorf("container ready although its readiness probe fails: %+v", s)
	}
	if c := conditionOf(pod, corev1.PodReady); c.Status != corev1.ConditionFalse || c.Message != "containers with unready status: [app]" {
		t.Errorf("Ready = %+v", c)
	}
	h.runtime.SetExecExitCode("check-ready", 0)
	h.step(time.Second)
	pod = h.waitPod("default", "gated", "ready", func(p *corev1.Pod) bool { return conditionOf(p, corev1.PodReady).Status == corev1.ConditionTrue })
	if !statusOf(pod, "app").Ready || conditionOf(pod, corev1.ContainersReady).Status != corev1.ConditionTrue {
		t.Errorf("status = %+v", pod.Status)
	}
	// Failing again makes it unready without a restart.
	h.runtime.SetExecExitCode("check-ready", 1)
	h.step(time.Second)
	pod = h.waitPod("default", "gated", "unready again", func(p *corev1.Pod) bool { return conditionOf(p, corev1.PodReady).Status == corev1.ConditionFalse })
	if s := statusOf(pod, "app"); s.RestartCount != 0 || s.State.Running == nil {
		t.Errorf("readiness failure restarted the container: %+v", s)
	}
}

func TestLivenessProbeRestartsContainer(t *testing.T) {
	h := newHarness(t, nil)
	h.create(makePod("sick").container(corev1.Container{Name: "app", LivenessProbe: execProbe("alive", 2)}).obj())
	h.waitPod("default", "sick", "running", podRunning)
	first := h.runtime.RunningContainer("uid-sick", "app")
	h.eventually("first liveness probe", func() bool { return len(h.runtime.CallsTo("ExecSync")) >= 1 })
	h.runtime.SetExecExitCode("alive", 1)
	h.step(time.Second) // failure 1
	h.eventually("one failure", func() bool { return h.hasEvent("Liveness probe failed") })
	h.step(time.Second) // failure 2: killed
	h.eventually("kill", func() bool {
		return h.hasEvent("Normal Killing Container app failed liveness probe, will be restarted")
	})
	h.runtime.SetExecExitCode("alive", 0)
	h.step(time.Second)
	pod := h.waitPod("default", "sick", "restarted", func(p *corev1.Pod) bool {
		s := statusOf(p, "app")
		return s.RestartCount == 1 && s.State.Running != nil
	})
	if got := h.runtime.RunningContainer("uid-sick", "app"); got == first {
		t.Errorf("same container %s still running", got)
	}
	if s := statusOf(pod, "app"); s.LastTerminationState.Terminated == nil {
		t.Errorf("no lastState after liveness restart: %+v", s)
	}
}

func TestStartupProbeHoldsLivenessAndStarted(t *testing.T) {
	h := newHarness(t, nil)
	h.runtime.SetExecExitCode("started", 1)
	h.runtime.SetExecExitCode("alive", 1)
	h.create(makePod("slow").container(corev1.Container{Name: "app", StartupProbe: execProbe("started", 30), LivenessProbe: execProbe("alive", 1)}).obj())
	pod := h.waitPod("default", "slow", "running", func(p *corev1.Pod) bool {
		return podRunning(p) && h.hasEvent("Startup probe failed")
	})
	if s := statusOf(pod, "app"); s.Started == nil || *s.Started || s.Ready {
		t.Errorf("started before the startup probe passed: %+v", s)
	}
	for _, c := range h.runtime.CallsTo("ExecSync") {
		if strings.HasSuffix(c, ":alive") {
			t.Errorf("liveness probe ran before startup succeeded")
		}
	}
	h.runtime.SetExecExitCode("started", 0)
	h.runtime.SetExecExitCode("alive", 0)
	h.step(time.Second)
	h.waitPod("default", "slow", "started", func(p *corev1.Pod) bool {
		s := statusOf(p, "app")
		return s.Started != nil && *s.Started && s.Ready
	})
}

// TestReadinessProbedWhenStarted: a readiness probe with a long period is run as soon as the
// startup probe succeeds, not a whole period later (e2e "should be ready immediately after
// startupProbe succeeds": readiness period 30 s, ready within 25 s of started).
func TestReadinessProbedWhenStarted(t *testing.T) {
	h := newHarness(t, nil)
	h.runtime.SetExecExitCode("started", 1)
	readiness := execProbe("check-ready", 1)
	readiness.PeriodSeconds = 30
	h.create(makePod("starting").container(corev1.Container{Name: "app", StartupProbe: execProbe("started", 120), ReadinessProbe: readiness}).obj())
	h.waitPod("default", "starting", "running, not started", func(p *corev1.Pod) bool {
		return podRunning(p) && h.hasEvent("Startup probe failed")
	})
	// Let the readiness worker pass its first (skipped) round while the container starts.
	h.step(time.Second)
	h.runtime.SetExecExitCode("started", 0)
	h.step(time.Second) // the startup probe's next round: started; readiness is probed at once
	h.waitPod("default", "starting", "started and ready without a readiness period passing", func(p *corev1.Pod) bool {
		s := statusOf(p, "app")
		return s.Started != nil && *s.Started && s.Ready
	})
}

func TestHTTPAndTCPProbes(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Probe") != "yes" || !strings.HasPrefix(r.UserAgent(), "kube-probe/") {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		switch r.URL.Path {
		case "/healthz":
			w.WriteHeader(http.StatusOK)
			return
		case "/elsewhere":
			http.Redirect(w, r, "http://0.0.0.0/", http.StatusFound)
			return
		case "/here":
			http.Redirect(w, r, "/healthz", http.StatusFound)
			return
		}
		w.WriteHeader(http.StatusInternalServerError)
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	host, portStr, _ := net.SplitHostPort(u.Host)
	port, _ := strconv.Atoi(portStr)
	c := &corev1.Container{Name: "app", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: int32(port)}}}
	headers := []corev1.HTTPHeader{{Name: "X-Probe", Value: "yes"}}
	ok, out, _ := httpProbe(context.Background(), &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("http"), HTTPHeaders: headers}, c, host)
	if !ok {
		t.Errorf("healthy endpoint failed: %s", out)
	}
	ok, out, _ = httpProbe(context.Background(), &corev1.HTTPGetAction{Path: "/broken", Port: intstr.FromInt32(int32(port)), HTTPHeaders: headers}, c, host)
	if ok || out != "HTTP probe failed with statuscode: 500" {
		t.Errorf("500 endpoint: %v %q", ok, out)
	}
	// A redirect to another host is not followed: a success with a warning, as in Kubernetes (e2e
	// "should *not* be restarted with a non-local redirect http liveness probe" waits for the
	// ProbeWarning event); one to the same host is followed.
	ok, out, warning := httpProbe(context.Background(), &corev1.HTTPGetAction{Path: "/elsewhere", Port: intstr.FromInt32(int32(port)), HTTPHeaders: headers}, c, host)
	if !ok || !warning || !strings.HasPrefix(out, `Probe terminated redirects, Response body: <a href="http://0.0.0.0/">Found</a>.`) {
		t.Errorf("redirect to another host: %v %v %q", ok, warning, out)
	}
	ok, out, warning = httpProbe(context.Background(), &corev1.HTTPGetAction{Path: "/here", Port: intstr.FromInt32(int32(port)), HTTPHeaders: headers}, c, host)
	if !ok || warning {
		t.Errorf("redirect to the same host: %v %v %q", ok, warning, out)
	}
	if _, err := resolvePort(intstr.FromString("nope"), c); err == nil {
		t.Error("unknown named port resolved")
	}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tcpPort := l.Addr().(*net.TCPAddr).Port
	h := newHarness(t, nil)
	probe := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(int32(tcpPort))}}}
	if ok, out, _ := h.kubelet.runProbe(probe, makePod("x").obj(), c, "", []string{"127.0.0.1"}, time.Second); !ok {
		t.Errorf("tcp probe to a listener failed: %s", out)
	}
	l.Close()
	if ok, _, _ := h.kubelet.runProbe(probe, makePod("x").obj(), c, "", []string{"127.0.0.1"}, time.Second); ok {
		t.Error("tcp probe to a closed port succeeded")
	}
}
