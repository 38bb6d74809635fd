package webhook_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/internal/apiserver"
	"github.com/skiff-sh/skiff/internal/apiserver/admission"
	"github.com/skiff-sh/skiff/internal/apiserver/admission/webhook"
	"github.com/skiff-sh/skiff/internal/apiserver/discovery"
	"github.com/skiff-sh/skiff/internal/etcd/etcdtest"
	"github.com/skiff-sh/skiff/internal/openapi"
	"github.com/skiff-sh/skiff/internal/pki"
	"github.com/skiff-sh/skiff/internal/registry"
	"github.com/skiff-sh/skiff/internal/registry/builtin"
	"github.com/skiff-sh/skiff/internal/storage"
	"github.com/skiff-sh/skiff/internal/storage/etcd3"
)

// env is an API server over embedded etcd with the webhook plugins in its chain, a client of it,
// and a CA that signs the test's webhook servers.
type env struct {
	client kubernetes.Interface
	config *rest.Config
	ca     *pki.CA
}

// Plugins lets a test add admission plugins that need the server (the policy plugin).
type extraPlugins struct {
	plugins []apiserver.AdmissionPlugin
	start   func(ctx context.Context, srv admission.Source) error
}

func startEnv(t *testing.T, extra *extraPlugins) *env {
	t.Helper()
	member := etcdtest.StartEmbedded(t, etcdtest.Options{})
	etcdClient, err := member.Client()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = etcdClient.Close() })
	scheme, err := builtin.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	resources := builtin.Resources()
	oapi, err := openapi.New(scheme, resources, openapi.WithVersion("v1.32.0-skiff.test"))
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	hooks, err := webhook.New(webhook.Config{Logger: logger, Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	chain := append(apiserver.DefaultAdmission(), hooks.Mutating())
	if extra != nil {
		chain = append(chain, extra.plugins...)
	}
	chain = append(chain, hooks.Validating())
	api, err := apiserver.New(apiserver.Config{
		Scheme:    scheme,
		Resources: resources,
		Storage: func(res *registry.Resource) (storage.Interface, error) {
			codec, err := builtin.StorageCodec(scheme, res, "protobuf")
			if err != nil {
				return nil, err
			}
			return etcd3.New(etcdClient, codec, res.New, res.NewList), nil
		},
		Ready:         func(ctx context.Context) error { _, err := etcdClient.Get(ctx, "/registry/health"); return err },
		Authenticator: apiserver.ClientCertAuthenticator{},
		Admission:     chain,
		OpenAPI:       oapi,
		Discovery:     discovery.New(resources, builtin.ExtraSubresources()),
		TypeConverter: oapi.TypeConverter(),
		Version:       version.Info{Major: "1", Minor: "32", GitVersion: "v1.32.0-skiff.test"},
		Logger:        logger,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := hooks.Start(ctx, api.ListWatch); err != nil {
		t.Fatal(err)
	}
	if extra != nil && extra.start != nil {
		if err := extra.start(ctx, api); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"default", "kube-system"} {
		if err := api.EnsureObject(ctx, schema.GroupResource{Resource: "namespaces"}, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now()
	ca, err := pki.LoadOrCreateCA(t.TempDir(), "ca", "webhook-test-ca", now)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(api)
	srv.TLS = apiserver.TLSConfig([]tls.Certificate{serveCert(t, ca)}, &tls.Config{ClientCAs: pool(ca)})
	srv.StartTLS()
	t.Cleanup(srv.Close)
	adminCert, adminKey, err := ca.Issue(pki.Leaf{CommonName: "admin", Organization: []string{"system:masters"}, Client: true}, now)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{CAData: ca.CertPEM, CertData: adminCert, KeyData: adminKey}, QPS: -1}
	return &env{client: kubernetes.NewForConfigOrDie(cfg), config: cfg, ca: ca}
}

func serveCert(t *testing.T, ca *pki.CA) tls.Certificate {
	certPEM, keyPEM, err := ca.Issue(pki.Leaf{CommonName: "127.0.0.1", IPs: []net.IP{net.ParseIP("127.0.0.1")}, Server: true}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

func pool(ca *pki.CA) *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// webhookServer serves AdmissionReviews over TLS on 127.0.0.1 with a certificate of the test CA.
func (e *env) webhookServer(t *testing.T, handle func(r *http.Request, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse) string {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review admissionv1.AdmissionReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		resp := handle(r, review.Request)
		if resp == nil {
			return
		}
		resp.UID = review.Request.UID
		review.Response, review.Request = resp, nil
		_ = json.NewEncoder(w).Encode(&review)
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{serveCert(t, e.ca)}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv.URL
}

func configMapRule() []admissionregistrationv1.RuleWithOperations {
	return []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
	}}
}

// eventually retries f until it succeeds: configurations reach the plugins' caches through a watch.
func eventually(t *testing.T, f func() error) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		last = f()
		return last == nil, nil
	})
	if err != nil {
		t.Fatalf("never succeeded: %v", last)
	}
}

func TestWebhooks(t *testing.T) {
	e := startEnv(t, nil)
	ctx := context.Background()

	// The validating webhook refuses configmaps labelled deny=yes and warns about every one it sees.
	validateURL := e.webhookServer(t, func(_ *http.Request, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		var cm corev1.ConfigMap
		_ = json.Unmarshal(req.Object.Raw, &cm)
		if req.Kind.Kind != "ConfigMap" || req.Resource.Resource != "configmaps" || req.UserInfo.Username != "admin" || req.Options.Raw == nil {
			return &admissionv1.AdmissionResponse{Allowed: false, Result: &metav1.Status{Message: "unexpected request " + req.Kind.Kind}}
		}
		if cm.Labels["deny"] == "yes" {
			return &admissionv1.AdmissionResponse{Allowed: false, Result: &metav1.Status{Message: "no thanks", Code: http.StatusForbidden}}
		}
		return &admissionv1.AdmissionResponse{Allowed: true, Warnings: []string{"seen by validator"}}
	})
	// The mutating webhook labels every configmap; it counts its calls per object name.
	var mu sync.Mutex
	calls := map[string]int{}
	mutateURL := e.webhookServer(t, func(_ *http.Request, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		var cm corev1.ConfigMap
		_ = json.Unmarshal(req.Object.Raw, &cm)
		mu.Lock()
		calls[cm.Name]++
		mu.Unlock()
		patch := `[{"op":"add","path":"/metadata/labels","value":{"mutated":"yes"}}]`
		if cm.Labels != nil {
			patch = `[{"op":"add","path":"/metadata/labels/mutated","value":"yes"}]`
		}
		return &admissionv1.AdmissionResponse{Allowed: true, Patch: []byte(patch), PatchType: ptr.To(admissionv1.PatchTypeJSONPatch)}
	})
	// hang answers nothing until the API server gives up.
	hangURL := e.webhookServer(t, func(r *http.Request, _ *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		<-r.Context().Done()
		return nil
	})

	created, err := e.client.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "label"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name: "label.example.com", ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To(mutateURL + "/mutate"), CABundle: e.ca.CertPEM},
			Rules: configMapRule(), SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone), AdmissionReviewVersions: []string{"v1"},
			ReinvocationPolicy: ptr.To(admissionregistrationv1.IfNeededReinvocationPolicy),
		}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// v1's defaults are stored.
	if w := created.Webhooks[0]; *w.FailurePolicy != admissionregistrationv1.Fail || *w.MatchPolicy != admissionregistrationv1.Equivalent ||
		*w.TimeoutSeconds != 10 || w.NamespaceSelector == nil || w.ObjectSelector == nil || *w.Rules[0].Scope != admissionregistrationv1.AllScopes {
		t.Fatalf("stored webhook without v1's defaults: %+v", w)
	}
	// A second mutating webhook, called after "label" (configurations go by name), annotates: the
	// change makes "label" (IfNeeded) run once more.
	annotateURL := e.webhookServer(t, func(_ *http.Request, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		var cm corev1.ConfigMap
		_ = json.Unmarshal(req.Object.Raw, &cm)
		if cm.Annotations["annotated"] == "yes" {
			return &admissionv1.AdmissionResponse{Allowed: true}
		}
		patch := `[{"op":"add","path":"/metadata/annotations","value":{"annotated":"yes"}}]`
		return &admissionv1.AdmissionResponse{Allowed: true, Patch: []byte(patch), PatchType: ptr.To(admissionv1.PatchTypeJSONPatch)}
	})
	_, err = e.client.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "zz-annotate"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name: "annotate.example.com", ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To(annotateURL), CABundle: e.ca.CertPEM},
			Rules: configMapRule(), SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone), AdmissionReviewVersions: []string{"v1"},
		}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "check"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "deny.example.com", ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To(validateURL + "/validate"), CABundle: e.ca.CertPEM},
			Rules: configMapRule(), SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone), AdmissionReviewVersions: []string{"v1"},
		}, {
			// Unreachable and Ignore: the request goes through.
			Name: "gone.example.com", ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://127.0.0.1:1/"), CABundle: e.ca.CertPEM},
			Rules: configMapRule(), SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone), AdmissionReviewVersions: []string{"v1"},
			FailurePolicy: ptr.To(admissionregistrationv1.Ignore),
		}, {
			// Hangs past its one-second timeout, Ignore: the request goes through after the timeout.
			Name: "slow.example.com", ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To(hangURL), CABundle: e.ca.CertPEM},
			Rules: configMapRule(), SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone), AdmissionReviewVersions: []string{"v1"},
			FailurePolicy: ptr.To(admissionregistrationv1.Ignore), TimeoutSeconds: ptr.To(int32(1)),
		}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	// The mutating webhook's label lands in the stored object.
	eventually(t, func() error {
		cm, err := e.client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "m-"}}, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		stored, err := e.client.CoreV1().ConfigMaps("default").Get(ctx, cm.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if stored.Labels["mutated"] != "yes" || stored.Annotations["annotated"] != "yes" {
			return errFmt("stored labels %v, annotations %v", stored.Labels, stored.Annotations)
		}
		mu.Lock()
		defer mu.Unlock()
		if calls[cm.Name] != 2 {
			return errFmt("label webhook called %d times for %s, want 2 (reinvoked once)", calls[cm.Name], cm.Name)
		}
		return nil
	})

	// The validating webhook's denial, in Kubernetes' words and with its code.
	eventually(t, func() error {
		_, err := e.client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "denied", Labels: map[string]string{"deny": "yes"}}}, metav1.CreateOptions{})
		want := `admission webhook "deny.example.com" denied the request: no thanks`
		if err == nil || err.Error() != want {
			return errFmt("got %v, want %q", err, want)
		}
		return nil
	})

	// Warnings reach the client as Warning headers.
	var warnings []string
	cfg := rest.CopyConfig(e.config)
	cfg.WarningHandler = warningCollector(func(msg string) { warnings = append(warnings, msg) })
	client := kubernetes.NewForConfigOrDie(cfg)
	if _, err := client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "warned"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 1 || warnings[0] != "seen by validator" {
		t.Fatalf("warnings %q", warnings)
	}

	// failurePolicy Fail on a webhook that times out fails the request.
	_, err = e.client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "strict"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "strict.example.com", ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To(hangURL), CABundle: e.ca.CertPEM},
			Rules: configMapRule(), SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone), AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds: ptr.To(int32(1)),
			// Only for configmaps labelled strict, so the other cases stay unaffected.
			ObjectSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"strict": "yes"}},
		}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, func() error {
		_, err := e.client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "s-", Labels: map[string]string{"strict": "yes"}}}, metav1.CreateOptions{})
		if err == nil || !strings.Contains(err.Error(), `Internal error occurred: failed calling webhook "strict.example.com": failed to call webhook`) {
			return errFmt("got %v", err)
		}
		return nil
	})

	// Webhook configurations are never sent to webhooks: deleting one works even though every
	// webhook above would refuse or hang.
	if err := e.client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(ctx, "strict", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

type warningCollector func(string)

func (f warningCollector) HandleWarningHeader(code int, _ string, msg string) {
	if code == 299 {
		f(msg)
	}
}

type testError string

func (e testError) Error() string { return string(e) }

func errFmt(format string, args ...any) error {
	return testError(strings.TrimSpace(sprintf(format, args...)))
}

var sprintf = fmt.Sprintf
