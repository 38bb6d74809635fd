package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

const saUserPrefix = "system:serviceaccount:"

// impersonation is what a request's Impersonate-* headers ask for; nil when it asks nothing.
type impersonation struct {
	user   string
	uid    string
	groups []string
	extra  map[string][]string
}

// parseImpersonation reads the Impersonate-* headers. Groups, a UID or extras without a user are a
// bad request, as in Kubernetes.
func parseImpersonation(h http.Header) (*impersonation, error) {
	imp := &impersonation{user: h.Get(authenticationv1.ImpersonateUserHeader), uid: h.Get(authenticationv1.ImpersonateUIDHeader)}
	imp.groups = h.Values(authenticationv1.ImpersonateGroupHeader)
	for key, values := range h {
		if !strings.HasPrefix(key, authenticationv1.ImpersonateUserExtraHeaderPrefix) {
			continue
		}
		extraKey, err := url.PathUnescape(strings.ToLower(strings.TrimPrefix(key, authenticationv1.ImpersonateUserExtraHeaderPrefix)))
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("malformed extra key for impersonation request: %v", err))
		}
		if imp.extra == nil {
			imp.extra = map[string][]string{}
		}
		imp.extra[extraKey] = append(imp.extra[extraKey], values...)
	}
	if imp.user == "" {
		if len(imp.groups) > 0 || imp.uid != "" || len(imp.extra) > 0 {
			return nil, apierrors.NewBadRequest("requested impersonation of groups, a UID or extras without impersonating a user")
		}
		return nil, nil
	}
	return imp, nil
}

// impersonationChecks are the `impersonate` requests the caller must be allowed, one per thing
// impersonated: users, groups and serviceaccounts in the core group, uids and userextras/<key> in
// authentication.k8s.io.
func impersonationChecks(imp *impersonation) []*RequestInfo {
	var checks []*RequestInfo
	check := func(group, resource, sub, ns, name string) {
		checks = append(checks, &RequestInfo{IsResourceRequest: true, Verb: "impersonate", APIGroup: group, Resource: resource, Subresource: sub, Namespace: ns, Name: name})
	}
	if ns, name, ok := serviceAccountName(imp.user); ok {
		check("", "serviceaccounts", "", ns, name)
	} else {
		check("", "users", "", "", imp.user)
	}
	for _, g := range imp.groups {
		check("", "groups", "", "", g)
	}
	if imp.uid != "" {
		check(authenticationv1.GroupName, "uids", "", "", imp.uid)
	}
	for key, values := range imp.extra {
		for _, v := range values {
			check(authenticationv1.GroupName, "userextras", key, "", v)
		}
	}
	return checks
}

func serviceAccountName(user string) (namespace, name string, ok bool) {
	if !strings.HasPrefix(user, saUserPrefix) {
		return "", "", false
	}
	parts := strings.Split(strings.TrimPrefix(user, saUserPrefix), ":")
	if len(parts) != 2 || parts[0] == "" || parts[1] == "" {
		return "", "", false
	}
	return parts[0], parts[1], true
}

// impersonatedUser is the user a request acts as: the named user and groups, plus the groups every
// authenticated user (and every service account) has.
func impersonatedUser(imp *impersonation) *UserInfo {
	groups := append([]string(nil), imp.groups...)
	if ns, _, ok := serviceAccountName(imp.user); ok {
		groups = appendMissing(groups, "system:serviceaccounts", "system:serviceaccounts:"+ns)
	}
	if imp.user == "system:anonymous" {
		groups = appendMissing(groups, "system:unauthenticated")
	} else {
		groups = appendMissing(groups, "system:authenticated")
	}
	return &UserInfo{Name: imp.user, UID: imp.uid, Groups: groups, Extra: imp.extra}
}

func appendMissing(groups []string, add ...string) []string {
	for _, a := range add {
		found := false
		for _, g := range groups {
			if g == a {
				found = true
			}
		}
		if !found {
			groups = append(groups, a)
		}
	}
	return groups
}

// impersonate returns the user the request acts as after its Impersonate-* headers (the caller
// itself without any), or the error to answer: 400 for malformed headers, 403 for a right missing.
func (s *Server) impersonate(ctx context.Context, r *http.Request, caller *UserInfo) (*UserInfo, error) {
	imp, err := parseImpersonation(r.Header)
	if err != nil || imp == nil {
		return caller, err
	}
	for _, check := range impersonationChecks(imp) {
		if ok, reason := s.cfg.Authorizer.Authorize(ctx, caller, check); !ok {
			msg := fmt.Sprintf("User %q cannot %s", caller.Name, ForbiddenMessage(check))
			if reason != "" {
				msg += ": " + reason
			}
			return nil, apierrors.NewForbidden(schema.GroupResource{Group: check.APIGroup, Resource: check.Resource}, check.Name, fmt.Errorf("%s", msg))
		}
	}
	for key := range r.Header {
		if strings.HasPrefix(key, "Impersonate-") {
			r.Header.Del(key)
		}
	}
	return impersonatedUser(imp), nil
}
