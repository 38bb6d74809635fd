package dashboard

import (
	"encoding/pem"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
)

func TestDecide(t *testing.T) {
	tests := []struct {
		name                       string
		method, host, origin, path string
		want                       proxyDecision
	}{
		{"page", "GET", "127.0.0.1:8001", "", "/dashboard/", serveAsset},
		{"asset", "GET", "localhost:8001", "", "/dashboard/app.js", serveAsset},
		{"root redirects", "GET", "127.0.0.1:8001", "", "/", redirectToPage},
		{"api", "GET", "127.0.0.1:8001", "", "/api/v1/pods", forward},
		{"apis", "PATCH", "[::1]:8001", "http://[::1]:8001", "/apis/apps/v1/namespaces/a/deployments/d/scale", forward},
		{"readyz", "GET", "127.0.0.1:8001", "", "/readyz", forward},
		{"skiff", "GET", "127.0.0.1:8001", "", "/skiff/v1/etcd/members", forward},
		{"same-origin write", "DELETE", "127.0.0.1:8001", "http://127.0.0.1:8001", "/api/v1/namespaces/a/pods/p", forward},
		{"foreign host (DNS rebinding)", "GET", "evil.example:8001", "", "/api/v1/secrets", refuseHost},
		{"foreign origin", "POST", "127.0.0.1:8001", "http://evil.example", "/api/v1/namespaces/a/pods", refuseOrigin},
		{"other loopback port origin", "POST", "127.0.0.1:8001", "http://127.0.0.1:9999", "/api/v1/namespaces/a/pods", refuseOrigin},
		{"exec", "POST", "127.0.0.1:8001", "", "/api/v1/namespaces/a/pods/p/exec", refusePath},
		{"attach", "GET", "127.0.0.1:8001", "", "/api/v1/namespaces/a/pods/p/attach", refusePath},
		{"apiextra is no prefix match", "GET", "127.0.0.1:8001", "", "/apiextra", notFound},
		{"other path", "GET", "127.0.0.1:8001", "", "/metrics", notFound},
		{"asset write", "POST", "127.0.0.1:8001", "", "/dashboard/app.js", notFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := decide(tt.method, tt.host, tt.origin, tt.path); got != tt.want {
				t.Errorf("decide(%s %s host=%s origin=%s) = %d, want %d", tt.method, tt.path, tt.host, tt.origin, got, tt.want)
			}
		})
	}
}

func get(t *testing.T, h http.Handler, method, target string, hdr map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, target, nil)
	req.Host = "127.0.0.1:8001"
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func TestAssets(t *testing.T) {
	h := Assets()
	rec := get(t, h, "GET", "/dashboard/", nil)
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), `<script src="app.js"`) {
		t.Fatalf("GET /dashboard/: %d %q", rec.Code, rec.Body.String())
	}
	if csp := rec.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") {
		t.Errorf("Content-Security-Policy = %q", csp)
	}
	for _, f := range []string{"/dashboard/app.js", "/dashboard/style.css"} {
		if rec := get(t, h, "GET", f, nil); rec.Code != 200 || rec.Body.Len() == 0 {
			t.Errorf("GET %s: %d", f, rec.Code)
		}
	}
	if rec := get(t, h, "GET", "/dashboard", nil); rec.Code != http.StatusMovedPermanently || rec.Header().Get("Location") != "/dashboard/" {
		t.Errorf("GET /dashboard: %d to %q", rec.Code, rec.Header().Get("Location"))
	}
	if rec := get(t, h, "POST", "/dashboard/", nil); rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST /dashboard/: %d, want 405", rec.Code)
	}
}

func TestProxyAddsCredentials(t *testing.T) {
	var seen []string
	api := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, r.Method+" "+r.URL.RequestURI()+" auth="+r.Header.Get("Authorization")+" cookie="+r.Header.Get("Cookie"))
		if r.Header.Get("Authorization") != "Bearer admin-secret" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		io.WriteString(w, `{"kind":"APIVersions"}`)
	}))
	defer api.Close()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: api.Certificate().Raw})
	h, err := NewProxy(&rest.Config{Host: api.URL, BearerToken: "admin-secret", TLSClientConfig: rest.TLSClientConfig{CAData: ca}},
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	// The browser's own credentials are replaced by the proxy's.
	rec := get(t, h, "GET", "/api?x=1", map[string]string{"Authorization": "Bearer someone-else", "Cookie": "c=1"})
	if rec.Code != 200 || rec.Body.String() != `{"kind":"APIVersions"}` {
		t.Fatalf("GET /api through the proxy: %d %q (API saw %q)", rec.Code, rec.Body.String(), seen)
	}
	if len(seen) != 1 || seen[0] != "GET /api?x=1 auth=Bearer admin-secret cookie=" {
		t.Errorf("API server saw %q", seen)
	}
	// The page is served by the proxy itself, and refused requests never reach the API.
	if rec := get(t, h, "GET", "/dashboard/", nil); rec.Code != 200 {
		t.Errorf("GET /dashboard/: %d", rec.Code)
	}
	seen = nil
	if rec := get(t, h, "POST", "/api/v1/namespaces/a/pods/p/exec", nil); rec.Code != http.StatusForbidden {
		t.Errorf("exec through the proxy: %d, want 403", rec.Code)
	}
	if rec := get(t, h, "DELETE", "/api/v1/namespaces/a/pods/p", map[string]string{"Origin": "http://evil.example"}); rec.Code != http.StatusForbidden {
		t.Errorf("cross-origin delete: %d, want 403", rec.Code)
	}
	if len(seen) != 0 {
		t.Errorf("refused requests reached the API server: %q", seen)
	}
}
