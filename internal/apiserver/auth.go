package apiserver

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/skiff-sh/skiff/internal/request"
)

// UserInfo is an authenticated caller. It lives in package request so the registry can read it
// from a request's context without importing the HTTP layer; the alias keeps the authenticators'
// signatures as they were.
type UserInfo = request.UserInfo

// Authenticator identifies the caller of a request. ok is false for an anonymous request.
type Authenticator interface {
	AuthenticateRequest(r *http.Request) (user *UserInfo, ok bool, err error)
}

// Authorizer decides whether user may do what info describes. It is declared in package request so
// that authorizers and the review APIs need not import the HTTP layer.
type Authorizer = request.Authorizer

// AuthenticatorFunc adapts a function to Authenticator.
type AuthenticatorFunc func(r *http.Request) (*UserInfo, bool, error)

func (f AuthenticatorFunc) AuthenticateRequest(r *http.Request) (*UserInfo, bool, error) { return f(r) }

// ClientCertAuthenticator trusts a client certificate of the cluster CA: the common name is the
// user, the organizations its groups (as Kubernetes does).
type ClientCertAuthenticator struct {
	// Roots, when set, are the cluster CA certificates a verified chain must end in. They are
	// needed when the TLS layer also accepts certificates of another CA (the front proxy's, for
	// RequestHeaderAuthenticator), which must not authenticate as their common name. They are
	// read at each request, so a CA added to or retired from the cluster's bundle (a CA
	// rotation) is followed without a restart. Nil trusts whatever the TLS layer verified.
	Roots CertificateSource
	// Now is the clock the chain's validity is checked against (time.Now when nil): a connection
	// outlives the handshake that verified its certificates.
	Now func() time.Time
}

// CertificateSource gives CA certificates as they are now: pki.PoolHolder follows its bundle
// files on disk.
type CertificateSource interface {
	Certificates() []*x509.Certificate
}

// StaticCertificates is a CertificateSource that never changes.
type StaticCertificates []*x509.Certificate

// Certificates are s.
func (s StaticCertificates) Certificates() []*x509.Certificate { return s }

func (a ClientCertAuthenticator) AuthenticateRequest(r *http.Request) (*UserInfo, bool, error) {
	if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 || len(r.TLS.PeerCertificates) == 0 {
		return nil, false, nil
	}
	cert := r.TLS.PeerCertificates[0]
	if a.Roots != nil && !chainsEndIn(r.TLS.VerifiedChains, a.Roots.Certificates()) {
		return nil, false, nil
	}
	now := time.Now
	if a.Now != nil {
		now = a.Now
	}
	if !validAt(r.TLS.VerifiedChains, now()) {
		return nil, false, nil
	}
	if cert.Subject.CommonName == "" {
		// A certificate that names no one authenticates no one (Kubernetes answers 401).
		return nil, false, errors.New("client certificate has an empty common name")
	}
	groups := append(slices.Clone(cert.Subject.Organization), "system:authenticated")
	return &UserInfo{Name: cert.Subject.CommonName, Groups: groups}, true, nil
}

// validAt reports whether some verified chain has every certificate valid at t.
func validAt(chains [][]*x509.Certificate, t time.Time) bool {
	for _, chain := range chains {
		ok := len(chain) > 0
		for _, c := range chain {
			if t.Before(c.NotBefore) || t.After(c.NotAfter) {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// chainsEndIn reports whether one of the chains the TLS handshake verified (signatures, validity
// and client-auth key usage checked there, against every CA the listener trusts) ends in one of
// roots. Comparing the root is all that is left to do: verifying the chain again on every request
// was the most expensive step of a scheduler binding.
func chainsEndIn(chains [][]*x509.Certificate, roots []*x509.Certificate) bool {
	for _, chain := range chains {
		if len(chain) == 0 {
			continue
		}
		top := chain[len(chain)-1]
		for _, root := range roots {
			if top.Equal(root) {
				return true
			}
		}
	}
	return false
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

// AuthenticatedAllowed lets every authenticated caller do everything (tests of other layers use it).
type AuthenticatedAllowed struct{}

func (AuthenticatedAllowed) Authorize(context.Context, *UserInfo, *RequestInfo) (bool, string) {
	return true, ""
}

// PrivilegedGroups allows everything to members of the named groups (system:masters), before any
// other authorizer and whatever RBAC says, as kube-apiserver does: the admin can always repair the
// policy.
type PrivilegedGroups []string

func (p PrivilegedGroups) Authorize(_ context.Context, user *UserInfo, _ *RequestInfo) (bool, string) {
	for _, g := range user.Groups {
		if slices.Contains(p, g) {
			return true, ""
		}
	}
	return false, ""
}

// UnionAuthorizer allows a request when any of its authorizers does (kube-apiserver's
// --authorization-mode list; none of skiff's authorizers denies outright), with that one's reason;
// the reasons of the denials are joined for the 403 message.
type UnionAuthorizer []Authorizer

func (u UnionAuthorizer) Authorize(ctx context.Context, user *UserInfo, info *RequestInfo) (bool, string) {
	var reasons []string
	for _, a := range u {
		ok, reason := a.Authorize(ctx, user, info)
		if ok {
			return true, reason
		}
		if reason != "" {
			reasons = append(reasons, reason)
		}
	}
	return false, strings.Join(reasons, ", ")
}

// forbidden is Kubernetes' 403: `User "x" cannot list resource "pods" in API group "" in the
// namespace "y"`, "at the cluster scope" without a namespace, `cannot get path "/foo"` for paths.
func forbidden(info *RequestInfo, user *UserInfo, reason string) error {
	msg := fmt.Sprintf("User %q cannot %s", user.Name, ForbiddenMessage(info))
	if reason != "" {
		msg += ": " + reason
	}
	if !info.IsResourceRequest {
		return apierrors.NewForbidden(schema.GroupResource{}, "", errors.New(msg))
	}
	return apierrors.NewForbidden(schema.GroupResource{Group: info.APIGroup, Resource: info.Resource}, info.Name, errors.New(msg))
}

// ForbiddenMessage is what a request is, in the words of a 403 (without the user).
func ForbiddenMessage(info *RequestInfo) string {
	if !info.IsResourceRequest {
		return fmt.Sprintf("%s path %q", info.Verb, info.Path)
	}
	resource := info.Resource
	if info.Subresource != "" {
		resource += "/" + info.Subresource
	}
	if info.Namespace != "" {
		return fmt.Sprintf("%s resource %q in API group %q in the namespace %q", info.Verb, resource, info.APIGroup, info.Namespace)
	}
	return fmt.Sprintf("%s resource %q in API group %q at the cluster scope", info.Verb, resource, info.APIGroup)
}

// Kubernetes' anonymous identity.
const (
	AnonymousUser  = "system:anonymous"
	AnonymousGroup = "system:unauthenticated"
)

func anonymousUser() *UserInfo {
	return &UserInfo{Name: AnonymousUser, Groups: []string{AnonymousGroup}}
}

// presentsCredentials reports whether a request tried to authenticate: a bearer token (or any
// Authorization header) or a client certificate. Such a request is never let in as anonymous
// when its credentials fail: a wrong token is 401, as kube-apiserver answers it.
func presentsCredentials(r *http.Request) bool {
	if r.Header.Get("Authorization") != "" {
		return true
	}
	return r.TLS != nil && len(r.TLS.PeerCertificates) > 0
}
