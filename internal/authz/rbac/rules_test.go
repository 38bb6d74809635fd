package rbac

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	rbaclisters "k8s.io/client-go/listers/rbac/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/skiff-sh/skiff/internal/request"
)

func res(verb, group, resource, sub, ns, name string) *request.RequestInfo {
	return &request.RequestInfo{IsResourceRequest: true, Verb: verb, APIGroup: group, Resource: resource, Subresource: sub, Namespace: ns, Name: name}
}

func path(verb, p string) *request.RequestInfo { return &request.RequestInfo{Verb: verb, Path: p} }

func TestRuleAllows(t *testing.T) {
	podsRead := rbacv1.PolicyRule{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"pods"}}
	tests := []struct {
		name string
		rule rbacv1.PolicyRule
		req  *request.RequestInfo
		want bool
	}{
		{"exact", podsRead, res("get", "", "pods", "", "ns", "p"), true},
		{"other verb", podsRead, res("delete", "", "pods", "", "ns", "p"), false},
		{"other group", podsRead, res("get", "apps", "pods", "", "ns", "p"), false},
		{"subresource is separate", podsRead, res("get", "", "pods", "log", "ns", "p"), false},
		{"named subresource", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods/log"}}, res("get", "", "pods", "log", "ns", "p"), true},
		{"star subresource", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{"*"}, Resources: []string{"*/scale"}}, res("get", "apps", "deployments", "scale", "ns", "d"), true},
		{"star subresource not the resource", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{"*"}, Resources: []string{"*/scale"}}, res("get", "apps", "deployments", "", "ns", "d"), false},
		{"wildcards", rbacv1.PolicyRule{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}, res("escalate", "rbac.authorization.k8s.io", "clusterroles", "", "", "x"), true},
		{"wildcard resource covers subresources", rbacv1.PolicyRule{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}, res("get", "", "pods", "log", "ns", "p"), true},
		{"resourceName match", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"a"}}, res("get", "", "configmaps", "", "ns", "a"), true},
		{"resourceName other", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"a"}}, res("get", "", "configmaps", "", "ns", "b"), false},
		{"resourceName never lists", rbacv1.PolicyRule{Verbs: []string{"list"}, APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"a"}}, res("list", "", "configmaps", "", "ns", ""), false},
		{"url exact", rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/version"}}, path("get", "/version"), true},
		{"url prefix", rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/apis/*"}}, path("get", "/apis/apps/v1"), true},
		{"url prefix is not the parent", rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/apis/*"}}, path("get", "/apis"), false},
		{"url rule never grants resources", rbacv1.PolicyRule{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}, res("get", "", "pods", "", "", ""), false},
		{"resource rule never grants urls", podsRead, path("get", "/api/v1/pods"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := RuleAllows(tt.req, &tt.rule); got != tt.want {
				t.Errorf("RuleAllows = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestAppliesTo(t *testing.T) {
	sa := &request.UserInfo{Name: "system:serviceaccount:team:bot", Groups: []string{"system:serviceaccounts", "system:authenticated"}}
	tests := []struct {
		name    string
		subject rbacv1.Subject
		ns      string
		want    bool
	}{
		{"user", rbacv1.Subject{Kind: "User", Name: "system:serviceaccount:team:bot"}, "", true},
		{"group", rbacv1.Subject{Kind: "Group", Name: "system:serviceaccounts"}, "", true},
		{"other group", rbacv1.Subject{Kind: "Group", Name: "system:masters"}, "", false},
		{"service account", rbacv1.Subject{Kind: "ServiceAccount", Namespace: "team", Name: "bot"}, "", true},
		{"service account in the binding's namespace", rbacv1.Subject{Kind: "ServiceAccount", Name: "bot"}, "team", true},
		{"service account elsewhere", rbacv1.Subject{Kind: "ServiceAccount", Namespace: "other", Name: "bot"}, "team", false},
		{"service account without any namespace", rbacv1.Subject{Kind: "ServiceAccount", Name: "bot"}, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := AppliesTo(sa, []rbacv1.Subject{tt.subject}, tt.ns); got != tt.want {
				t.Errorf("AppliesTo = %v, want %v", got, tt.want)
			}
		})
	}
}

// newTestAuthorizer builds an authorizer over indexers holding objs; with bySubject, the binding
// indexers carry SubjectIndexers and the authorizer reads them.
func newTestAuthorizer(t *testing.T, bySubject bool, objs ...any) *Authorizer {
	t.Helper()
	idx := func() cache.Indexer {
		indexers := cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}
		if bySubject {
			maps.Copy(indexers, SubjectIndexers())
		}
		return cache.NewIndexer(cache.MetaNamespaceKeyFunc, indexers)
	}
	roles, rbs, crs, crbs := idx(), idx(), idx(), idx()
	for _, o := range objs {
		var err error
		switch o.(type) {
		case *rbacv1.Role:
			err = roles.Add(o)
		case *rbacv1.RoleBinding:
			err = rbs.Add(o)
		case *rbacv1.ClusterRole:
			err = crs.Add(o)
		case *rbacv1.ClusterRoleBinding:
			err = crbs.Add(o)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	l := Listers{
		Roles: rbaclisters.NewRoleLister(roles), RoleBindings: rbaclisters.NewRoleBindingLister(rbs),
		ClusterRoles: rbaclisters.NewClusterRoleLister(crs), ClusterRoleBindings: rbaclisters.NewClusterRoleBindingLister(crbs),
	}
	if bySubject {
		l.ClusterRoleBindingsBySubject, l.RoleBindingsBySubject = crbs, rbs
	}
	return New(l)
}

func TestAuthorizer(t *testing.T) {
	for _, bySubject := range []bool{false, true} {
		t.Run(fmt.Sprintf("bySubject=%v", bySubject), func(t *testing.T) { testAuthorizer(t, bySubject) })
	}
}

func testAuthorizer(t *testing.T, bySubject bool) {
	view := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "view"}, Rules: []rbacv1.PolicyRule{{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"pods"}}}}
	secrets := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "secrets", Namespace: "team"}, Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"secrets"}}}}
	a := newTestAuthorizer(t, bySubject,
		view, secrets,
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "view", Namespace: "team"}, RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "view"},
			Subjects: []rbacv1.Subject{{Kind: "User", Name: "alice"}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "secrets", Namespace: "team"}, RoleRef: rbacv1.RoleRef{Kind: "Role", Name: "secrets"},
			Subjects: []rbacv1.Subject{{Kind: "Group", Name: "devs"}}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "ops"}, RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "view"},
			Subjects: []rbacv1.Subject{{Kind: "User", Name: "ops"}}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "dangling"}, RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "gone"},
			Subjects: []rbacv1.Subject{{Kind: "User", Name: "bob"}}},
	)
	alice := &request.UserInfo{Name: "alice"}
	dev := &request.UserInfo{Name: "carol", Groups: []string{"devs"}}
	tests := []struct {
		name       string
		user       *request.UserInfo
		req        *request.RequestInfo
		want       bool
		wantReason string
	}{
		{"rolebinding to a clusterrole grants in its namespace", alice, res("list", "", "pods", "", "team", ""), true,
			`RBAC: allowed by RoleBinding "view/team" of ClusterRole "view" to User "alice"`},
		{"but not in another", alice, res("list", "", "pods", "", "other", ""), false, ""},
		{"nor cluster-wide", alice, res("list", "", "pods", "", "", ""), false, ""},
		{"role through a group", dev, res("get", "", "secrets", "", "team", "s"), true,
			`RBAC: allowed by RoleBinding "secrets/team" of Role "secrets" to Group "devs"`},
		{"clusterrolebinding grants everywhere", &request.UserInfo{Name: "ops"}, res("get", "", "pods", "", "any", "p"), true,
			`RBAC: allowed by ClusterRoleBinding "ops" of ClusterRole "view" to User "ops"`},
		{"missing role is the reason", &request.UserInfo{Name: "bob"}, res("get", "", "pods", "", "any", "p"), false,
			`RBAC: clusterrolebinding "dangling": clusterrole.rbac.authorization.k8s.io "gone" not found`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, reason := a.Authorize(context.Background(), tt.user, tt.req)
			if got != tt.want || reason != tt.wantReason {
				t.Errorf("Authorize = %v, %q; want %v, %q", got, reason, tt.want, tt.wantReason)
			}
		})
	}
}

func TestCovers(t *testing.T) {
	owner := []rbacv1.PolicyRule{
		{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"pods", "configmaps"}},
		{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"a"}},
		{Verbs: []string{"get"}, NonResourceURLs: []string{"/api/*"}},
	}
	tests := []struct {
		name string
		req  rbacv1.PolicyRule
		want bool
	}{
		{"subset", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}, true},
		{"more verbs", rbacv1.PolicyRule{Verbs: []string{"get", "delete"}, APIGroups: []string{""}, Resources: []string{"pods"}}, false},
		{"a wildcard needs a wildcard", rbacv1.PolicyRule{Verbs: []string{"*"}, APIGroups: []string{""}, Resources: []string{"pods"}}, false},
		{"named within names", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"a"}}, true},
		{"all names from some", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"secrets"}}, false},
		{"url under prefix", rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/api/v1"}}, true},
		{"subresource", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods/log"}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, _ := Covers(owner, []rbacv1.PolicyRule{tt.req}); got != tt.want {
				t.Errorf("Covers = %v, want %v", got, tt.want)
			}
		})
	}
}

// FuzzRuleAllows: the matcher never panics, a rule of wildcards allows every resource request, and
// a rule that allows a request covers (Covers) the request's own one-piece rule.
func FuzzRuleAllows(f *testing.F) {
	f.Add("get", "", "pods", "log", "p", "get", "", "pods/log", "", "/api")
	f.Add("list", "apps", "deployments", "", "", "*", "*", "*/scale", "x", "/apis/*")
	f.Fuzz(func(t *testing.T, verb, group, resource, sub, name, rVerb, rGroup, rResource, rName, url string) {
		rule := rbacv1.PolicyRule{Verbs: []string{rVerb}, APIGroups: []string{rGroup}, Resources: []string{rResource}, NonResourceURLs: []string{url}}
		if rName != "" {
			rule.ResourceNames = []string{rName}
		}
		req := res(verb, group, resource, sub, "ns", name)
		allowed := RuleAllows(req, &rule)
		_ = RuleAllows(path(verb, url), &rule)
		all := rbacv1.PolicyRule{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}
		if !RuleAllows(req, &all) {
			t.Fatalf("a rule of wildcards denies %+v", req)
		}
		if allowed && name != "" && verb != "*" && group != "*" && resource != "*" && sub != "*" {
			piece := rbacv1.PolicyRule{Verbs: []string{verb}, APIGroups: []string{group}, Resources: []string{resource}, ResourceNames: []string{name}}
			if sub != "" {
				piece.Resources = []string{resource + "/" + sub}
			}
			if ok, _ := Covers([]rbacv1.PolicyRule{rule}, []rbacv1.PolicyRule{piece}); !ok && !containsSlash(resource) {
				t.Fatalf("rule %+v allows %+v but does not cover it", rule, piece)
			}
		}
	})
}

func containsSlash(s string) bool {
	for i := range s {
		if s[i] == '/' {
			return true
		}
	}
	return false
}

// TestSubjectIndexVisitsWhatTheListDoes: over random bindings of users, groups and service
// accounts (with and without a namespace), the authorizer that reads the subject index visits
// exactly the rules, through exactly the bindings, that the one listing every binding visits.
func TestSubjectIndexVisitsWhatTheListDoes(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	names := []string{"alice", "bob", "system:serviceaccount:team:bot", "system:serviceaccount:other:bot"}
	groups := []string{"devs", "ops", "system:authenticated", "system:serviceaccounts"}
	namespaces := []string{"team", "other"}
	subject := func() rbacv1.Subject {
		switch rng.IntN(3) {
		case 0:
			return rbacv1.Subject{Kind: rbacv1.UserKind, Name: names[rng.IntN(len(names))]}
		case 1:
			return rbacv1.Subject{Kind: rbacv1.GroupKind, Name: groups[rng.IntN(len(groups))]}
		}
		ns := ""
		if rng.IntN(2) == 0 {
			ns = namespaces[rng.IntN(2)]
		}
		return rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "bot"}
	}
	objs := []any{&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "r"}, Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, Resources: []string{"pods"}}}}}
	for i := range 60 {
		subjects := []rbacv1.Subject{subject()}
		for rng.IntN(2) == 0 {
			subjects = append(subjects, subject())
		}
		ref := rbacv1.RoleRef{Kind: "ClusterRole", Name: "r"}
		if i%2 == 0 {
			objs = append(objs, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("crb", i)}, RoleRef: ref, Subjects: subjects})
		} else {
			objs = append(objs, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("rb", i), Namespace: namespaces[rng.IntN(2)]}, RoleRef: ref, Subjects: subjects})
		}
	}
	listing, indexed := newTestAuthorizer(t, false, objs...), newTestAuthorizer(t, true, objs...)
	sources := func(a *Authorizer, user *request.UserInfo, ns string) []string {
		var out []string
		a.visit(user, ns, func(source string, _ *rbacv1.PolicyRule, err error) bool {
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, source)
			return true
		})
		slices.Sort(out)
		return out
	}
	visited := 0
	for _, name := range names {
		for g := range 1 << len(groups) {
			user := &request.UserInfo{Name: name}
			for i, group := range groups {
				if g&(1<<i) != 0 {
					user.Groups = append(user.Groups, group)
				}
			}
			for _, ns := range []string{"", "team", "other"} {
				want, got := sources(listing, user, ns), sources(indexed, user, ns)
				if !slices.Equal(got, want) {
					t.Fatalf("%s %v in %q: the index visited\n%q\nthe list\n%q", name, user.Groups, ns, got, want)
				}
				visited += len(want)
			}
		}
	}
	if visited == 0 {
		t.Fatal("no binding applied to anyone: the comparison proved nothing")
	}
}
