package apiserver

import (
	"net/http"
	"net/url"
	"strings"

	"k8s.io/apimachinery/pkg/api/validate/content"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/skiff-sh/skiff/internal/queryparam"
	"github.com/skiff-sh/skiff/internal/request"
)

// RequestInfo is what a request's path and method say; it lives in package request so that
// authorizers need not import the HTTP layer.
type RequestInfo = request.RequestInfo

// namespaceSubresources are the subresources of the Namespace object itself, which would otherwise
// be read as a resource inside the namespace (/api/v1/namespaces/foo/status).
var namespaceSubresources = map[string]bool{"status": true, "finalize": true}

// ParseRequestInfo reads a request as Kubernetes' API server does. Non-resource paths (discovery,
// health, OpenAPI) come back with IsResourceRequest false.
func ParseRequestInfo(r *http.Request) *RequestInfo {
	info := &RequestInfo{Path: r.URL.Path, Verb: strings.ToLower(r.Method)}
	parts := splitPath(r.URL.Path)
	if len(parts) < 2 || (parts[0] != "api" && parts[0] != "apis") {
		return info
	}
	info.APIPrefix = parts[0]
	parts = parts[1:]
	if info.APIPrefix == "apis" {
		if len(parts) < 2 {
			return info // /apis or /apis/<group>: discovery
		}
		info.APIGroup = parts[0]
		parts = parts[1:]
	}
	info.APIVersion = parts[0]
	parts = parts[1:]
	if len(parts) == 0 {
		return info // /api/v1 or /apis/g/v: discovery
	}
	info.IsResourceRequest = true

	// The legacy /watch/ prefix turns a GET into a watch.
	isWatchPath := false
	if parts[0] == "watch" {
		isWatchPath = true
		parts = parts[1:]
		if len(parts) == 0 {
			info.IsResourceRequest = false
			return info
		}
	}

	if parts[0] == "namespaces" {
		if len(parts) > 1 {
			info.Namespace = parts[1]
			if len(parts) > 2 && !namespaceSubresources[parts[2]] {
				parts = parts[2:]
			}
		}
	}
	info.Parts = parts
	switch {
	case len(parts) >= 3:
		info.Subresource = parts[2]
		fallthrough
	case len(parts) == 2:
		info.Name = parts[1]
		fallthrough
	case len(parts) == 1:
		info.Resource = parts[0]
	}
	if info.Resource == "namespaces" {
		// The namespace object itself is cluster-scoped; its name is not a namespace of the request.
		info.Namespace = ""
	}

	switch r.Method {
	case http.MethodGet, http.MethodHead:
		switch {
		case isWatchPath || isWatchQuery(r):
			info.Verb = "watch"
		case info.Name == "":
			info.Verb = "list"
		default:
			info.Verb = "get"
		}
	case http.MethodPost:
		info.Verb = "create"
	case http.MethodPut:
		info.Verb = "update"
	case http.MethodPatch:
		info.Verb = "patch"
	case http.MethodDelete:
		if info.Name == "" {
			info.Verb = "deletecollection"
		} else {
			info.Verb = "delete"
		}
	}
	return info
}

// authorizationInfo is what the authorizer is asked about info. Kubernetes' request info names
// the object of a list or watch whose field selector requires one metadata.name, so a rule limited
// by resourceNames allows watching that single object (upstream kube-scheduler lists
// kube-system/extension-apiserver-authentication this way, with only a resourceNames grant). A
// Namespace object is authorized in that namespace. info itself is
// left as it is: the handlers read Name as the path's.
func authorizationInfo(info *RequestInfo, query url.Values) *RequestInfo {
	out := info
	if info.Resource == "namespaces" && info.Name != "" {
		// Kubernetes authorizes a request on a Namespace object in that namespace: a RoleBinding
		// granting namespaces there lets its subject read that one namespace (the view role's
		// rule relies on it).
		copied := *info
		copied.Namespace = info.Name
		out = &copied
	}
	if info.IsResourceRequest && info.Name == "" && (info.Verb == "list" || info.Verb == "watch") && !isWatchPathInfo(info) {
		if name := fieldSelectorName(query); name != "" {
			copied := *out
			copied.Name = name
			out = &copied
		}
	}
	return out
}

// isWatchPathInfo says whether the request used the legacy /watch/ path prefix, whose verb came
// from the path: Kubernetes takes no name from its field selector then.
func isWatchPathInfo(info *RequestInfo) bool {
	parts := splitPath(info.Path)
	skip := 2 // api/v1
	if info.APIPrefix == "apis" {
		skip = 3 // apis/group/version
	}
	return len(parts) > skip && parts[skip] == "watch"
}

// fieldSelectorName is the metadata.name a fieldSelector requires exactly, when it is a valid name;
// "" otherwise (no selector, a bad one, or no single name).
func fieldSelectorName(query url.Values) string {
	raw := query.Get("fieldSelector")
	if raw == "" {
		return ""
	}
	sel, err := fields.ParseSelector(raw)
	if err != nil {
		return ""
	}
	name, ok := sel.RequiresExactMatch("metadata.name")
	if !ok || len(content.IsPathSegmentName(name)) > 0 {
		return ""
	}
	return name
}

func isWatchQuery(r *http.Request) bool { return queryparam.Bool(r.URL.Query(), "watch") }

func splitPath(path string) []string {
	path = strings.Trim(path, "/")
	if path == "" {
		return nil
	}
	return strings.Split(path, "/")
}
