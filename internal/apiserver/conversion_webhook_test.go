package apiserver

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/internal/pki"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
)

// renameWebhook converts things between v1beta1 (spec.oldName) and v1 (spec.newName).
func renameWebhook(t *testing.T) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var review conversionReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
			http.Error(w, "bad review", http.StatusBadRequest)
			return
		}
		resp := &conversionResponse{UID: review.Request.UID}
		resp.Result.Status = "Success"
		for _, raw := range review.Request.Objects {
			var obj map[string]interface{}
			if err := json.Unmarshal(raw, &obj); err != nil {
				t.Errorf("webhook: %v", err)
			}
			spec, _ := obj["spec"].(map[string]interface{})
			from, to := "oldName", "newName"
			if review.Request.DesiredAPIVersion == "example.com/v1beta1" {
				from, to = to, from
			}
			if spec != nil {
				if v, ok := spec[from]; ok {
					spec[to] = v
					delete(spec, from)
				}
			}
			obj["apiVersion"] = review.Request.DesiredAPIVersion
			resp.ConvertedObjects = append(resp.ConvertedObjects, obj)
		}
		review.Response, review.Request = resp, nil
		_ = json.NewEncoder(w).Encode(review)
	}
}

func TestConversionWebhook(t *testing.T) {
	c := startTestCluster(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = c.api.RunCustomResources(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	ns := c.namespace(t, "conv")

	hook := httptest.NewTLSServer(renameWebhook(t))
	t.Cleanup(hook.Close)
	caBundle := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: hook.Certificate().Raw})
	crd := unstructuredFrom(t, `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: things.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: things, kind: Thing}
  versions:
  - name: v1beta1
    served: true
    storage: false
    schema: {openAPIV3Schema: {type: object, properties: {spec: {type: object, properties: {oldName: {type: string}}}}}}
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, properties: {spec: {type: object, properties: {newName: {type: string}}}}}}
  conversion:
    strategy: Webhook
    webhook:
      conversionReviewVersions: [v1]
      clientConfig: {url: "`+hook.URL+`/convert"}
`)
	// caBundle is bytes: base64 in JSON.
	_ = unstructured.SetNestedField(crd.Object, base64.StdEncoding.EncodeToString(caBundle), "spec", "conversion", "webhook", "clientConfig", "caBundle")
	if _, err := c.dynamic.Resource(crdsGVR).Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	beta := c.dynamic.Resource(schema.GroupVersionResource{Group: "example.com", Version: "v1beta1", Resource: "things"}).Namespace(ns)
	v1 := c.dynamic.Resource(schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "things"}).Namespace(ns)
	var lastErr error
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, lastErr = beta.Create(ctx, unstructuredFrom(t, `{"apiVersion":"example.com/v1beta1","kind":"Thing","metadata":{"name":"t"},"spec":{"oldName":"x"}}`), metav1.CreateOptions{})
		return lastErr == nil || strings.Contains(lastErr.Error(), "already exists"), nil
	})
	if err != nil {
		t.Fatal(err, lastErr)
	}
	got, err := v1.Get(ctx, "t", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if name, _, _ := unstructured.NestedString(got.Object, "spec", "newName"); name != "x" || got.GetAPIVersion() != "example.com/v1" {
		t.Fatalf("read through v1: %v", got.Object)
	}
	got, err = beta.Get(ctx, "t", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if name, _, _ := unstructured.NestedString(got.Object, "spec", "oldName"); name != "x" {
		t.Fatalf("read through v1beta1: %v", got.Object)
	}
}

// TestConversionWebhookService reaches a webhook declared by service through a ready endpoint of the
// service, checking its certificate for <service>.<namespace>.svc.
func TestConversionWebhookService(t *testing.T) {
	c := startTestCluster(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = c.api.RunCustomResources(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	ns := c.namespace(t, "hooks")

	ca, err := pki.LoadOrCreateCA(t.TempDir(), "ca", "webhook-ca", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := ca.Issue(pki.Leaf{CommonName: "convert", DNSNames: []string{"convert.hooks.svc"}, Server: true}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	// Endpoint slices may not hold loopback addresses: the webhook listens on the host's own.
	hostIP := ""
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if ipnet, ok := a.(*net.IPNet); ok && !ipnet.IP.IsLoopback() && ipnet.IP.To4() != nil {
			hostIP = ipnet.IP.String()
			break
		}
	}
	if hostIP == "" {
		t.Skip("no non-loopback IPv4 address to serve the webhook on")
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(hostIP, "0"))
	if err != nil {
		t.Fatal(err)
	}
	hook := httptest.NewUnstartedServer(renameWebhook(t))
	hook.Listener.Close()
	hook.Listener = ln
	hook.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	hook.StartTLS()
	t.Cleanup(hook.Close)
	_, portText, _ := net.SplitHostPort(hook.Listener.Addr().String())
	port, _ := strconv.Atoi(portText)

	if _, err := c.client.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "convert"},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "https", Port: 443, TargetPort: intstr.FromInt32(int32(port))}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.client.DiscoveryV1().EndpointSlices(ns).Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "convert-1", Labels: map[string]string{discoveryv1.LabelServiceName: "convert"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{hostIP}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: ptr.To(int32(port))}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	crd := unstructuredFrom(t, `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: things.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: things, kind: Thing}
  versions:
  - name: v1beta1
    served: true
    storage: false
    schema: {openAPIV3Schema: {type: object, properties: {spec: {type: object, properties: {oldName: {type: string}}}}}}
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, properties: {spec: {type: object, properties: {newName: {type: string}}}}}}
  conversion:
    strategy: Webhook
    webhook:
      conversionReviewVersions: [v1]
      clientConfig: {service: {namespace: hooks, name: convert, path: /convert}}
`)
	_ = unstructured.SetNestedField(crd.Object, base64.StdEncoding.EncodeToString(ca.CertPEM), "spec", "conversion", "webhook", "clientConfig", "caBundle")
	if _, err := c.dynamic.Resource(crdsGVR).Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	beta := c.dynamic.Resource(schema.GroupVersionResource{Group: "example.com", Version: "v1beta1", Resource: "things"}).Namespace(ns)
	var lastErr error
	err = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, lastErr = beta.Create(ctx, unstructuredFrom(t, `{"apiVersion":"example.com/v1beta1","kind":"Thing","metadata":{"name":"t"},"spec":{"oldName":"x"}}`), metav1.CreateOptions{})
		return lastErr == nil || strings.Contains(lastErr.Error(), "already exists"), nil
	})
	if err != nil {
		t.Fatal(err, lastErr)
	}
	got, err := c.dynamic.Resource(schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "things"}).Namespace(ns).Get(ctx, "t", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if name, _, _ := unstructured.NestedString(got.Object, "spec", "newName"); name != "x" {
		t.Fatalf("read through v1: %v", got.Object)
	}
}
