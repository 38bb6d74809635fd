package apiserver

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
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
			s.serveReadyz(rec, httptest.NewRequest(http.MethodGet, tt.path, nil))
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
	s.serveReadyz(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/readyz", nil))
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
	s.serveReadyz(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/readyz", nil))
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
