package apiserver

import (
	"context"
	"net/http"
	"reflect"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

func TestImpersonationChecks(t *testing.T) {
	tests := []struct {
		name    string
		headers map[string][]string
		want    []RequestInfo
		user    *UserInfo
		wantErr bool
	}{
		{name: "none", headers: nil},
		{name: "user and groups", headers: map[string][]string{"Impersonate-User": {"jane"}, "Impersonate-Group": {"devs", "ops"}},
			want: []RequestInfo{
				{IsResourceRequest: true, Verb: "impersonate", Resource: "users", Name: "jane"},
				{IsResourceRequest: true, Verb: "impersonate", Resource: "groups", Name: "devs"},
				{IsResourceRequest: true, Verb: "impersonate", Resource: "groups", Name: "ops"},
			},
			user: &UserInfo{Name: "jane", Groups: []string{"devs", "ops", "system:authenticated"}}},
		{name: "service account", headers: map[string][]string{"Impersonate-User": {"system:serviceaccount:team:bot"}},
			want: []RequestInfo{{IsResourceRequest: true, Verb: "impersonate", Resource: "serviceaccounts", Namespace: "team", Name: "bot"}},
			user: &UserInfo{Name: "system:serviceaccount:team:bot", Groups: []string{"system:serviceaccounts", "system:serviceaccounts:team", "system:authenticated"}}},
		{name: "uid and extra", headers: map[string][]string{"Impersonate-User": {"jane"}, "Impersonate-Uid": {"42"}, "Impersonate-Extra-Scopes": {"a"}},
			want: []RequestInfo{
				{IsResourceRequest: true, Verb: "impersonate", Resource: "users", Name: "jane"},
				{IsResourceRequest: true, Verb: "impersonate", APIGroup: "authentication.k8s.io", Resource: "uids", Name: "42"},
				{IsResourceRequest: true, Verb: "impersonate", APIGroup: "authentication.k8s.io", Resource: "userextras", Subresource: "scopes", Name: "a"},
			},
			user: &UserInfo{Name: "jane", UID: "42", Groups: []string{"system:authenticated"}, Extra: map[string][]string{"scopes": {"a"}}}},
		{name: "groups without a user", headers: map[string][]string{"Impersonate-Group": {"devs"}}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for k, vs := range tt.headers {
				for _, v := range vs {
					h.Add(k, v)
				}
			}
			imp, err := parseImpersonation(h)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v", err)
			}
			if imp == nil {
				if tt.want != nil {
					t.Fatal("no impersonation parsed")
				}
				return
			}
			var got []RequestInfo
			for _, c := range impersonationChecks(imp) {
				got = append(got, *c)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("checks = %+v\nwant %+v", got, tt.want)
			}
			if u := impersonatedUser(imp); !reflect.DeepEqual(u, tt.user) {
				t.Errorf("user = %+v, want %+v", u, tt.user)
			}
		})
	}
}

// allowUsers allows impersonating users only.
type allowUsers struct{}

func (allowUsers) Authorize(_ context.Context, _ *UserInfo, info *RequestInfo) (bool, string) {
	return info.Resource == "users", ""
}

func TestImpersonateRefusesMissingRights(t *testing.T) {
	s := &Server{cfg: Config{Authorizer: allowUsers{}}}
	r, _ := http.NewRequest(http.MethodGet, "/api/v1/pods", nil)
	r.Header.Set("Impersonate-User", "jane")
	r.Header.Add("Impersonate-Group", "system:masters")
	_, err := s.impersonate(context.Background(), r, &UserInfo{Name: "bob"})
	if !apierrors.IsForbidden(err) || err.Error() != `groups "system:masters" is forbidden: User "bob" cannot impersonate resource "groups" in API group "" at the cluster scope` {
		t.Fatalf("err = %v", err)
	}
	r.Header.Del("Impersonate-Group")
	u, err := s.impersonate(context.Background(), r, &UserInfo{Name: "bob"})
	if err != nil || u.Name != "jane" || r.Header.Get("Impersonate-User") != "" {
		t.Fatalf("user = %+v, %v", u, err)
	}
}

func TestForbiddenMessage(t *testing.T) {
	tests := []struct {
		info RequestInfo
		want string
	}{
		{RequestInfo{IsResourceRequest: true, Verb: "list", Resource: "pods", Namespace: "y"}, `list resource "pods" in API group "" in the namespace "y"`},
		{RequestInfo{IsResourceRequest: true, Verb: "get", APIGroup: "apps", Resource: "deployments", Subresource: "scale", Namespace: "y"}, `get resource "deployments/scale" in API group "apps" in the namespace "y"`},
		{RequestInfo{IsResourceRequest: true, Verb: "list", Resource: "nodes"}, `list resource "nodes" in API group "" at the cluster scope`},
		{RequestInfo{Verb: "get", Path: "/metrics"}, `get path "/metrics"`},
	}
	for _, tt := range tests {
		if got := ForbiddenMessage(&tt.info); got != tt.want {
			t.Errorf("ForbiddenMessage = %s, want %s", got, tt.want)
		}
	}
}
