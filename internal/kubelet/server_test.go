package kubelet

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/skiff-sh/skiff/internal/kubelet/fakecri"
)

func authenticated(r *http.Request) *http.Request {
	r.TLS = &tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{{{}}}}
	return r
}

func (h *harness) get(path string, auth bool) (int, string) {
	h.t.Helper()
	r := httptest.NewRequest(http.MethodGet, path, nil)
	if auth {
		r = authenticated(r)
	}
	w := httptest.NewRecorder()
	h.kubelet.Handler().ServeHTTP(w, r)
	body, _ := io.ReadAll(w.Result().Body)
	return w.Code, string(body)
}

func TestContainerLogs(t *testing.T) {
	h := newHarness(t, nil)
	h.create(makePod("talker").obj())
	h.waitPod("default", "talker", "running", podRunning)
	first := h.runtime.RunningContainer("uid-talker", "app")
	status, err := h.runtime.ContainerStatus(t.Context(), first)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(status.LogPath), 0o755); err != nil {
		t.Fatal(err)
	}
	base := h.clock.Now()
	stamp := func(d time.Duration) string { return base.Add(d).Format(time.RFC3339Nano) }
	log := stamp(-time.Hour) + " stdout F old line\n" +
		stamp(-time.Minute) + " stderr P partial \n" +
		stamp(-time.Minute) + " stderr F end\n" +
		stamp(0) + " stdout F newest\n"
	if err := os.WriteFile(status.LogPath, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		query string
		want  string
	}{
		{"", "old line\npartial end\nnewest\n"},
		{"?tailLines=1", "newest\n"},
		{"?sinceSeconds=120", "partial end\nnewest\n"},
		{"?limitBytes=5", "old l"},
		{"?timestamps=true&tailLines=1", stamp(0) + " newest\n"},
	}
	for _, tc := range tests {
		code, body := h.get("/containerLogs/default/talker/app"+tc.query, true)
		if code != http.StatusOK || body != tc.want {
			t.Errorf("logs%s = %d %q, want %q", tc.query, code, body, tc.want)
		}
	}
	if code, body := h.get("/containerLogs/default/talker/app?previous=true", true); code != http.StatusBadRequest || !strings.Contains(body, `previous terminated container "app" in pod "talker" not found`) {
		t.Errorf("previous without a previous container = %d %q", code, body)
	}
	if code, _ := h.get("/containerLogs/default/talker/app", false); code != http.StatusUnauthorized {
		t.Errorf("anonymous logs request = %d, want 401", code)
	}
	if code, _ := h.get("/containerLogs/default/nobody/app", true); code != http.StatusNotFound {
		t.Errorf("unknown pod = %d", code)
	}
	if code, _ := h.get("/containerLogs/default/talker/app?tailLines=-3", true); code != http.StatusBadRequest {
		t.Errorf("bad tailLines = %d", code)
	}

	// After a restart, previous=true reads the exited container's log.
	if err := h.runtime.Exit(first, 1); err != nil {
		t.Fatal(err)
	}
	h.step(time.Second)
	h.waitPod("default", "talker", "restarted", func(p *corev1.Pod) bool { return statusOf(p, "app").RestartCount == 1 })
	if code, body := h.get("/containerLogs/default/talker/app?previous=true&tailLines=1", true); code != http.StatusOK || body != "newest\n" {
		t.Errorf("previous logs = %d %q", code, body)
	}
}

// TestNodeLogs: /logs/ lists the node's log directory and serves its files to an authorized
// caller, as Kubernetes' kubelet serves /var/log (the upstream specs "should proxy logs on node"
// read it through the API server's node proxy); nothing outside the directory is reachable.
func TestNodeLogs(t *testing.T) {
	logDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(logDir, "syslog"), []byte("node started\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, func(c *Config) { c.NodeLogDir = logDir })
	if code, body := h.get("/logs/", true); code != http.StatusOK || !strings.Contains(body, `href="syslog"`) {
		t.Errorf("/logs/ = %d %q, want a listing naming syslog", code, body)
	}
	if code, body := h.get("/logs/syslog", true); code != http.StatusOK || body != "node started\n" {
		t.Errorf("/logs/syslog = %d %q", code, body)
	}
	if code, _ := h.get("/logs/../../etc/passwd", true); code == http.StatusOK {
		t.Error("a path outside the log directory was served")
	}
	if code, _ := h.get("/logs/syslog", false); code != http.StatusUnauthorized {
		t.Errorf("anonymous /logs/syslog = %d, want 401", code)
	}
}

func TestStreamingEndpointsRequireRunningContainer(t *testing.T) {
	h := newHarness(t, nil)
	h.create(makePod("box").obj())
	h.waitPod("default", "box", "running", podRunning)
	if code, body := h.get("/exec/default/box/app", true); code != http.StatusBadRequest || !strings.Contains(body, "at least 1 command") {
		t.Errorf("exec without command = %d %q", code, body)
	}
	if code, _ := h.get("/exec/default/box/nope?command=ls", true); code != http.StatusBadRequest {
		t.Errorf("exec into unknown container = %d", code)
	}
	if code, _ := h.get("/portForward/default/box?port=99999", true); code != http.StatusBadRequest {
		t.Errorf("port-forward to a bad port = %d", code)
	}
}

// fakePodSource is a podSource of fixed pods, for the server alone.
type fakePodSource []*corev1.Pod

func (f fakePodSource) podByName(namespace, name string) *corev1.Pod {
	for _, p := range f {
		if p.Namespace == namespace && p.Name == name {
			return p
		}
	}
	return nil
}

func (f fakePodSource) livePods() []*corev1.Pod { return f }

// TestServerAnswersFromItsPodSource runs the kubelet API on a server given only a podSource and a
// runtime, no kubelet: the pods it lists and the requests it refuses come from that source.
func TestServerAnswersFromItsPodSource(t *testing.T) {
	pod := func(namespace, name string) *corev1.Pod {
		p := &corev1.Pod{}
		p.Namespace, p.Name, p.UID = namespace, name, types.UID(namespace+"-"+name)
		p.Spec.Containers = []corev1.Container{{Name: "app"}}
		return p
	}
	clk := clocktesting.NewFakeClock(time.Now())
	s := &server{
		pods: fakePodSource{pod("ns-b", "one"), pod("ns-a", "two"), pod("ns-a", "one")}, runtime: fakecri.New(clk), clock: clk,
		log: slog.New(slog.DiscardHandler), nodeLogDir: t.TempDir(),
	}
	handler := s.handler()
	get := func(path string) (int, string) {
		w := httptest.NewRecorder()
		handler.ServeHTTP(w, authenticated(httptest.NewRequest(http.MethodGet, path, nil)))
		body, _ := io.ReadAll(w.Result().Body)
		return w.Code, string(body)
	}

	code, body := get("/pods")
	var list corev1.PodList
	if err := json.Unmarshal([]byte(body), &list); code != http.StatusOK || err != nil {
		t.Fatalf("GET /pods = %d %q (%v)", code, body, err)
	}
	var names []string
	for _, p := range list.Items {
		names = append(names, p.Namespace+"/"+p.Name)
	}
	if want := []string{"ns-a/one", "ns-a/two", "ns-b/one"}; !slices.Equal(names, want) {
		t.Errorf("GET /pods lists %v, want %v (the source's pods, by namespace and name)", names, want)
	}

	for _, tc := range []struct {
		path string
		code int
		body string
	}{
		{"/containerLogs/ns-a/gone/app", http.StatusNotFound, `pod "ns-a/gone" not found`},
		{"/containerLogs/ns-a/one/other", http.StatusBadRequest, "container other is not valid for pod one"},
		{"/containerLogs/ns-a/one/app", http.StatusBadRequest, `container "app" in pod "one" is waiting to start`},
	} {
		if code, body := get(tc.path); code != tc.code || !strings.Contains(body, tc.body) {
			t.Errorf("GET %s = %d %q, want %d with %q", tc.path, code, body, tc.code, tc.body)
		}
	}
}
