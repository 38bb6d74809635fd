package webhook_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestSubresourceCreateKinds: a webhook for CREATE on pods/eviction is told what the request's
// body is, as Kubernetes tells it: kind policy/v1 Eviction, while the resource stays the parent
// (pods) with the subresource beside it. serviceaccounts/token goes through the same
// admitSubresourceCreate with authentication.k8s.io/v1 TokenRequest; this server has no token
// issuer, so it answers before admission.
func TestSubresourceCreateKinds(t *testing.T) {
	e := startEnv(t, nil)
	ctx := context.Background()
	url := e.webhookServer(t, func(_ *http.Request, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		msg := fmt.Sprintf("saw kind %s/%s %s, request kind %s, resource %s/%s", req.Kind.Group, req.Kind.Version, req.Kind.Kind,
			req.RequestKind.Kind, req.Resource.Resource, req.SubResource)
		return &admissionv1.AdmissionResponse{Allowed: false, Result: &metav1.Status{Message: msg, Code: http.StatusForbidden}}
	})
	if _, err := e.client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "subresources"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "subresources.example.com", ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To(url + "/sub"), CABundle: e.ca.CertPEM},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods/eviction", "serviceaccounts/token"}},
			}},
			SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone), AdmissionReviewVersions: []string{"v1"},
		}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.client.CoreV1().Pods("default").Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "evictee"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "busybox"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// The configuration reaches the plugin through a watch: retry until the webhook answers.
	expect := func(name string, call func() error, want string) {
		t.Helper()
		eventually(t, func() error {
			err := call()
			if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), want) {
				return errFmt("%s: got %v, want a denial saying %q", name, err, want)
			}
			return nil
		})
	}
	expect("eviction", func() error {
		return e.client.PolicyV1().Evictions("default").Evict(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "evictee", Namespace: "default"}})
	}, "saw kind policy/v1 Eviction, request kind Eviction, resource pods/eviction")
}
