package rbacescalation

import (
	"context"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/skiff-sh/skiff/internal/apiserver/admission"
	"github.com/skiff-sh/skiff/internal/registry"
	"github.com/skiff-sh/skiff/internal/request"
)

// podReader holds get on pods in every namespace and may `bind` only the role "bindable".
type podReader struct{}

func (podReader) Authorize(_ context.Context, _ *request.UserInfo, info *request.RequestInfo) (bool, string) {
	return info.Verb == "bind" && info.Name == "bindable", ""
}

func (podReader) RulesFor(*request.UserInfo, string) ([]rbacv1.PolicyRule, []error) {
	return []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}}, nil
}

// roleLookup serves ClusterRoles for the bind check.
type roleLookup map[string]*rbacv1.ClusterRole

func (l roleLookup) Get(_ context.Context, _, _, _, name string) (runtime.Object, error) {
	if r, ok := l[name]; ok {
		return r, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Group: rbacv1.GroupName, Resource: "clusterroles"}, name)
}

func (l roleLookup) List(context.Context, string, string, string) (runtime.Object, error) {
	return nil, nil
}

func TestRBACEscalation(t *testing.T) {
	res := func(plural string) *registry.Resource {
		return &registry.Resource{GroupVersion: rbacv1.SchemeGroupVersion, Plural: plural}
	}
	readPods := []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}}
	all := []rbacv1.PolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}}
	lookup := roleLookup{
		"pod-reader":    {ObjectMeta: metav1.ObjectMeta{Name: "pod-reader"}, Rules: readPods},
		"cluster-admin": {ObjectMeta: metav1.ObjectMeta{Name: "cluster-admin"}, Rules: all},
		"bindable":      {ObjectMeta: metav1.ObjectMeta{Name: "bindable"}, Rules: all},
	}
	binding := func(role string) *rbacv1.RoleBinding {
		return &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "ns"}, RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: role}}
	}
	tests := []struct {
		name    string
		a       admission.Attributes
		wantErr string
	}{
		{"role within held rules", admission.Attributes{Verb: "create", Resource: res("roles"),
			Object: &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "ns"}, Rules: readPods}}, ""},
		{"role beyond held rules", admission.Attributes{Verb: "create", Resource: res("roles"),
			Object: &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "ns"}, Rules: all}},
			`is attempting to grant RBAC permissions not currently held:` + "\n" + `{APIGroups:["*"], Resources:["*"], Verbs:["*"]}`},
		{"aggregation needs escalate", admission.Attributes{Verb: "create", Resource: res("clusterroles"),
			Object: &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "agg"}, AggregationRule: &rbacv1.AggregationRule{}}},
			"must have cluster-admin privileges to use the aggregationRule"},
		{"bind a held role", admission.Attributes{Verb: "create", Resource: res("rolebindings"), Object: binding("pod-reader")}, ""},
		{"bind cluster-admin", admission.Attributes{Verb: "create", Resource: res("rolebindings"), Object: binding("cluster-admin")},
			"is attempting to grant RBAC permissions not currently held"},
		{"bind with the bind verb", admission.Attributes{Verb: "create", Resource: res("rolebindings"), Object: binding("bindable")}, ""},
		{"bind a missing role", admission.Attributes{Verb: "create", Resource: res("rolebindings"), Object: binding("gone")}, `"gone" not found`},
	}
	e := Plugin{Authorizer: podReader{}, Rules: podReader{}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.a.User = &request.UserInfo{Name: "bob", Groups: []string{"system:authenticated"}}
			err := e.Validate(context.Background(), &tt.a, lookup)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.wantErr != "" && (err == nil || !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("err = %v, want a 403 containing %q", err, tt.wantErr)
			}
		})
	}
}
