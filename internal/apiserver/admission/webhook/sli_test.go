package webhook

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/internal/request"
)

// A webhook's time is its own: the call adds it to the request's SLI exclusions, so the API call
// latency SLI does not charge the API server for a slow webhook.
func TestCallTimeExcludedFromSLI(t *testing.T) {
	const delay = 200 * time.Millisecond
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review admissionv1.AdmissionReview
		_ = json.NewDecoder(r.Body).Decode(&review)
		time.Sleep(delay)
		review.Response = &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(review)
	}))
	defer srv.Close()
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	h := &hook{name: "slow.example.com", timeoutSeconds: 10,
		clientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To(srv.URL + "/validate"), CABundle: caPEM}}
	review := &admissionv1.AdmissionReview{Request: &admissionv1.AdmissionRequest{UID: "u1"}}
	review.APIVersion, review.Kind = "admission.k8s.io/v1", "AdmissionReview"

	ctx, excluded := request.WithSLIExclusions(context.Background())
	resp, err := call(ctx, h, review, &fakeLookup{})
	if err != nil || !resp.Allowed {
		t.Fatalf("call: %+v, %v", resp, err)
	}
	if got := excluded.Total(); got < delay {
		t.Fatalf("excluded %s, want at least the webhook's %s", got, delay)
	}
	// Without exclusions on the context the call still works.
	if _, err := call(context.Background(), h, review, &fakeLookup{}); err != nil {
		t.Fatal(err)
	}
}
