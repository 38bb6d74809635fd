package apiserver

import (
	"github.com/skiff-sh/skiff/internal/apiserver/request"
	"net/http"
	"strings"

	"github.com/skiff-sh/skiff/internal/queryparam"
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

func isWatchQuery(r *http.Request) bool { return queryparam.Bool(r.URL.Query(), "watch") }

func splitPath(path string) []string {
	path = strings.Trim(path, "/")
	if path == "" {
		return nil
	}
	return strings.Split(path, "/")
}
