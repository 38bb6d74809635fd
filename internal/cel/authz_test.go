package cel

import (
	"context"
	"reflect"
	"strings"
	"testing"

	celgo "github.com/google/cel-go/cel"

	"github.com/skiff-sh/skiff/internal/request"
)

// recordingAuthorizer allows alice everything but secrets, and records what it was asked.
type recordingAuthorizer struct {
	asked []request.RequestInfo
	users []string
}

func (r *recordingAuthorizer) Authorize(_ context.Context, user *request.UserInfo, info *request.RequestInfo) (bool, string) {
	r.asked = append(r.asked, *info)
	r.users = append(r.users, user.Name)
	if user.Name == "alice" && info.Resource != "secrets" {
		return true, "alice may"
	}
	return false, "no rule for " + user.Name
}

func TestAuthorizerLibrary(t *testing.T) {
	env, err := NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name   string
		expr   string
		want   any
		asked  request.RequestInfo
		asUser string
	}{
		{name: "a resource check with every attribute",
			expr:  "authorizer.group('apps').resource('deployments').subresource('scale').namespace('ns').name('web').check('update').allowed()",
			want:  true,
			asked: request.RequestInfo{IsResourceRequest: true, APIGroup: "apps", Resource: "deployments", Subresource: "scale", Namespace: "ns", Name: "web", Verb: "update"}, asUser: "alice"},
		{name: "a denial and its reason", expr: "authorizer.group('').resource('secrets').check('get').reason()", want: "no rule for alice",
			asked: request.RequestInfo{IsResourceRequest: true, Resource: "secrets", Verb: "get"}, asUser: "alice"},
		{name: "a path", expr: "authorizer.path('/healthz').check('get').allowed()", want: true,
			asked: request.RequestInfo{Path: "/healthz", Verb: "get"}, asUser: "alice"},
		{name: "as a service account", expr: "authorizer.serviceAccount('ns', 'builder').group('').resource('pods').check('list').allowed()", want: false,
			asked: request.RequestInfo{IsResourceRequest: true, Resource: "pods", Verb: "list"}, asUser: "system:serviceaccount:ns:builder"},
		{name: "the request's own resource", expr: "authorizer.requestResource.subresource('status').check('patch').allowed()", want: true,
			asked: request.RequestInfo{IsResourceRequest: true, APIGroup: "apps", Resource: "deployments", Subresource: "status", Namespace: "ns", Name: "web", Verb: "patch"}, asUser: "alice"},
		{name: "no error", expr: "authorizer.path('/x').check('get').errored() || authorizer.path('/x').check('get').error() != ''", want: false,
			asked: request.RequestInfo{Path: "/x", Verb: "get"}, asUser: "alice"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recordingAuthorizer{}
			authz := Authorization{Ctx: context.Background(), Authorizer: rec, User: &request.UserInfo{Name: "alice", Groups: []string{"dev"}}}
			vars := map[string]any{
				VarAuthorizer:      NewAuthorizer(authz),
				VarRequestResource: RequestResource(authz, "apps", "deployments", "", "ns", "web"),
			}
			prg, err := Compile(env, tt.expr, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, err := prg.Eval(vars, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got.Value() != tt.want {
				t.Errorf("= %v, want %v", got.Value(), tt.want)
			}
			if len(rec.asked) == 0 || !reflect.DeepEqual(rec.asked[0], tt.asked) || rec.users[0] != tt.asUser {
				t.Errorf("asked %+v as %v, want %+v as %s", rec.asked, rec.users, tt.asked, tt.asUser)
			}
		})
	}
}

func TestAuthorizerLibraryErrorsAndCost(t *testing.T) {
	env, err := NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	// Without an authorizer a check errs, it does not allow.
	noAuthorizer := map[string]any{VarAuthorizer: NewAuthorizer(Authorization{User: &request.UserInfo{Name: "alice"}})}
	for expr, want := range map[string]any{
		"authorizer.group('').resource('pods').check('get').allowed()": false,
		"authorizer.group('').resource('pods').check('get').errored()": true,
		"authorizer.group('').resource('pods').check('get').error()":   "no authorizer",
	} {
		prg, err := Compile(env, expr, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := prg.Eval(noAuthorizer, nil); err != nil || got.Value() != want {
			t.Errorf("%s = %v %v, want %v", expr, got, err, want)
		}
	}
	// A ResourceCheck needs its resource before check; a GroupCheck has no check.
	if _, err := Compile(env, "authorizer.group('').check('get').allowed()", celgo.BoolType); err == nil {
		t.Error("check on a GroupCheck compiled")
	}
	// Three checks are over the per-call cost limit, as in Kubernetes; two are not.
	auth := map[string]any{VarAuthorizer: NewAuthorizer(Authorization{Authorizer: &recordingAuthorizer{}, User: &request.UserInfo{Name: "alice"}})}
	for _, tc := range []struct {
		expr    string
		overrun bool
	}{
		{"authorizer.path('/a').check('get').allowed() && authorizer.path('/b').check('get').allowed() && authorizer.path('/c').check('get').allowed()", true},
		{"authorizer.path('/a').check('get').allowed() && authorizer.path('/b').check('get').allowed()", false},
	} {
		prg, err := Compile(env, tc.expr, celgo.BoolType)
		if err != nil {
			t.Fatal(err)
		}
		_, err = prg.EvalBool(auth, nil)
		if overran := err != nil && strings.Contains(err.Error(), "cost limit exceeded"); overran != tc.overrun {
			t.Errorf("%s: %v, want cost overrun %v", tc.expr, err, tc.overrun)
		}
	}
}
