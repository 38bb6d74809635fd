package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/skiff-sh/skiff/internal/apiserver/request"
)

// UserInfo is an authenticated caller. It lives in package request so the registry can read it
// from a request's context without importing the HTTP layer; the alias keeps the authenticators'
// signatures as they were.
type UserInfo = request.UserInfo

// Authenticator identifies the caller of a request. ok is false for an anonymous request.
type Authenticator interface {
	AuthenticateRequest(r *http.Request) (user *UserInfo, ok bool, err error)
}

// Authorizer decides whether user may do what info describes.
type Authorizer interface {
	Authorize(ctx context.Context, user *UserInfo, info *RequestInfo) (allowed bool, reason string)
}

// AuthenticatorFunc adapts a function to Authenticator.
type AuthenticatorFunc func(r *http.Request) (*UserInfo, bool, error)

func (f AuthenticatorFunc) AuthenticateRequest(r *http.Request) (*UserInfo, bool, error) { return f(r) }

// ClientCertAuthenticator trusts the client certificate the TLS layer already verified against the
// cluster CA: the common name is the user, the organizations its groups (as Kubernetes does).
type ClientCertAuthenticator struct{}

func (ClientCertAuthenticator) AuthenticateRequest(r *http.Request) (*UserInfo, bool, error) {
	if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 || len(r.TLS.PeerCertificates) == 0 {
		return nil, false, nil
	}
	cert := r.TLS.PeerCertificates[0]
	groups := append(slices.Clone(cert.Subject.Organization), "system:authenticated")
	return &UserInfo{Name: cert.Subject.CommonName, Groups: groups}, true, nil
}

// UnionAuthenticator asks each authenticator in turn; the first that recognises the caller wins.
type UnionAuthenticator []Authenticator

func (u UnionAuthenticator) AuthenticateRequest(r *http.Request) (*UserInfo, bool, error) {
	var firstErr error
	for _, a := range u {
		user, ok, err := a.AuthenticateRequest(r)
		if err != nil && firstErr == nil {
			firstErr = err
		}
		if ok {
			return user, true, nil
		}
	}
	return nil, false, firstErr
}

// AuthenticatedAllowed lets every authenticated caller do everything; RBAC replaces it.
type AuthenticatedAllowed struct{}

func (AuthenticatedAllowed) Authorize(context.Context, *UserInfo, *RequestInfo) (bool, string) {
	return true, ""
}

func forbidden(info *RequestInfo, user *UserInfo, reason string) error {
	gr := schema.GroupResource{Group: info.APIGroup, Resource: info.Resource}
	msg := fmt.Sprintf("User %q cannot %s resource %q in API group %q", user.Name, info.Verb, info.Resource, info.APIGroup)
	if info.Namespace != "" {
		msg += fmt.Sprintf(" in the namespace %q", info.Namespace)
	}
	if reason != "" {
		msg += ": " + reason
	}
	return apierrors.NewForbidden(gr, info.Name, fmt.Errorf("%s", msg))
}
