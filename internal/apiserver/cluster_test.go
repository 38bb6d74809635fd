package apiserver

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"log/slog"
	"net"
	"net/http/httptest"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/skiff-sh/skiff/internal/apiserver/discovery"
	"github.com/skiff-sh/skiff/internal/etcd/etcdtest"
	"github.com/skiff-sh/skiff/internal/openapi"
	"github.com/skiff-sh/skiff/internal/pki"
	"github.com/skiff-sh/skiff/internal/registry"
	"github.com/skiff-sh/skiff/internal/registry/builtin"
	"github.com/skiff-sh/skiff/internal/storage"
	"github.com/skiff-sh/skiff/internal/storage/etcd3"
)

// testCluster is the API server over a real embedded etcd and the real built-in registry, served over
// TLS with client-certificate authentication, assembled the way internal/cluster assembles it.
type testCluster struct {
	api    *Server
	server *httptest.Server
	clock  *clocktesting.FakeClock
	// admin authenticates with a client certificate of system:masters; anonymous only trusts the CA.
	admin     *rest.Config
	anonymous *rest.Config
	// adminCert lets in-process requests (fuzzing ServeHTTP directly) present the admin's identity.
	adminCert *x509.Certificate
	client    kubernetes.Interface
	dynamic   dynamic.Interface
}

// startTestCluster starts the cluster; configure changes the API server's Config before it is built.
func startTestCluster(t testing.TB, configure ...func(*Config)) *testCluster {
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
	clock := clocktesting.NewFakeClock(testEpoch)
	_, serviceCIDR, err := net.ParseCIDR("10.43.0.0/16")
	if err != nil {
		t.Fatal(err)
	}
	disc := discovery.New(resources, builtin.ExtraSubresources())
	cfg := Config{
		CustomResourceTypeConverter: oapi.CustomResourceTypeConverter,
		OnResourcesChanged: func(all []*registry.Resource) {
			disc.Update(all, builtin.ExtraSubresources())
			if err := oapi.Update(all); err != nil {
				t.Errorf("update OpenAPI: %v", err)
			}
		},
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
		Authenticator: ClientCertAuthenticator{},
		Admission:     DefaultAdmission(),
		OpenAPI:       oapi,
		Discovery:     disc,
		TypeConverter: oapi.TypeConverter(),
		// Services get cluster IPs and node ports through the services strategy's hooks.
		ServiceClusterIPRange: serviceCIDR,
		Version:               version.Info{Major: "1", Minor: "32", GitVersion: "v1.32.0-skiff.test"},
		Clock:                 clock,
		Logger:                slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	for _, f := range configure {
		f(&cfg)
	}
	api, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, name := range []string{"default", "kube-system", "kube-public", "kube-node-lease"} {
		if err := api.EnsureObject(ctx, schema.GroupResource{Resource: "namespaces"}, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, pc := range builtin.SystemPriorityClasses() {
		if err := api.EnsureObject(ctx, schema.GroupResource{Group: "scheduling.k8s.io", Resource: "priorityclasses"}, pc); err != nil {
			t.Fatal(err)
		}
	}

	now := time.Now()
	ca, err := pki.LoadOrCreateCA(t.TempDir(), "ca", "skiff-test-ca", now)
	if err != nil {
		t.Fatal(err)
	}
	serverCertPEM, serverKeyPEM, err := ca.Issue(pki.Leaf{CommonName: "apiserver", IPs: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"}, Server: true}, now)
	if err != nil {
		t.Fatal(err)
	}
	serverCert, err := tls.X509KeyPair(serverCertPEM, serverKeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	adminCertPEM, adminKeyPEM, err := ca.Issue(pki.Leaf{CommonName: "admin", Organization: []string{"system:masters"}, Client: true}, now)
	if err != nil {
		t.Fatal(err)
	}
	adminCert, err := pki.ParseCertificate(adminCertPEM)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)

	srv := httptest.NewUnstartedServer(api)
	srv.TLS = TLSConfig([]tls.Certificate{serverCert}, &tls.Config{ClientCAs: pool})
	srv.StartTLS()
	t.Cleanup(srv.Close)

	anonymous := &rest.Config{
		Host:            srv.URL,
		TLSClientConfig: rest.TLSClientConfig{CAData: ca.CertPEM},
		UserAgent:       "apiserver-test/v0.0.0",
		QPS:             -1,
	}
	admin := rest.CopyConfig(anonymous)
	admin.CertData, admin.KeyData = adminCertPEM, adminKeyPEM
	return &testCluster{
		api: api, server: srv, clock: clock, admin: admin, anonymous: anonymous, adminCert: adminCert,
		client:  kubernetes.NewForConfigOrDie(admin),
		dynamic: dynamic.NewForConfigOrDie(admin),
	}
}

// namespace creates a fresh namespace for one test.
func (c *testCluster) namespace(t *testing.T, name string) string {
	t.Helper()
	_, err := c.client.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	return name
}
