package authentication

import (
	"context"
	"errors"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"

	"github.com/skiff-sh/skiff/internal/registry"
	"github.com/skiff-sh/skiff/internal/request"
)

func TestTokenReview(t *testing.T) {
	env := registry.ComputeEnv{Tokens: func(_ context.Context, token string) (*request.UserInfo, bool, error) {
		switch token {
		case "good":
			return &request.UserInfo{Name: "system:serviceaccount:ns:bot", Groups: []string{"system:serviceaccounts"}}, true, nil
		case "expired":
			return nil, false, errors.New("token expired")
		}
		return nil, false, nil
	}}
	review := func(token string) authenticationv1.TokenReviewStatus {
		t.Helper()
		out, err := tokenReview(context.Background(), env, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token, Audiences: []string{"api"}}})
		if err != nil {
			t.Fatal(err)
		}
		return out.(*authenticationv1.TokenReview).Status
	}
	if st := review("good"); !st.Authenticated || st.User.Username != "system:serviceaccount:ns:bot" || len(st.Audiences) != 1 {
		t.Errorf("good token: %+v", st)
	}
	if st := review("expired"); st.Authenticated || st.Error != "token expired" {
		t.Errorf("expired token: %+v", st)
	}
	if st := review("unknown"); st.Authenticated || st.Error != "" {
		t.Errorf("unknown token: %+v", st)
	}
	if _, err := tokenReview(context.Background(), env, &authenticationv1.TokenReview{}); err == nil {
		t.Error("an empty token was reviewed")
	}
}

func TestSelfSubjectReview(t *testing.T) {
	ctx := request.WithUser(context.Background(), &request.UserInfo{Name: "jane", UID: "1", Groups: []string{"devs"}, Extra: map[string][]string{"k": {"v"}}})
	out, err := selfSubjectReview(ctx, registry.ComputeEnv{}, &authenticationv1.SelfSubjectReview{})
	if err != nil {
		t.Fatal(err)
	}
	u := out.(*authenticationv1.SelfSubjectReview).Status.UserInfo
	if u.Username != "jane" || u.UID != "1" || u.Groups[0] != "devs" || u.Extra["k"][0] != "v" {
		t.Errorf("userInfo = %+v", u)
	}
}
