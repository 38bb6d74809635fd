package openapi

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	openapiv3 "github.com/google/gnostic-models/openapiv3"
	"google.golang.org/protobuf/proto"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/openapi"
	"k8s.io/client-go/openapi3"
	"k8s.io/client-go/rest"
	"k8s.io/kube-openapi/pkg/spec3"
	openapiproto "k8s.io/kube-openapi/pkg/util/proto"

	"github.com/skiff-sh/skiff/internal/registry"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

func discoveryClient(t *testing.T, url string) *discovery.DiscoveryClient {
	t.Helper()
	client, err := discovery.NewDiscoveryClientForConfig(&rest.Config{Host: url})
	if err != nil {
		t.Fatalf("discovery client: %v", err)
	}
	return client
}

// TestV2ProtobufParsesLikeExplain fetches /openapi/v2 the way client-go does (protobuf) and walks
// Pod.spec.containers with kube-openapi's proto models, as kubectl explain --output=plaintext-openapiv2 does.
func TestV2ProtobufParsesLikeExplain(t *testing.T) {
	_, server := newTestServer(t)
	document, err := discoveryClient(t, server.URL).OpenAPISchema()
	if err != nil {
		t.Fatalf("OpenAPISchema: %v", err)
	}
	models, err := openapiproto.NewOpenAPIData(document)
	if err != nil {
		t.Fatalf("NewOpenAPIData: %v", err)
	}

	podModel := modelForKind(t, models, schema.GroupVersionKind{Version: "v1", Kind: "Pod"})
	spec := fieldOf(t, podModel, "spec")
	containers := fieldOf(t, spec, "containers")
	array, ok := containers.(*openapiproto.Array)
	if !ok {
		t.Fatalf("Pod.spec.containers is %T, want an array", containers)
	}
	if got := array.GetExtensions()["x-kubernetes-patch-merge-key"]; got != "name" {
		t.Errorf("containers patch merge key = %v, want name", got)
	}
	if got := array.GetExtensions()["x-kubernetes-patch-strategy"]; got != "merge" {
		t.Errorf("containers patch strategy = %v, want merge", got)
	}
	image := fieldOf(t, array.SubType, "image")
	if prim, ok := image.(*openapiproto.Primitive); !ok || prim.Type != "string" {
		t.Errorf("Container.image = %#v, want a string primitive", image)
	}

	// Scale carries autoscaling/v1's kind even though only a subresource serves it.
	modelForKind(t, models, schema.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"})
}

// modelForKind finds the model tagged with gvk, as kubectl's openapi resources lookup does.
func modelForKind(t *testing.T, models openapiproto.Models, gvk schema.GroupVersionKind) openapiproto.Schema {
	t.Helper()
	for _, name := range models.ListModels() {
		model := models.LookupModel(name)
		list, _ := model.GetExtensions()[extensionGVK].([]interface{})
		for _, entry := range list {
			m, _ := entry.(map[interface{}]interface{})
			if m["group"] == gvk.Group && m["version"] == gvk.Version && m["kind"] == gvk.Kind {
				return model
			}
		}
	}
	t.Fatalf("no model carries %v", gvk)
	return nil
}

func fieldOf(t *testing.T, s openapiproto.Schema, name string) openapiproto.Schema {
	t.Helper()
	if ref, ok := s.(openapiproto.Reference); ok {
		s = ref.SubSchema()
	}
	kind, ok := s.(*openapiproto.Kind)
	if !ok {
		t.Fatalf("%s is %T, want a kind with fields", s.GetPath(), s)
	}
	field, ok := kind.Fields[name]
	if !ok {
		t.Fatalf("%s has no field %q", s.GetPath(), name)
	}
	if ref, ok := field.(openapiproto.Reference); ok {
		return ref.SubSchema()
	}
	return field
}

func TestV2JSONDocument(t *testing.T) {
	_, server := newTestServer(t)
	resp := get(t, server.URL+"/openapi/v2", "application/json")
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET /openapi/v2 = %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var swagger spec.Swagger
	if err := json.Unmarshal(readBody(t, resp), &swagger); err != nil {
		t.Fatalf("decode v2: %v", err)
	}

	tests := []struct {
		path, method, operationID, action string
		wantParams                        []string
		wantConsumes                      []string
		response                          string
	}{
		{"/api/v1/namespaces/{namespace}/pods", "get", "listCoreV1NamespacedPod", "list",
			[]string{"allowWatchBookmarks", "continue", "fieldSelector", "labelSelector", "limit", "resourceVersion", "resourceVersionMatch", "sendInitialEvents", "timeoutSeconds", "watch"}, nil, "io.k8s.api.core.v1.PodList"},
		{"/api/v1/namespaces/{namespace}/pods", "post", "createCoreV1NamespacedPod", "post",
			[]string{"body", "dryRun", "fieldManager", "fieldValidation"}, nil, "io.k8s.api.core.v1.Pod"},
		{"/api/v1/namespaces/{namespace}/pods", "delete", "deleteCoreV1CollectionNamespacedPod", "deletecollection",
			[]string{"body", "gracePeriodSeconds", "propagationPolicy", "orphanDependents", "labelSelector", "dryRun"}, nil, "io.k8s.apimachinery.pkg.apis.meta.v1.Status"},
		{"/api/v1/namespaces/{namespace}/pods/{name}", "get", "readCoreV1NamespacedPod", "get", nil, nil, "io.k8s.api.core.v1.Pod"},
		{"/api/v1/namespaces/{namespace}/pods/{name}", "put", "replaceCoreV1NamespacedPod", "put",
			[]string{"body", "dryRun", "fieldManager", "fieldValidation"}, nil, "io.k8s.api.core.v1.Pod"},
		{"/api/v1/namespaces/{namespace}/pods/{name}", "patch", "patchCoreV1NamespacedPod", "patch",
			[]string{"body", "dryRun", "fieldManager", "fieldValidation", "force"},
			[]string{"application/json-patch+json", "application/merge-patch+json", "application/strategic-merge-patch+json", "application/apply-patch+yaml"}, "io.k8s.api.core.v1.Pod"},
		// Pods delete gracefully, so a delete answers with the pod.
		{"/api/v1/namespaces/{namespace}/pods/{name}", "delete", "deleteCoreV1NamespacedPod", "delete",
			[]string{"body", "dryRun", "gracePeriodSeconds", "propagationPolicy"}, nil, "io.k8s.api.core.v1.Pod"},
		{"/api/v1/namespaces/{name}", "delete", "deleteCoreV1Namespace", "delete", nil, nil, "io.k8s.apimachinery.pkg.apis.meta.v1.Status"},
		{"/api/v1/pods", "get", "listCoreV1PodForAllNamespaces", "list", []string{"labelSelector", "watch"}, nil, "io.k8s.api.core.v1.PodList"},
		{"/api/v1/watch/namespaces/{namespace}/pods/{name}", "get", "watchCoreV1NamespacedPod", "watch", nil, nil, "io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent"},
		{"/api/v1/watch/pods", "get", "watchCoreV1PodListForAllNamespaces", "watchlist", nil, nil, "io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent"},
		{"/api/v1/namespaces/{namespace}/pods/{name}/status", "patch", "patchCoreV1NamespacedPodStatus", "patch",
			[]string{"fieldValidation", "force"}, nil, "io.k8s.api.core.v1.Pod"},
		{"/api/v1/namespaces", "get", "listCoreV1Namespace", "list", nil, nil, "io.k8s.api.core.v1.NamespaceList"},
		{"/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale", "get", "readAppsV1NamespacedDeploymentScale", "get", nil, nil, "io.k8s.api.autoscaling.v1.Scale"},
		{"/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale", "patch", "patchAppsV1NamespacedDeploymentScale", "patch", []string{"fieldValidation"}, nil, "io.k8s.api.autoscaling.v1.Scale"},
		{"/apis/rbac.authorization.k8s.io/v1/clusterroles", "get", "listRbacAuthorizationV1ClusterRole", "list", nil, nil, "io.k8s.api.rbac.v1.ClusterRoleList"},
	}
	for _, tc := range tests {
		t.Run(tc.operationID, func(t *testing.T) {
			item, ok := swagger.Paths.Paths[tc.path]
			if !ok {
				t.Fatalf("no path %s", tc.path)
			}
			op := operationOf(item.PathItemProps, tc.method)
			if op == nil {
				t.Fatalf("%s has no %s operation", tc.path, tc.method)
			}
			if op.ID != tc.operationID {
				t.Errorf("operationId = %q, want %q", op.ID, tc.operationID)
			}
			if got := op.Extensions[extensionAction]; got != tc.action {
				t.Errorf("x-kubernetes-action = %v, want %s", got, tc.action)
			}
			if _, ok := op.Extensions[extensionGVK].(map[string]interface{}); !ok {
				t.Errorf("x-kubernetes-group-version-kind = %#v, want one group/version/kind map", op.Extensions[extensionGVK])
			}
			names := map[string]bool{}
			for _, p := range op.Parameters {
				names[p.Name] = true
			}
			for _, want := range tc.wantParams {
				if !names[want] {
					t.Errorf("missing parameter %q (have %v)", want, names)
				}
			}
			if tc.wantConsumes != nil && strings.Join(op.Consumes, ",") != strings.Join(tc.wantConsumes, ",") {
				t.Errorf("consumes = %v, want %v", op.Consumes, tc.wantConsumes)
			}
			ok200 := op.Responses.StatusCodeResponses[http.StatusOK]
			if got := strings.TrimPrefix(ok200.Schema.Ref.String(), v2RefPrefix); got != tc.response {
				t.Errorf("200 response = %q, want %q", got, tc.response)
			}
			if _, ok := swagger.Definitions[tc.response]; !ok {
				t.Errorf("definition %s missing from the document", tc.response)
			}
		})
	}

	// ClusterRoles only serve get/list/watch.
	if item := swagger.Paths.Paths["/apis/rbac.authorization.k8s.io/v1/clusterroles/{name}"]; item.Patch != nil || item.Put != nil || item.Delete != nil {
		t.Errorf("read-only clusterroles advertise writes: %+v", item.PathItemProps)
	}
	if _, ok := swagger.Paths.Paths["/apis/rbac.authorization.k8s.io/v1/clusterroles"]; !ok {
		t.Errorf("clusterroles collection missing")
	}
	// Types nothing refers to are left out.
	if _, ok := swagger.Definitions["io.k8s.api.batch.v1.Job"]; ok {
		t.Errorf("unserved Job definition included")
	}
	// v2 does not carry defaults (they are not allowed beside $ref there).
	if strings.Contains(string(mustJSON(t, swagger.Definitions["io.k8s.api.core.v1.PodSpec"])), `"default"`) {
		t.Errorf("v2 PodSpec keeps defaults")
	}
	if got := swagger.Definitions["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]; got.Format != "int-or-string" || len(got.OneOf) != 0 {
		t.Errorf("v2 IntOrString = %+v, want the v2 form (format int-or-string, no oneOf)", got.SchemaProps)
	}
}

func operationOf(item spec.PathItemProps, method string) *spec.Operation {
	switch method {
	case "get":
		return item.Get
	case "put":
		return item.Put
	case "post":
		return item.Post
	case "patch":
		return item.Patch
	case "delete":
		return item.Delete
	}
	return nil
}

// TestV3ThroughClientGo reads the documents with client-go's OpenAPI v3 client and root, the way
// kubectl explain and kubectl apply's fieldValidation check do.
func TestV3ThroughClientGo(t *testing.T) {
	_, server := newTestServer(t)
	client := discoveryClient(t, server.URL)
	paths, err := client.OpenAPIV3().Paths()
	if err != nil {
		t.Fatalf("Paths: %v", err)
	}
	for _, want := range []string{"api/v1", "apis/apps/v1", "apis/rbac.authorization.k8s.io/v1"} {
		if _, ok := paths[want]; !ok {
			t.Errorf("index lacks %s (has %v)", want, keys(paths))
		}
	}

	raw, err := paths["api/v1"].Schema("application/json")
	if err != nil {
		t.Fatalf("api/v1 schema: %v", err)
	}
	var doc spec3.OpenAPI
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("decode api/v1: %v", err)
	}
	pod, ok := doc.Components.Schemas["io.k8s.api.core.v1.Pod"]
	if !ok {
		t.Fatalf("api/v1 lacks io.k8s.api.core.v1.Pod")
	}
	if !hasKind(pod.Extensions, schema.GroupVersionKind{Version: "v1", Kind: "Pod"}) {
		t.Errorf("Pod GVK extension = %#v", pod.Extensions[extensionGVK])
	}
	containers := doc.Components.Schemas["io.k8s.api.core.v1.PodSpec"].Properties["containers"]
	for ext, want := range map[string]string{"x-kubernetes-patch-strategy": "merge", "x-kubernetes-patch-merge-key": "name", "x-kubernetes-list-type": "map"} {
		if got := containers.Extensions[ext]; got != want {
			t.Errorf("PodSpec.containers %s = %v, want %s", ext, got, want)
		}
	}
	// Schemas reached from core/v1 types are included; other groups' are not.
	if _, ok := doc.Components.Schemas["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"]; !ok {
		t.Errorf("api/v1 lacks ObjectMeta")
	}
	if _, ok := doc.Components.Schemas["io.k8s.api.apps.v1.Deployment"]; ok {
		t.Errorf("api/v1 includes apps/v1 Deployment")
	}
	// v3 keeps the v3 form of int-or-string.
	if got := doc.Components.Schemas["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]; got == nil || len(got.OneOf) != 2 {
		t.Errorf("v3 IntOrString = %+v, want oneOf integer/string", got)
	}

	// The protobuf form decodes too.
	pb, err := paths["apis/apps/v1"].Schema(openapi.ContentTypeOpenAPIV3PB)
	if err != nil {
		t.Fatalf("apps/v1 protobuf: %v", err)
	}
	var pbDoc openapiv3.Document
	if err := proto.Unmarshal(pb, &pbDoc); err != nil {
		t.Fatalf("decode apps/v1 protobuf: %v", err)
	}
	if pbDoc.GetComponents().GetSchemas() == nil {
		t.Errorf("protobuf apps/v1 has no schemas")
	}

	// kubectl apply asks whether the server takes fieldValidation for a kind before sending it.
	root := openapi3.NewRoot(client.OpenAPIV3())
	for _, gvk := range []schema.GroupVersionKind{
		{Version: "v1", Kind: "Pod"},
		{Group: "apps", Version: "v1", Kind: "Deployment"},
		{Group: "autoscaling", Version: "v1", Kind: "Scale"},
	} {
		gvSpec, err := root.GVSpec(schema.GroupVersion{Group: gvk.Group, Version: gvk.Version})
		if gvk.Kind == "Scale" {
			gvSpec, err = root.GVSpec(schema.GroupVersion{Group: "apps", Version: "v1"})
		}
		if err != nil {
			t.Fatalf("GVSpec %v: %v", gvk, err)
		}
		if err := supportsQueryParam(gvSpec, gvk, "fieldValidation"); err != nil {
			t.Errorf("%v: %v", gvk, err)
		}
	}
}

// supportsQueryParam mirrors kubectl's check: every PATCH operation of the kind must list the
// parameter among its own (not the path's) parameters.
func supportsQueryParam(doc *spec3.OpenAPI, gvk schema.GroupVersionKind, param string) error {
	found := 0
	for path, item := range doc.Paths.Paths {
		op := item.Patch
		if op == nil {
			continue
		}
		m, ok := op.Extensions[extensionGVK].(map[string]interface{})
		if !ok || m["group"] != gvk.Group || m["version"] != gvk.Version || m["kind"] != gvk.Kind {
			continue
		}
		found++
		has := false
		for _, p := range op.Parameters {
			if p.Name == param && p.In == "query" {
				has = true
			}
		}
		if !has {
			return &paramError{path: path, param: param}
		}
	}
	if found == 0 {
		return &paramError{param: param}
	}
	return nil
}

type paramError struct{ path, param string }

func (e *paramError) Error() string {
	if e.path == "" {
		return "no PATCH operation for the kind"
	}
	return "PATCH " + e.path + " lacks " + e.param
}

func TestV3Caching(t *testing.T) {
	_, server := newTestServer(t)
	var index struct {
		Paths map[string]struct {
			ServerRelativeURL string `json:"serverRelativeURL"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(readBody(t, get(t, server.URL+"/openapi/v3", "")), &index); err != nil {
		t.Fatalf("decode index: %v", err)
	}
	url := index.Paths["apis/apps/v1"].ServerRelativeURL
	if !strings.HasPrefix(url, "/openapi/v3/apis/apps/v1?hash=") {
		t.Fatalf("apps/v1 URL = %q", url)
	}

	hashed := get(t, server.URL+url, "application/json")
	readBody(t, hashed)
	if hashed.StatusCode != http.StatusOK {
		t.Fatalf("GET %s = %d", url, hashed.StatusCode)
	}
	if got := hashed.Header.Get("Cache-Control"); got != "public, immutable" {
		t.Errorf("Cache-Control = %q", got)
	}
	if got, want := hashed.Header.Get("Expires"), testNow.AddDate(1, 0, 0).Format(http.TimeFormat); got != want {
		t.Errorf("Expires = %q, want %q", got, want)
	}
	etag := hashed.Header.Get("Etag")
	if etag != `"`+strings.TrimPrefix(url, "/openapi/v3/apis/apps/v1?hash=")+`"` {
		t.Errorf("ETag %s does not match the hash in %s", etag, url)
	}

	unhashed := get(t, server.URL+"/openapi/v3/apis/apps/v1", "application/json")
	readBody(t, unhashed)
	if unhashed.Header.Get("Cache-Control") != "" {
		t.Errorf("unhashed request got Cache-Control %q", unhashed.Header.Get("Cache-Control"))
	}

	req, _ := http.NewRequest(http.MethodGet, server.URL+"/openapi/v3/apis/apps/v1", nil)
	req.Header.Set("If-None-Match", etag)
	notModified, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("conditional GET: %v", err)
	}
	readBody(t, notModified)
	if notModified.StatusCode != http.StatusNotModified {
		t.Errorf("If-None-Match with the current ETag = %d, want 304", notModified.StatusCode)
	}

	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	stale, err := noRedirect.Get(server.URL + "/openapi/v3/apis/apps/v1?hash=0000")
	if err != nil {
		t.Fatalf("stale GET: %v", err)
	}
	readBody(t, stale)
	if stale.StatusCode != http.StatusMovedPermanently || stale.Header.Get("Location") != url {
		t.Errorf("stale hash = %d to %q, want 301 to %q", stale.StatusCode, stale.Header.Get("Location"), url)
	}

	missing := get(t, server.URL+"/openapi/v3/apis/batch/v1", "application/json")
	readBody(t, missing)
	if missing.StatusCode != http.StatusNotFound {
		t.Errorf("unknown group-version = %d, want 404", missing.StatusCode)
	}
	// client-go asks for v2 with the "@" media type; upstream answers with the "." one.
	pb := get(t, server.URL+"/openapi/v2", "application/com.github.proto-openapi.spec.v2@v1.0+protobuf")
	readBody(t, pb)
	if got := pb.Header.Get("Content-Type"); pb.StatusCode != http.StatusOK || got != "application/com.github.proto-openapi.spec.v2.v1.0+protobuf" {
		t.Errorf("v2 protobuf = %d %q", pb.StatusCode, got)
	}
	unacceptable := get(t, server.URL+"/openapi/v2", "text/html")
	readBody(t, unacceptable)
	if unacceptable.StatusCode != http.StatusNotAcceptable {
		t.Errorf("Accept text/html = %d, want 406", unacceptable.StatusCode)
	}
}

func TestUpdateAddsGroupVersion(t *testing.T) {
	svc, server := newTestServer(t)
	before := readBody(t, get(t, server.URL+"/openapi/v3/api/v1", "application/json"))

	cronJobs := makeResource(schema.GroupVersion{Group: "batch", Version: "v1"}, "CronJob", "cronjobs",
		newCronJob, newCronJobList).namespaced().status().obj()
	if err := svc.Update(append(testResources(), cronJobs)); err != nil {
		t.Fatalf("Update: %v", err)
	}
	paths, err := discoveryClient(t, server.URL).OpenAPIV3().Paths()
	if err != nil {
		t.Fatalf("Paths: %v", err)
	}
	if _, ok := paths["apis/batch/v1"]; !ok {
		t.Fatalf("batch/v1 missing after Update: %v", keys(paths))
	}
	after := readBody(t, get(t, server.URL+"/openapi/v3/api/v1", "application/json"))
	if string(before) != string(after) {
		t.Errorf("api/v1 document changed although its resources did not")
	}

	// A resource whose type has no definition is refused and the old documents stay.
	bad := makeResource(schema.GroupVersion{Group: "example.com", Version: "v1"}, "Widget", "widgets",
		newUndocumented, newUndocumented).obj()
	if err := svc.Update([]*registry.Resource{bad}); err == nil {
		t.Errorf("Update with an undocumented type succeeded")
	}
	if resp := get(t, server.URL+"/openapi/v3/apis/batch/v1", "application/json"); resp.StatusCode != http.StatusOK {
		t.Errorf("documents replaced by a failed Update: %d", resp.StatusCode)
	}
}

func get(t *testing.T, url, accept string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatalf("request: %v", err)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp
}

func readBody(t *testing.T, resp *http.Response) []byte {
	t.Helper()
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	return body
}

func mustJSON(t *testing.T, v interface{}) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	return b
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestConcurrentServeAndUpdate is for -race: documents are read (the protobuf form built lazily)
// while Update swaps them.
func TestConcurrentServeAndUpdate(t *testing.T) {
	svc, server := newTestServer(t)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 3; i++ {
			if err := svc.Update(testResources()); err != nil {
				t.Errorf("Update: %v", err)
			}
		}
	}()
	errs := make(chan error, 4)
	for i := 0; i < 4; i++ {
		go func() {
			req, _ := http.NewRequest(http.MethodGet, server.URL+"/openapi/v2", nil)
			req.Header.Set("Accept", mediaV2ProtobufDeprecated)
			resp, err := http.DefaultClient.Do(req)
			if err == nil {
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if err == nil && resp.StatusCode != http.StatusOK {
					err = fmt.Errorf("status %s", resp.Status)
				}
			}
			errs <- err
		}()
	}
	for i := 0; i < 4; i++ {
		if err := <-errs; err != nil {
			t.Errorf("GET: %v", err)
		}
	}
	<-done
}

// TestDocumentsRenderedOnFirstRequest: New and Update render no document (a start renders nothing
// no client asked for); the first request renders the current set once, and an Update after it
// is rendered at the next request, not before.
func TestDocumentsRenderedOnFirstRequest(t *testing.T) {
	svc, server := newTestServer(t)
	rendered := func() bool {
		svc.mu.RLock()
		defer svc.mu.RUnlock()
		return svc.pending.docs != nil
	}
	if rendered() {
		t.Fatal("New rendered the documents")
	}
	if resp := get(t, server.URL+"/openapi/v3", "application/json"); resp.StatusCode != http.StatusOK {
		t.Fatalf("index: %d", resp.StatusCode)
	}
	if !rendered() {
		t.Fatal("a request left the documents unrendered")
	}
	first := svc.pending
	if resp := get(t, server.URL+"/openapi/v2", "application/json"); resp.StatusCode != http.StatusOK {
		t.Fatalf("v2: %d", resp.StatusCode)
	}
	if svc.pending != first {
		t.Fatal("a second request rendered again")
	}
	if err := svc.Update(testResources()); err != nil {
		t.Fatal(err)
	}
	if rendered() {
		t.Fatal("Update rendered the documents")
	}
	if resp := get(t, server.URL+"/openapi/v3/api/v1", "application/json"); resp.StatusCode != http.StatusOK || !rendered() {
		t.Fatalf("after Update: %d, rendered %v", resp.StatusCode, rendered())
	}
}

// TestV3IndexListsOthers: the index names the documents aggregated API servers serve beside the
// server's own, and an own document keeps its entry when another names the same prefix.
func TestV3IndexListsOthers(t *testing.T) {
	svc, _ := newTestServer(t)
	rec := httptest.NewRecorder()
	svc.ServeV3(rec, httptest.NewRequest(http.MethodGet, "/openapi/v3", nil), map[string]string{
		"apis/wardle.example.com/v1beta1": "/openapi/v3/apis/wardle.example.com/v1beta1",
		"api/v1":                          "/elsewhere",
	})
	var index v3Index
	if err := json.Unmarshal(rec.Body.Bytes(), &index); err != nil {
		t.Fatalf("decode index: %v (%s)", err, rec.Body)
	}
	if got := index.Paths["apis/wardle.example.com/v1beta1"].ServerRelativeURL; got != "/openapi/v3/apis/wardle.example.com/v1beta1" {
		t.Errorf("aggregated entry %q", got)
	}
	if got := index.Paths["api/v1"].ServerRelativeURL; !strings.HasPrefix(got, "/openapi/v3/api/v1?hash=") {
		t.Errorf("api/v1 entry %q, want the server's own document", got)
	}
	if _, ok := index.Paths["apis/apps/v1"]; !ok {
		t.Error("the merged index lost apis/apps/v1")
	}
}
