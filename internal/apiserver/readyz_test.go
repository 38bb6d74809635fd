package apiserver

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

func TestReadyzNamesTheStorageFailureWhenVerbose(t *testing.T) {
	quorumLost := errors.New("etcd quorum lost: 1 of 3 voting members reachable, 2 needed for a leader")
	tests := []struct {
		name     string
		ready    error
		path     string
		wantCode int
		want     []string
		notWant  string
	}{
		{name: "ready", path: "/readyz", wantCode: http.StatusOK, want: []string{"ok"}},
		{name: "ready verbose", path: "/readyz?verbose", wantCode: http.StatusOK, want: []string{"[+]etcd ok", "readyz check passed"}},
		{name: "not ready", ready: quorumLost, path: "/readyz", wantCode: http.StatusServiceUnavailable, want: []string{"[-]etcd failed: reason withheld"}, notWant: "quorum"},
		{name: "not ready verbose", ready: quorumLost, path: "/readyz?verbose", wantCode: http.StatusServiceUnavailable, want: []string{"[-]etcd failed: etcd quorum lost: 1 of 3", "readyz check failed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &Server{cfg: Config{Ready: func(context.Context) error { return tt.ready }}, log: slog.New(slog.DiscardHandler), slis: newHealthSLIs()}
			rec := httptest.NewRecorder()
			s.serveHealth(rec, httptest.NewRequest(http.MethodGet, tt.path, nil), "readyz")
			body := rec.Body.String()
			if rec.Code != tt.wantCode {
				t.Fatalf("code = %d, want %d (%q)", rec.Code, tt.wantCode, body)
			}
			for _, w := range tt.want {
				if !strings.Contains(body, w) {
					t.Errorf("body %q lacks %q", body, w)
				}
			}
			if tt.notWant != "" && strings.Contains(body, tt.notWant) {
				t.Errorf("body %q shows %q without ?verbose", body, tt.notWant)
			}
		})
	}
}

// TestReadyzSLIs: each /readyz run sets kubernetes_healthcheck of its checks (the storage check 0
// while etcd fails, 1 again once it answers) and counts the run by outcome, as kube-apiserver's
// /metrics/slis does.
func TestReadyzSLIs(t *testing.T) {
	var ready error = errors.New("etcd unreachable")
	s := &Server{cfg: Config{Ready: func(context.Context) error { return ready }}, log: slog.New(slog.DiscardHandler), slis: newHealthSLIs()}
	slis := func() string {
		rec := httptest.NewRecorder()
		s.slis.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics/slis", nil))
		return rec.Body.String()
	}
	s.serveHealth(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/readyz", nil), "readyz")
	body := slis()
	for _, want := range []string{
		`kubernetes_healthcheck{name="etcd",type="readyz"} 0`,
		`kubernetes_healthcheck{name="ping",type="readyz"} 1`,
		`kubernetes_healthchecks_total{name="etcd",status="error",type="readyz"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("after a failed check, /metrics/slis lacks %s:\n%s", want, body)
		}
	}
	ready = nil
	s.serveHealth(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/readyz", nil), "readyz")
	body = slis()
	for _, want := range []string{
		`kubernetes_healthcheck{name="etcd",type="readyz"} 1`,
		`kubernetes_healthchecks_total{name="etcd",status="error",type="readyz"} 1`,
		`kubernetes_healthchecks_total{name="etcd",status="success",type="readyz"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("after a passed check, /metrics/slis lacks %s:\n%s", want, body)
		}
	}
}

// TestHealthStartSteps: /healthz, /livez and /readyz list the start-up steps under Kubernetes'
// names (poststarthook/<name>; informer-sync on /readyz only) and fail, naming the step, until each
// has finished (e2e "health handlers should contain necessary checks" reads the lists).
func TestHealthStartSteps(t *testing.T) {
	s := &Server{cfg: Config{Ready: func(context.Context) error { return nil }}, log: slog.New(slog.DiscardHandler), slis: newHealthSLIs()}
	s.DeclareStartSteps(StepBootstrapController, CheckInformerSync, CheckAutoregisterCompletion)
	get := func(endpoint, query string) (int, string) {
		rec := httptest.NewRecorder()
		s.serveHealth(rec, httptest.NewRequest(http.MethodGet, "/"+endpoint+query, nil), endpoint)
		return rec.Code, rec.Body.String()
	}
	if code, body := get("livez", ""); code != http.StatusInternalServerError ||
		!strings.Contains(body, "[-]poststarthook/bootstrap-controller failed: reason withheld") || strings.Contains(body, "informer-sync") {
		t.Fatalf("livez before the steps: %d %q", code, body)
	}
	if code, body := get("readyz", "?verbose"); code != http.StatusServiceUnavailable ||
		!strings.Contains(body, "[-]informer-sync failed: not finished") || !strings.Contains(body, "[+]etcd ok") {
		t.Fatalf("readyz before the steps: %d %q", code, body)
	}
	s.StartStepDone(StepBootstrapController, CheckInformerSync, CheckAutoregisterCompletion)
	for _, endpoint := range []string{"healthz", "livez", "readyz"} {
		if code, body := get(endpoint, ""); code != http.StatusOK || body != "ok" {
			t.Errorf("%s after the steps: %d %q", endpoint, code, body)
		}
		code, body := get(endpoint, "?verbose=1")
		lines := strings.Split(body, "\n")
		for _, want := range []string{"[+]ping ok", "[+]log ok", "[+]etcd ok", "[+]poststarthook/bootstrap-controller ok", "[+]autoregister-completion ok", endpoint + " check passed"} {
			if code != http.StatusOK || !slices.Contains(lines, want) {
				t.Errorf("%s?verbose: %d, want the line %q in %q", endpoint, code, want, body)
			}
		}
		if slices.Contains(lines, "[+]informer-sync ok") != (endpoint == "readyz") {
			t.Errorf("%s?verbose: informer-sync listed %v, want only on readyz: %q", endpoint, endpoint != "readyz", body)
		}
	}
}
