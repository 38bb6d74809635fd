package cluster

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	rbaclisters "k8s.io/client-go/listers/rbac/v1"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/skiff-sh/skiff/internal/authz/bootstrappolicy"
)

// defaultPolicyObjects are every default policy object, as a fresh cluster stores them.
func defaultPolicyObjects() []runtime.Object {
	var out []runtime.Object
	for _, r := range defaultClusterRoles() {
		out = append(out, r.DeepCopy())
	}
	for _, b := range defaultClusterRoleBindings() {
		out = append(out, b.DeepCopy())
	}
	for _, r := range defaultNamespaceRoles() {
		out = append(out, r.DeepCopy())
	}
	for _, b := range defaultNamespaceRoleBindings() {
		out = append(out, b.DeepCopy())
	}
	return out
}

// policyCacheOf is a policyCache holding objs, as the synced informers would.
func policyCacheOf(t *testing.T, objs []runtime.Object) policyCache {
	t.Helper()
	clusterScoped := func() cache.Indexer { return cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{}) }
	namespaced := func() cache.Indexer {
		return cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	}
	crs, crbs, rs, rbs := clusterScoped(), clusterScoped(), namespaced(), namespaced()
	for _, o := range objs {
		var err error
		switch o.(type) {
		case *rbacv1.ClusterRole:
			err = crs.Add(o)
		case *rbacv1.ClusterRoleBinding:
			err = crbs.Add(o)
		case *rbacv1.Role:
			err = rs.Add(o)
		case *rbacv1.RoleBinding:
			err = rbs.Add(o)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return policyCache{
		clusterRoles: rbaclisters.NewClusterRoleLister(crs), clusterRoleBindings: rbaclisters.NewClusterRoleBindingLister(crbs),
		roles: rbaclisters.NewRoleLister(rs), roleBindings: rbaclisters.NewRoleBindingLister(rbs),
	}
}

// without returns objs less the one named name of objs' type T.
func without[T metav1.Object](objs []runtime.Object, name string) []runtime.Object {
	return slices.DeleteFunc(slices.Clone(objs), func(o runtime.Object) bool {
		t, ok := o.(T)
		return ok && t.GetName() == name
	})
}

func writes(actions []k8stesting.Action) []string {
	var out []string
	for _, a := range actions {
		if a.GetVerb() != "get" && a.GetVerb() != "list" && a.GetVerb() != "watch" {
			out = append(out, a.GetVerb()+" "+a.GetResource().Resource)
		}
	}
	return out
}

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func TestReconcilePolicyNothingChangedMakesNoRequest(t *testing.T) {
	objs := defaultPolicyObjects()
	client := fake.NewClientset(objs...)
	if err := reconcilePolicy(context.Background(), client, policyCacheOf(t, objs), quietLog()); err != nil {
		t.Fatal(err)
	}
	if got := client.Actions(); len(got) != 0 {
		t.Fatalf("a start where the policy is up to date made %d requests, want none; first: %v", len(got), got[0])
	}
}

func TestReconcilePolicyCreatesMissingAndAddsMissingRules(t *testing.T) {
	objs := defaultPolicyObjects()
	// An upgrade: the stored "view" role lacks a rule the new default has, and "edit" is missing.
	var stale *rbacv1.ClusterRole
	for i, o := range objs {
		if r, ok := o.(*rbacv1.ClusterRole); ok && r.Name == "system:basic-user" {
			stale = r.DeepCopy()
			stale.Rules = stale.Rules[:len(stale.Rules)-1]
			objs[i] = stale
		}
	}
	if stale == nil {
		t.Fatal("no system:basic-user in the default policy")
	}
	objs = without[*rbacv1.ClusterRole](objs, "edit")
	client := fake.NewClientset(objs...)
	if err := reconcilePolicy(context.Background(), client, policyCacheOf(t, objs), quietLog()); err != nil {
		t.Fatal(err)
	}
	if got, want := writes(client.Actions()), []string{"update clusterroles", "create clusterroles"}; !slices.Equal(got, want) {
		t.Fatalf("writes %v, want %v", got, want)
	}
	got, err := client.RbacV1().ClusterRoles().Get(context.Background(), "system:basic-user", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Rules) != len(stale.Rules)+1 {
		t.Fatalf("system:basic-user has %d rules after the reconcile, want %d", len(got.Rules), len(stale.Rules)+1)
	}
	if _, err := client.RbacV1().ClusterRoles().Get(context.Background(), "edit", metav1.GetOptions{}); err != nil {
		t.Fatalf("edit not created: %v", err)
	}
}

func TestReconcilePolicyStaleCacheReadsAgain(t *testing.T) {
	objs := defaultPolicyObjects()
	var cached []runtime.Object
	for _, o := range objs {
		if b, ok := o.(*rbacv1.ClusterRoleBinding); ok && b.Name == "system:basic-user" {
			b = b.DeepCopy()
			b.Subjects = nil // the cache misses the subject, so the reconcile writes
			o = b
		}
		cached = append(cached, o)
	}
	client := fake.NewClientset(objs...)
	conflicts := 0
	client.PrependReactor("update", "clusterrolebindings", func(k8stesting.Action) (bool, runtime.Object, error) {
		conflicts++
		return true, nil, apierrors.NewConflict(schema.GroupResource{Group: rbacv1.GroupName, Resource: "clusterrolebindings"}, "system:basic-user", nil)
	})
	// The cache's copy is stale: the update conflicts, the reconcile reads the object again and finds
	// it already up to date, so it writes no more.
	if err := reconcilePolicy(context.Background(), client, policyCacheOf(t, cached), quietLog()); err != nil {
		t.Fatal(err)
	}
	if conflicts != 1 {
		t.Fatalf("%d updates conflicted, want 1", conflicts)
	}
	var gets []string
	for _, a := range client.Actions() {
		if g, ok := a.(k8stesting.GetAction); ok && a.GetVerb() == "get" {
			gets = append(gets, g.GetName())
		}
	}
	if !slices.Equal(gets, []string{"system:basic-user"}) {
		t.Fatalf("read again %v, want [system:basic-user]", gets)
	}
}

func TestReconcilePolicyLeavesBindingsThatOptOut(t *testing.T) {
	objs := defaultPolicyObjects()
	for i, o := range objs {
		if b, ok := o.(*rbacv1.ClusterRoleBinding); ok && b.Name == "system:basic-user" {
			b = b.DeepCopy()
			b.Subjects = nil
			b.Annotations = map[string]string{bootstrappolicy.AutoUpdateAnnotation: "false"}
			objs[i] = b
		}
	}
	client := fake.NewClientset(objs...)
	if err := reconcilePolicy(context.Background(), client, policyCacheOf(t, objs), quietLog()); err != nil {
		t.Fatal(err)
	}
	if got := writes(client.Actions()); len(got) != 0 {
		t.Fatalf("writes %v to a binding annotated autoupdate=false, want none", got)
	}
}
