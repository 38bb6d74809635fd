package authentication

import (
	"context"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/skiff-sh/skiff/internal/registry"
	vu "github.com/skiff-sh/skiff/internal/registry/validationutil"
	"github.com/skiff-sh/skiff/internal/request"
)

// Resources returns the authentication.k8s.io/v1 review resources.
func Resources() []*registry.Resource {
	gv := authenticationv1.SchemeGroupVersion
	create := []string{"create"}
	return []*registry.Resource{
		{
			GroupVersion: gv, Kind: "TokenReview", ListKind: "TokenReviewList", Plural: "tokenreviews", Singular: "tokenreview",
			New:      func() runtime.Object { return &authenticationv1.TokenReview{} },
			NewList:  func() runtime.Object { return &authenticationv1.TokenReview{} },
			Strategy: &vu.Strategy[*authenticationv1.TokenReview]{}, Verbs: create, Compute: tokenReview,
		},
		{
			GroupVersion: gv, Kind: "SelfSubjectReview", ListKind: "SelfSubjectReviewList", Plural: "selfsubjectreviews", Singular: "selfsubjectreview",
			New:      func() runtime.Object { return &authenticationv1.SelfSubjectReview{} },
			NewList:  func() runtime.Object { return &authenticationv1.SelfSubjectReview{} },
			Strategy: &vu.Strategy[*authenticationv1.SelfSubjectReview]{}, Verbs: create, Compute: selfSubjectReview,
		},
	}
}

// UserInfo is a user as the review APIs report it.
func UserInfo(u *request.UserInfo) authenticationv1.UserInfo {
	out := authenticationv1.UserInfo{Username: u.Name, UID: u.UID, Groups: u.Groups}
	if len(u.Extra) > 0 {
		out.Extra = map[string]authenticationv1.ExtraValue{}
		for k, v := range u.Extra {
			out.Extra[k] = v
		}
	}
	return out
}

func tokenReview(ctx context.Context, env registry.ComputeEnv, obj runtime.Object) (runtime.Object, error) {
	tr := obj.(*authenticationv1.TokenReview)
	if tr.Spec.Token == "" {
		return nil, apierrors.NewBadRequest("token is required for TokenReview in authentication")
	}
	if env.Tokens == nil {
		return nil, apierrors.NewServiceUnavailable("no token authenticator is configured")
	}
	user, ok, err := env.Tokens(ctx, tr.Spec.Token)
	switch {
	case err != nil:
		tr.Status = authenticationv1.TokenReviewStatus{Error: err.Error()}
	case !ok:
		tr.Status = authenticationv1.TokenReviewStatus{}
	default:
		tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: UserInfo(user), Audiences: tr.Spec.Audiences}
	}
	return tr, nil
}

func selfSubjectReview(ctx context.Context, _ registry.ComputeEnv, obj runtime.Object) (runtime.Object, error) {
	r := obj.(*authenticationv1.SelfSubjectReview)
	user, ok := request.UserFrom(ctx)
	if !ok {
		return nil, apierrors.NewBadRequest("no user present on request")
	}
	r.Status.UserInfo = UserInfo(user)
	return r, nil
}
