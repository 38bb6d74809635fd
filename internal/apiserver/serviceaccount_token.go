package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/skiff-sh/skiff/internal/serviceaccount"
)

// ServiceAccountTokens issues (TokenRequest) and authenticates service account tokens.
type ServiceAccountTokens struct {
	Issuer   *serviceaccount.Issuer
	Verifier *serviceaccount.Verifier
	// Audiences are the API server's own; a TokenRequest without audiences gets them.
	Audiences []string
}

// serviceAccountAuthenticator recognises bearer service account tokens whose account (and bound
// object) still exist.
type serviceAccountAuthenticator struct{ s *Server }

func (a serviceAccountAuthenticator) AuthenticateRequest(r *http.Request) (*UserInfo, bool, error) {
	tokens := a.s.cfg.ServiceAccountTokens
	auth := r.Header.Get("Authorization")
	if tokens == nil || tokens.Verifier == nil || !strings.HasPrefix(auth, "Bearer ") {
		return nil, false, nil
	}
	v, err := tokens.Verifier.Verify(strings.TrimSpace(strings.TrimPrefix(auth, "Bearer ")), a.s.clock.Now())
	if errors.Is(err, serviceaccount.ErrNotServiceAccountToken) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	ctx := r.Context()
	if err := a.stillExists(ctx, "serviceaccounts", v.Namespace, v.ServiceAccount); err != nil {
		return nil, false, err
	}
	// The node of a pod-bound token only says where the pod ran; the token lives and dies with
	// the pod. Only a token bound to the node itself is checked against the node.
	node := v.Claim.Node
	if v.Claim.Pod != nil {
		node = nil
	}
	for _, bound := range []struct {
		resource, ns string
		ref          *serviceaccount.Ref
	}{{"pods", v.Namespace, v.Claim.Pod}, {"secrets", v.Namespace, v.Claim.Secret}, {"nodes", "", node}} {
		if bound.ref != nil {
			if err := a.stillExists(ctx, bound.resource, bound.ns, *bound.ref); err != nil {
				return nil, false, err
			}
		}
	}
	return &UserInfo{
		Name:   fmt.Sprintf("system:serviceaccount:%s:%s", v.Namespace, v.ServiceAccount.Name),
		UID:    string(v.ServiceAccount.UID),
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + v.Namespace, "system:authenticated"},
		Extra:  v.Extra(),
	}, true, nil
}

// stillExists rejects tokens of deleted (or deleted and recreated) objects, and of pods being deleted.
func (a serviceAccountAuthenticator) stillExists(ctx context.Context, resource, namespace string, ref serviceaccount.Ref) error {
	obj, err := a.s.Get(ctx, "", resource, namespace, ref.Name)
	if err != nil {
		return fmt.Errorf("service account token: %s %s/%s: %w", resource, namespace, ref.Name, err)
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	if m.GetUID() != ref.UID {
		return fmt.Errorf("service account token: %s %s/%s was recreated", resource, namespace, ref.Name)
	}
	if resource == "pods" && m.GetDeletionTimestamp() != nil {
		return fmt.Errorf("service account token: pod %s/%s is being deleted", namespace, ref.Name)
	}
	return nil
}
