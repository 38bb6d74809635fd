package apiserver

import (
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
)

func TestParseRequestInfo(t *testing.T) {
	tests := []struct {
		name   string
		method string
		target string
		want   RequestInfo
	}{
		{
			name: "pod status", method: http.MethodGet, target: "/api/v1/namespaces/ns/pods/web/status",
			want: RequestInfo{IsResourceRequest: true, Verb: "get", APIPrefix: "api", APIVersion: "v1", Namespace: "ns", Resource: "pods", Name: "web", Subresource: "status"},
		},
		{
			name: "update pod status", method: http.MethodPut, target: "/api/v1/namespaces/ns/pods/web/status",
			want: RequestInfo{IsResourceRequest: true, Verb: "update", APIPrefix: "api", APIVersion: "v1", Namespace: "ns", Resource: "pods", Name: "web", Subresource: "status"},
		},
		{
			name: "namespace object", method: http.MethodGet, target: "/api/v1/namespaces/foo",
			want: RequestInfo{IsResourceRequest: true, Verb: "get", APIPrefix: "api", APIVersion: "v1", Resource: "namespaces", Name: "foo"},
		},
		{
			name: "namespace list", method: http.MethodGet, target: "/api/v1/namespaces",
			want: RequestInfo{IsResourceRequest: true, Verb: "list", APIPrefix: "api", APIVersion: "v1", Resource: "namespaces"},
		},
		{
			name: "namespace status", method: http.MethodPut, target: "/api/v1/namespaces/foo/status",
			want: RequestInfo{IsResourceRequest: true, Verb: "update", APIPrefix: "api", APIVersion: "v1", Resource: "namespaces", Name: "foo", Subresource: "status"},
		},
		{
			name: "namespace finalize", method: http.MethodPut, target: "/api/v1/namespaces/foo/finalize",
			want: RequestInfo{IsResourceRequest: true, Verb: "update", APIPrefix: "api", APIVersion: "v1", Resource: "namespaces", Name: "foo", Subresource: "finalize"},
		},
		{
			name: "deployments in all namespaces", method: http.MethodGet, target: "/apis/apps/v1/deployments",
			want: RequestInfo{IsResourceRequest: true, Verb: "list", APIPrefix: "apis", APIGroup: "apps", APIVersion: "v1", Resource: "deployments"},
		},
		{
			name: "deployment scale", method: http.MethodPatch, target: "/apis/apps/v1/namespaces/default/deployments/web/scale",
			want: RequestInfo{IsResourceRequest: true, Verb: "patch", APIPrefix: "apis", APIGroup: "apps", APIVersion: "v1", Namespace: "default", Resource: "deployments", Name: "web", Subresource: "scale"},
		},
		{
			name: "create in namespace", method: http.MethodPost, target: "/api/v1/namespaces/ns/configmaps",
			want: RequestInfo{IsResourceRequest: true, Verb: "create", APIPrefix: "api", APIVersion: "v1", Namespace: "ns", Resource: "configmaps"},
		},
		{
			name: "binding is a create", method: http.MethodPost, target: "/api/v1/namespaces/ns/pods/web/binding",
			want: RequestInfo{IsResourceRequest: true, Verb: "create", APIPrefix: "api", APIVersion: "v1", Namespace: "ns", Resource: "pods", Name: "web", Subresource: "binding"},
		},
		{
			name: "delete one", method: http.MethodDelete, target: "/api/v1/namespaces/ns/pods/web",
			want: RequestInfo{IsResourceRequest: true, Verb: "delete", APIPrefix: "api", APIVersion: "v1", Namespace: "ns", Resource: "pods", Name: "web"},
		},
		{
			name: "delete collection", method: http.MethodDelete, target: "/api/v1/namespaces/ns/pods",
			want: RequestInfo{IsResourceRequest: true, Verb: "deletecollection", APIPrefix: "api", APIVersion: "v1", Namespace: "ns", Resource: "pods"},
		},
		{
			name: "head is a read", method: http.MethodHead, target: "/api/v1/nodes/n1",
			want: RequestInfo{IsResourceRequest: true, Verb: "get", APIPrefix: "api", APIVersion: "v1", Resource: "nodes", Name: "n1"},
		},
		{
			name: "legacy watch prefix, collection", method: http.MethodGet, target: "/api/v1/watch/namespaces/ns/pods",
			want: RequestInfo{IsResourceRequest: true, Verb: "watch", APIPrefix: "api", APIVersion: "v1", Namespace: "ns", Resource: "pods"},
		},
		{
			name: "legacy watch prefix, one object", method: http.MethodGet, target: "/apis/apps/v1/watch/namespaces/ns/deployments/web",
			want: RequestInfo{IsResourceRequest: true, Verb: "watch", APIPrefix: "apis", APIGroup: "apps", APIVersion: "v1", Namespace: "ns", Resource: "deployments", Name: "web"},
		},
		{
			name: "legacy watch prefix, namespaces", method: http.MethodGet, target: "/api/v1/watch/namespaces",
			want: RequestInfo{IsResourceRequest: true, Verb: "watch", APIPrefix: "api", APIVersion: "v1", Resource: "namespaces"},
		},
		{
			name: "watch query", method: http.MethodGet, target: "/api/v1/namespaces/ns/pods?watch=true&resourceVersion=10",
			want: RequestInfo{IsResourceRequest: true, Verb: "watch", APIPrefix: "api", APIVersion: "v1", Namespace: "ns", Resource: "pods"},
		},
		{
			name: "watch=1 query", method: http.MethodGet, target: "/api/v1/pods?watch=1",
			want: RequestInfo{IsResourceRequest: true, Verb: "watch", APIPrefix: "api", APIVersion: "v1", Resource: "pods"},
		},
		{
			name: "watch=false is a list", method: http.MethodGet, target: "/api/v1/pods?watch=false",
			want: RequestInfo{IsResourceRequest: true, Verb: "list", APIPrefix: "api", APIVersion: "v1", Resource: "pods"},
		},
		{
			name: "watch query on a write is ignored", method: http.MethodPost, target: "/api/v1/namespaces/ns/pods?watch=true",
			want: RequestInfo{IsResourceRequest: true, Verb: "create", APIPrefix: "api", APIVersion: "v1", Namespace: "ns", Resource: "pods"},
		},
		{
			name: "trailing slash", method: http.MethodGet, target: "/api/v1/namespaces/ns/pods/",
			want: RequestInfo{IsResourceRequest: true, Verb: "list", APIPrefix: "api", APIVersion: "v1", Namespace: "ns", Resource: "pods"},
		},
		{name: "core discovery", method: http.MethodGet, target: "/api", want: RequestInfo{Verb: "get"}},
		{name: "core version discovery", method: http.MethodGet, target: "/api/v1", want: RequestInfo{Verb: "get", APIPrefix: "api", APIVersion: "v1"}},
		{name: "groups discovery", method: http.MethodGet, target: "/apis", want: RequestInfo{Verb: "get"}},
		{name: "group discovery", method: http.MethodGet, target: "/apis/apps", want: RequestInfo{Verb: "get", APIPrefix: "apis"}},
		{name: "group version discovery", method: http.MethodGet, target: "/apis/apps/v1/", want: RequestInfo{Verb: "get", APIPrefix: "apis", APIGroup: "apps", APIVersion: "v1"}},
		{name: "bare watch prefix", method: http.MethodGet, target: "/api/v1/watch", want: RequestInfo{Verb: "get", APIPrefix: "api", APIVersion: "v1"}},
		{name: "health", method: http.MethodGet, target: "/healthz", want: RequestInfo{Verb: "get"}},
		{name: "openapi", method: http.MethodGet, target: "/openapi/v3/apis/apps/v1", want: RequestInfo{Verb: "get"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(tt.method, tt.target, nil)
			got := ParseRequestInfo(r)
			want := tt.want
			want.Path = r.URL.Path
			got.Parts = nil
			if !reflect.DeepEqual(*got, want) {
				t.Errorf("ParseRequestInfo(%s %s)\n got  %+v\n want %+v", tt.method, tt.target, *got, want)
			}
		})
	}
}

// TestParseRequestInfoParts checks the path segments after the group/version that subresources
// such as pods/log and proxy read beyond the subresource name.
func TestParseRequestInfoParts(t *testing.T) {
	r := httptest.NewRequest(http.MethodGet, "/api/v1/namespaces/ns/pods/web/proxy/some/path", nil)
	got := ParseRequestInfo(r)
	if want := "pods/web/proxy/some/path"; strings.Join(got.Parts, "/") != want {
		t.Errorf("Parts = %q, want %q", strings.Join(got.Parts, "/"), want)
	}
	if got.Subresource != "proxy" || got.Name != "web" || got.Namespace != "ns" {
		t.Errorf("got %+v", got)
	}
}

func TestMetricsVerb(t *testing.T) {
	tests := []struct {
		method, target, contentType, want string
	}{
		{http.MethodPost, "/api/v1/namespaces/ns/pods", "", "POST"},
		{http.MethodPut, "/api/v1/namespaces/ns/pods/web", "", "PUT"},
		{http.MethodPatch, "/api/v1/namespaces/ns/pods/web", "application/merge-patch+json", "PATCH"},
		{http.MethodPatch, "/api/v1/namespaces/ns/pods/web", "application/apply-patch+yaml", "APPLY"},
		{http.MethodDelete, "/api/v1/namespaces/ns/pods/web", "", "DELETE"},
		{http.MethodDelete, "/api/v1/namespaces/ns/pods", "", "DELETECOLLECTION"},
		{http.MethodGet, "/api/v1/namespaces/ns/pods/web", "", "GET"},
		{http.MethodGet, "/api/v1/namespaces/ns/pods", "", "LIST"},
		{http.MethodGet, "/api/v1/namespaces/ns/pods?watch=true", "", "WATCH"},
		{http.MethodPost, "/api/v1/namespaces/ns/pods/web/eviction", "", "POST"},
		{http.MethodGet, "/readyz", "", "GET"},
	}
	for _, tt := range tests {
		r := httptest.NewRequest(tt.method, tt.target, nil)
		r.Header.Set("Content-Type", tt.contentType)
		if got := metricsVerb(ParseRequestInfo(r), r); got != tt.want {
			t.Errorf("metricsVerb(%s %s %s) = %s, want %s", tt.method, tt.target, tt.contentType, got, tt.want)
		}
	}
}

// TestAuthorizationInfo: the authorizer sees the single name a list or watch selects with
// fieldSelector=metadata.name=X (Kubernetes' request info), a Namespace object in its namespace,
// and the handlers' RequestInfo is left unchanged.
func TestAuthorizationInfo(t *testing.T) {
	tests := []struct {
		name, method, target string
		wantName, wantNS     string
	}{
		{name: "list by name", method: http.MethodGet, target: "/api/v1/namespaces/kube-system/configmaps?fieldSelector=metadata.name%3Dextension-apiserver-authentication",
			wantName: "extension-apiserver-authentication", wantNS: "kube-system"},
		{name: "watch by name", method: http.MethodGet, target: "/api/v1/namespaces/kube-system/configmaps?watch=true&fieldSelector=metadata.name%3Dcm",
			wantName: "cm", wantNS: "kube-system"},
		{name: "group list by name with ==", method: http.MethodGet, target: "/apis/apps/v1/namespaces/ns/deployments?fieldSelector=metadata.name%3D%3Dweb",
			wantName: "web", wantNS: "ns"},
		{name: "not equal selects no name", method: http.MethodGet, target: "/api/v1/namespaces/ns/configmaps?fieldSelector=metadata.name%21%3Dcm", wantNS: "ns"},
		{name: "other field", method: http.MethodGet, target: "/api/v1/pods?fieldSelector=spec.nodeName%3Dn1"},
		{name: "name and another field", method: http.MethodGet, target: "/api/v1/namespaces/ns/pods?fieldSelector=metadata.name%3Dp,spec.nodeName%3Dn1",
			wantName: "p", wantNS: "ns"},
		{name: "invalid name ignored", method: http.MethodGet, target: "/api/v1/namespaces/ns/configmaps?fieldSelector=metadata.name%3D..", wantNS: "ns"},
		{name: "bad selector ignored", method: http.MethodGet, target: "/api/v1/namespaces/ns/configmaps?fieldSelector=%3D%3D%3D", wantNS: "ns"},
		{name: "legacy watch path takes no name", method: http.MethodGet, target: "/api/v1/watch/namespaces/ns/configmaps?fieldSelector=metadata.name%3Dcm", wantNS: "ns"},
		{name: "deletecollection takes no name", method: http.MethodDelete, target: "/api/v1/namespaces/ns/configmaps?fieldSelector=metadata.name%3Dcm", wantNS: "ns"},
		{name: "namespace object in its namespace", method: http.MethodGet, target: "/api/v1/namespaces/foo", wantName: "foo", wantNS: "foo"},
		{name: "namespace list by name stays cluster-wide", method: http.MethodGet, target: "/api/v1/namespaces?fieldSelector=metadata.name%3Dfoo", wantName: "foo"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(tt.method, tt.target, nil)
			info := ParseRequestInfo(r)
			before := *info
			got := authorizationInfo(info, r.URL.Query())
			if got.Name != tt.wantName || got.Namespace != tt.wantNS {
				t.Errorf("authorization info name/namespace = %q/%q, want %q/%q", got.Name, got.Namespace, tt.wantName, tt.wantNS)
			}
			if !reflect.DeepEqual(*info, before) {
				t.Errorf("request info changed: %+v, was %+v", *info, before)
			}
		})
	}
}
