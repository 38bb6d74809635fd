package authorization

import (
	"context"
	"errors"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-sh/skiff/internal/registry"
	"github.com/skiff-sh/skiff/internal/request"
)

// podReaders may get pods in "team" when in group readers.
type podReaders struct{}

func (podReaders) Authorize(_ context.Context, u *request.UserInfo, info *request.RequestInfo) (bool, string) {
	for _, g := range u.Groups {
		if g == "readers" && info.Verb == "get" && info.Resource == "pods" && info.Namespace == "team" {
			return true, ""
		}
	}
	return false, "not a reader"
}

func (podReaders) RulesFor(u *request.UserInfo, ns string) ([]rbacv1.PolicyRule, []error) {
	return []rbacv1.PolicyRule{
		{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}},
		{Verbs: []string{"get"}, NonResourceURLs: []string{"/api/*"}},
	}, []error{errors.New("clusterrole \"gone\" not found")}
}

func TestReviews(t *testing.T) {
	env := registry.ComputeEnv{Authorizer: podReaders{}, Rules: podReaders{}}
	ctx := request.WithUser(context.Background(), &request.UserInfo{Name: "me", Groups: []string{"readers"}})
	pods := &authorizationv1.ResourceAttributes{Verb: "get", Resource: "pods", Namespace: "team", Name: "p"}

	out, err := subjectAccessReview(ctx, env, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: "x", Groups: []string{"readers"}, ResourceAttributes: pods}})
	if err != nil || !out.(*authorizationv1.SubjectAccessReview).Status.Allowed {
		t.Fatalf("SAR for a reader = %+v, %v", out, err)
	}
	out, err = subjectAccessReview(ctx, env, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: "x", ResourceAttributes: pods}})
	if err != nil || out.(*authorizationv1.SubjectAccessReview).Status.Allowed || out.(*authorizationv1.SubjectAccessReview).Status.Reason != "not a reader" {
		t.Fatalf("SAR for a stranger = %+v, %v", out, err)
	}
	if _, err := subjectAccessReview(ctx, env, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{ResourceAttributes: pods}}); err == nil {
		t.Fatal("a SAR without user or group was accepted")
	}
	if _, err := subjectAccessReview(ctx, env, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: "x"}}); err == nil {
		t.Fatal("a SAR without attributes was accepted")
	}
	out, err = selfSubjectAccessReview(ctx, env, &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: pods}})
	if err != nil || !out.(*authorizationv1.SelfSubjectAccessReview).Status.Allowed {
		t.Fatalf("SSAR = %+v, %v", out, err)
	}
	local := &authorizationv1.LocalSubjectAccessReview{ObjectMeta: metav1.ObjectMeta{Namespace: "team"},
		Spec: authorizationv1.SubjectAccessReviewSpec{Groups: []string{"readers"}, ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get", Resource: "pods", Name: "p"}}}
	out, err = localSubjectAccessReview(ctx, env, local)
	if err != nil || !out.(*authorizationv1.LocalSubjectAccessReview).Status.Allowed {
		t.Fatalf("LSAR = %+v, %v", out, err)
	}
	local.Spec.ResourceAttributes.Namespace = "other"
	if _, err := localSubjectAccessReview(ctx, env, local); err == nil {
		t.Fatal("a LSAR naming another namespace was accepted")
	}
	out, err = selfSubjectRulesReview(ctx, env, &authorizationv1.SelfSubjectRulesReview{Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: "team"}})
	if err != nil {
		t.Fatal(err)
	}
	st := out.(*authorizationv1.SelfSubjectRulesReview).Status
	if len(st.ResourceRules) != 1 || len(st.NonResourceRules) != 1 || !st.Incomplete || st.EvaluationError == "" {
		t.Fatalf("rules review = %+v", st)
	}
}
