package apiserver

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/skiff-sh/skiff/internal/request"
)

// Fuzz inputs pick among these with a byte, so every fuzzed body is tried in every combination.
var (
	fuzzContentTypes     = []string{"application/json", "application/yaml", runtime.ContentTypeProtobuf, "", "text/plain"}
	fuzzFieldValidations = []string{"Strict", "Warn", "Ignore"}
	fuzzPatchTypes       = []types.PatchType{types.JSONPatchType, types.MergePatchType, types.StrategicMergePatchType}
	fuzzCreateResources  = []schema.GroupVersionResource{podsGVR, deploymentsGVR, {Version: "v1", Resource: "services"}}
)

func pick[T any](list []T, i uint8) T { return list[int(i)%len(list)] }

// seedBodies are the request bodies in testdata/seeds plus a few hand-made edge cases.
func seedBodies(t testing.TB) [][]byte {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", "seeds", "*"))
	if err != nil {
		t.Fatal(err)
	}
	var bodies [][]byte
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		bodies = append(bodies, data)
	}
	return append(bodies,
		[]byte(``), []byte(`null`), []byte(`{}`), []byte(`[]`), []byte(`"pod"`),
		[]byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x","namespace":"other"}}`),
		[]byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x","resourceVersion":"5"},"spec":{"containers":[{"name":"a","image":"b"}]}}`),
		[]byte(`{"kind":"Pod","apiVersion":"v1","spec":{"containers":[{"name":"a","image":"b","resources":{"requests":{"cpu":"1e400"}}}]}}`),
		[]byte("apiVersion: v1\nkind: Pod\nmetadata: &a\n  name: *a\n"),
		[]byte("k8s\x00\x0a\x02\x76\x31\x12\x03Pod"),
	)
}

// wantAPIError fails unless err is a Kubernetes API status with one of the codes.
func wantAPIError(t *testing.T, err error, codes ...int32) {
	t.Helper()
	st, ok := err.(apierrors.APIStatus)
	if !ok {
		t.Fatalf("error %v (%T) is not an API status", err, err)
	}
	code := st.Status().Code
	for _, c := range codes {
		if code == c {
			return
		}
	}
	t.Fatalf("error code %d (%s), want one of %v", code, st.Status().Message, codes)
}

func FuzzParseRequestInfo(f *testing.F) {
	for _, seed := range []struct{ method, target string }{
		{"GET", "/api/v1/namespaces/ns/pods/name/status"},
		{"PUT", "/api/v1/namespaces/foo/finalize"},
		{"GET", "/api/v1/namespaces/foo"},
		{"GET", "/apis/apps/v1/deployments?watch=true"},
		{"GET", "/api/v1/watch/namespaces/ns/pods/x"},
		{"DELETE", "/apis/batch/v1/namespaces/ns/jobs"},
		{"POST", "/api/v1/namespaces/ns/pods/x/binding"},
		{"PATCH", "//api//v1///namespaces/"},
		{"OPTIONS", "/apis"},
		{"GET", "/api/v1/watch"},
	} {
		f.Add(seed.method, seed.target)
	}
	f.Fuzz(func(t *testing.T, method, target string) {
		u, err := url.ParseRequestURI(target)
		if err != nil {
			return
		}
		info := ParseRequestInfo(&http.Request{Method: method, URL: u})
		if info.Path != u.Path {
			t.Errorf("Path %q, want %q", info.Path, u.Path)
		}
		if !info.IsResourceRequest {
			return
		}
		if info.APIPrefix != "api" && info.APIPrefix != "apis" {
			t.Errorf("resource request without an API prefix: %+v", info)
		}
		// Empty path segments are read as empty names (as Kubernetes does) and end in a 404; any other
		// resource request names its version and resource.
		if !strings.Contains(strings.Trim(u.Path, "/"), "//") {
			if info.APIVersion == "" || info.Resource == "" {
				t.Errorf("resource request without a version or resource: %+v", info)
			}
			if info.Subresource != "" && info.Name == "" {
				t.Errorf("subresource %q without a name", info.Subresource)
			}
		}
		if info.APIPrefix == "api" && info.APIGroup != "" {
			t.Errorf("legacy API with group %q", info.APIGroup)
		}
		for what, v := range map[string]string{"namespace": info.Namespace, "resource": info.Resource, "name": info.Name, "subresource": info.Subresource} {
			if strings.Contains(v, "/") {
				t.Errorf("%s %q contains a slash", what, v)
			}
		}
		if info.Resource == "namespaces" && info.Namespace != "" {
			t.Errorf("namespace object request with namespace %q", info.Namespace)
		}
		switch method {
		case http.MethodGet, http.MethodHead:
			if info.Verb != "get" && info.Verb != "list" && info.Verb != "watch" {
				t.Errorf("%s gave verb %q", method, info.Verb)
			}
		case http.MethodPost:
			if info.Verb != "create" {
				t.Errorf("POST gave verb %q", info.Verb)
			}
		}
	})
}

func FuzzDecodeObject(f *testing.F) {
	for _, body := range seedBodies(f) {
		for ct := range fuzzContentTypes {
			f.Add(body, uint8(ct), uint8(0), uint8(ct%len(fuzzCreateResources)))
		}
	}
	s := newStorelessServer(f)
	f.Fuzz(func(t *testing.T, body []byte, ctIndex, fvIndex, resourceIndex uint8) {
		h := handlerOf(t, s, pick(fuzzCreateResources, resourceIndex))
		obj, _, err := h.decodeObject(body, pick(fuzzContentTypes, ctIndex), pick(fuzzFieldValidations, fvIndex))
		if err != nil {
			wantAPIError(t, err, 400, 415, 422)
			return
		}
		if err := h.checkNamespace(obj, "default"); err != nil {
			wantAPIError(t, err, 400)
			return
		}
		// Everything a create does short of storage: system fields, strategy, validation (no admission
		// is configured, so nothing is looked up).
		ctx := request.WithUser(t.Context(), &UserInfo{Name: "fuzz"})
		if _, err := h.st.PrepareCreate(ctx, obj, h.createAdmission(writeOptions{fieldManager: "fuzz", fieldValidation: "Strict"}, true)); err != nil {
			wantAPIError(t, err, 400, 403, 422)
		}
	})
}

func FuzzApplyPatch(f *testing.F) {
	for _, seed := range []struct {
		pt    uint8
		patch string
	}{
		{0, `[{"op":"add","path":"/metadata/labels/x","value":"y"}]`},
		{0, `[{"op":"copy","from":"/spec","path":"/spec/x"},{"op":"move","from":"/metadata/labels","path":"/spec/y"}]`},
		{0, `[{"op":"remove","path":"/spec/containers/-1"},{"op":"test","path":"/kind","value":"Pod"}]`},
		{1, `{"metadata":{"labels":null},"spec":{"containers":[]}}`},
		{1, `{"spec":{"activeDeadlineSeconds":1e30}}`},
		{2, `{"spec":{"containers":[{"name":"app","$patch":"delete"}],"$setElementOrder/containers":[{"name":"x"}]}}`},
		{2, `{"metadata":{"$deleteFromPrimitiveList/finalizers":["a"]},"spec":{"$retainKeys":["containers"]}}`},
		{2, `{"spec":{"volumes":[{"name":"v","$patch":"replace"}]},"$patch":"merge"}`},
		{2, "spec:\n  hostname: yaml\n"},
		{1, `null`},
	} {
		f.Add([]byte(seed.patch), seed.pt, uint8(0))
	}
	s := newStorelessServer(f)
	pods := handlerOf(f, s, podsGVR)
	current := makePod("web").label("app", "web").container("sidecar", "envoy").finalizer("a").obj()
	current.ResourceVersion = "9"
	current.UID = "0f8fad5b-d9cb-469f-a165-70867728950e"
	info := &RequestInfo{Namespace: "default", Name: "web", Resource: "pods"}
	f.Fuzz(func(t *testing.T, patch []byte, ptIndex, fvIndex uint8) {
		pt := pick(fuzzPatchTypes, ptIndex)
		currentJSON, err := json.Marshal(current)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := applyPatch(pt, currentJSON, patch, &corev1.Pod{}); err != nil {
			wantAPIError(t, err, 400, 413, 415, 422)
		}
		next, _, err := pods.patchObject(current.DeepCopy(), pt, patch, info, pick(fuzzFieldValidations, fvIndex))
		if err != nil {
			wantAPIError(t, err, 400, 409, 413, 415, 422)
			return
		}
		ctx := request.WithUser(t.Context(), &UserInfo{Name: "fuzz"})
		if _, err := pods.st.PrepareUpdate(ctx, next, current.DeepCopy(), pods.updateOptions(&updateContext{opts: writeOptions{fieldManager: "fuzz"}})); err != nil {
			wantAPIError(t, err, 400, 403, 409, 422)
		}
	})
}

// FuzzServeCreate posts fuzzed bodies through the whole HTTP handler (authentication, admission,
// registry, etcd): whatever the body, the answer is a Kubernetes Status, never a 500.
func FuzzServeCreate(f *testing.F) {
	for _, body := range seedBodies(f) {
		for ct := range fuzzContentTypes {
			f.Add(body, uint8(ct), uint8(ct), uint8(ct%len(fuzzCreateResources)), false)
		}
	}
	f.Add([]byte(`{"metadata":{"generateName":"x-"},"spec":{"containers":[{"name":"a","image":"b"}]}}`), uint8(0), uint8(0), uint8(0), true)
	c := startTestCluster(f)
	f.Fuzz(func(t *testing.T, body []byte, ctIndex, fvIndex, resourceIndex uint8, dryRun bool) {
		gvr := pick(fuzzCreateResources, resourceIndex)
		prefix := "/api/v1"
		if gvr.Group != "" {
			prefix = "/apis/" + gvr.Group + "/" + gvr.Version
		}
		q := url.Values{"fieldValidation": {pick(fuzzFieldValidations, fvIndex)}}
		if dryRun {
			q.Set("dryRun", "All")
		}
		r := httptest.NewRequest(http.MethodPost, prefix+"/namespaces/default/"+gvr.Resource+"?"+q.Encode(), bytes.NewReader(body))
		if ct := pick(fuzzContentTypes, ctIndex); ct != "" {
			r.Header.Set("Content-Type", ct)
		}
		r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{c.adminCert}, VerifiedChains: [][]*x509.Certificate{{c.adminCert}}}
		w := httptest.NewRecorder()
		c.api.ServeHTTP(w, r)
		switch {
		case w.Code == http.StatusCreated:
			return
		case w.Code >= 500 || w.Code < 400:
			t.Fatalf("POST %s: %d %s", r.URL, w.Code, w.Body.String())
		}
		st := &metav1.Status{}
		if err := json.Unmarshal(w.Body.Bytes(), st); err != nil || st.Kind != "Status" || int(st.Code) != w.Code {
			t.Fatalf("POST %s: %d answered with %q, not a Status (%v)", r.URL, w.Code, w.Body.String(), err)
		}
	})
}
