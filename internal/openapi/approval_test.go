package openapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/skiff-sh/skiff/internal/registry"
)

// TestApprovalPaths checks that a resource with an /approval subresource (CSRs) gets Kubernetes'
// read, replace and patch operations for it.
func TestApprovalPaths(t *testing.T) {
	scheme := testScheme(t)
	if err := certificatesv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	csrs := makeResource(certificatesv1.SchemeGroupVersion, "CertificateSigningRequest", "certificatesigningrequests",
		func() runtime.Object { return &certificatesv1.CertificateSigningRequest{} },
		func() runtime.Object { return &certificatesv1.CertificateSigningRequestList{} }).status().obj()
	csrs.Subresources = map[string]*registry.Subresource{"approval": {Strategy: noopStatusStrategy{}}}
	svc, err := New(scheme, []*registry.Resource{csrs})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/openapi/v2", nil)
	req.Header.Set("Accept", "application/json")
	svc.ServeV2(rec, req)
	var swagger spec.Swagger
	if err := json.Unmarshal(rec.Body.Bytes(), &swagger); err != nil {
		t.Fatalf("decode v2 (%d): %v", rec.Code, err)
	}
	item, ok := swagger.Paths.Paths["/apis/certificates.k8s.io/v1/certificatesigningrequests/{name}/approval"]
	if !ok || item.Get == nil || item.Put == nil || item.Patch == nil {
		t.Fatalf("approval path = %+v (present %v)", item, ok)
	}
	if item.Put.ID != "replaceCertificatesV1CertificateSigningRequestApproval" {
		t.Fatalf("operation id %q", item.Put.ID)
	}
}
