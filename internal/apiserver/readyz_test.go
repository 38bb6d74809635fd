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
			s := &Server{cfg: Config{Ready: func(context.Context) error { return tt.ready }}, log: slog.New(slog.DiscardHandler)}
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
