package apiserver

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/skiff-sh/skiff/internal/registry"
	"github.com/skiff-sh/skiff/internal/registry/builtin"
	"github.com/skiff-sh/skiff/internal/storage"
)

// publicInfoViewer allows what the bootstrap policy's system:public-info-viewer binding allows
// system:unauthenticated, and everything to system:masters; it records who asked.
type publicInfoViewer struct{ seen *[]*UserInfo }

func (p publicInfoViewer) Authorize(_ context.Context, user *UserInfo, info *RequestInfo) (bool, string) {
	*p.seen = append(*p.seen, user)
	if slices.Contains(user.Groups, "system:masters") {
		return true, ""
	}
	public := []string{"/healthz", "/livez", "/readyz", "/version", "/version/"}
	if slices.Contains(user.Groups, AnonymousGroup) && !info.IsResourceRequest && info.Verb == "get" && slices.Contains(public, info.Path) {
		return true, ""
	}
	return false, ""
}

func TestAnonymousRequests(t *testing.T) {
	scheme, err := builtin.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	newServer := func(anonymous bool, seen *[]*UserInfo) *Server {
		s, err := New(Config{
			Scheme: scheme, Resources: builtin.Resources(),
			Storage: func(*registry.Resource) (storage.Interface, error) { return nil, nil },
			Authenticator: AuthenticatorFunc(func(r *http.Request) (*UserInfo, bool, error) {
				if r.Header.Get("Authorization") == "Bearer admin" {
					return &UserInfo{Name: "admin", Groups: []string{"system:masters", "system:authenticated"}}, true, nil
				}
				return nil, false, nil // a token no authenticator knows
			}),
			AnonymousAuth: anonymous,
			Authorizer:    publicInfoViewer{seen: seen},
			Clock:         clocktesting.NewFakeClock(testEpoch),
			Logger:        slog.New(slog.NewTextHandler(io.Discard, nil)),
		})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	tests := []struct {
		name      string
		anonymous bool
		path      string
		token     string
		wantCode  int
		want      string
	}{
		{"version", true, "/version", "", 200, `"gitVersion"`},
		{"readyz", true, "/readyz", "", 200, "ok"},
		{"healthz", true, "/healthz", "", 200, "ok"},
		{"pods forbidden in Kubernetes' words", true, "/api/v1/pods", "", 403,
			`User \"system:anonymous\" cannot list resource \"pods\" in API group \"\" at the cluster scope`},
		{"namespaced secrets forbidden", true, "/api/v1/namespaces/kube-system/secrets", "", 403,
			`User \"system:anonymous\" cannot list resource \"secrets\" in API group \"\" in the namespace \"kube-system\"`},
		{"metrics forbidden", true, "/metrics", "", 403, `User \"system:anonymous\" cannot get path \"/metrics\"`},
		{"an unknown token is 401, not anonymous", true, "/version", "nobody", 401, `"reason":"Unauthorized"`},
		{"admin", true, "/metrics", "admin", 200, ""},
		{"disabled: version", false, "/version", "", 401, `"reason":"Unauthorized"`},
		{"disabled: readyz", false, "/readyz", "", 401, `"reason":"Unauthorized"`},
		{"disabled: pods", false, "/api/v1/pods", "", 401, `"reason":"Unauthorized"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var seen []*UserInfo
			s := newServer(tt.anonymous, &seen)
			r := httptest.NewRequest(http.MethodGet, tt.path, nil)
			if tt.token != "" {
				r.Header.Set("Authorization", "Bearer "+tt.token)
			}
			w := httptest.NewRecorder()
			s.ServeHTTP(w, r)
			if w.Code != tt.wantCode || !strings.Contains(w.Body.String(), tt.want) {
				t.Fatalf("GET %s = %d %s, want %d with %s", tt.path, w.Code, w.Body.String(), tt.wantCode, tt.want)
			}
			if tt.anonymous && tt.token == "" {
				if len(seen) != 1 || seen[0].Name != "system:anonymous" || !slices.Equal(seen[0].Groups, []string{"system:unauthenticated"}) {
					t.Errorf("authorizer saw %+v, want system:anonymous in system:unauthenticated only", seen)
				}
			}
			if tt.wantCode == 401 && len(seen) != 0 {
				t.Errorf("an unauthenticated request reached the authorizer as %+v", seen[0])
			}
		})
	}
}
