package request

import (
	"context"

	rbacv1 "k8s.io/api/rbac/v1"
)

// UserInfo is an authenticated caller, as Kubernetes' user.Info describes one.
type UserInfo struct {
	Name   string
	UID    string
	Groups []string
	// Extra holds authenticator-specific attributes (for service account tokens, the pod bound to
	// the token); CertificateSigningRequests record it as spec.extra.
	Extra map[string][]string
}

type userKey struct{}

// WithUser returns a copy of ctx carrying u as the request's authenticated caller.
func WithUser(ctx context.Context, u *UserInfo) context.Context {
	return context.WithValue(ctx, userKey{}, u)
}

// UserFrom returns the authenticated caller of a request context.
func UserFrom(ctx context.Context) (*UserInfo, bool) {
	u, ok := ctx.Value(userKey{}).(*UserInfo)
	return u, ok && u != nil
}

// RequestInfo is what a resource request path and method say: the API group/version, the namespace,
// the resource, an optional name and subresource, and the Kubernetes verb.
type RequestInfo struct {
	IsResourceRequest bool
	Path              string
	Verb              string // get list watch create update patch delete deletecollection
	APIPrefix         string // "api" or "apis"
	APIGroup          string
	APIVersion        string
	Namespace         string
	Resource          string
	Subresource       string
	Name              string
	// Parts are the path segments after the group/version.
	Parts []string
}

// Authorizer decides whether user may do what info describes; reason explains a denial. The API
// server's chain and every authorizer implement it (apiserver.Authorizer is this interface).
type Authorizer interface {
	Authorize(ctx context.Context, user *UserInfo, info *RequestInfo) (allowed bool, reason string)
}

type authorizerKey struct{}

// WithAuthorizer returns a copy of ctx carrying the API server's authorizer, for what a request's
// handling asks besides its own authorization (admission expressions' `authorizer`).
func WithAuthorizer(ctx context.Context, a Authorizer) context.Context {
	return context.WithValue(ctx, authorizerKey{}, a)
}

// AuthorizerFrom returns the authorizer a request context carries.
func AuthorizerFrom(ctx context.Context) (Authorizer, bool) {
	a, ok := ctx.Value(authorizerKey{}).(Authorizer)
	return a, ok && a != nil
}

// RuleLister lists the rules a user holds in a namespace (cluster-wide ones included), with the
// errors met resolving them (SelfSubjectRulesReview); the RBAC authorizer implements it.
type RuleLister interface {
	RulesFor(user *UserInfo, namespace string) ([]rbacv1.PolicyRule, []error)
}

// TokenAuthenticator authenticates a bearer token (TokenReview).
type TokenAuthenticator func(ctx context.Context, token string) (user *UserInfo, ok bool, err error)
