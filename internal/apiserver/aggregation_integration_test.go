package apiserver

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	apiregv1 "github.com/skiff-sh/skiff/internal/apis/apiregistrationv1"
	"github.com/skiff-sh/skiff/internal/pki"
)

var (
	apiServicesGVR = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}
	flundersGVR    = schema.GroupVersionResource{Group: "wardle.example.com", Version: "v1", Resource: "flunders"}
)

// extensionServer is a minimal aggregated API server: it serves wardle.example.com/v1 flunders
// (discovery, a list naming the caller, a watch that streams one event and stays open, and an
// upgrade that echoes), only to a client certificate from the front-proxy CA with the
// front-proxy-client name.
func extensionServer(t *testing.T, frontProxyCA []byte) (*httptest.Server, []byte) {
	t.Helper()
	now := time.Now()
	ca, err := pki.LoadOrCreateCA(t.TempDir(), "ext-ca", "wardle-ca", now)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := ca.Issue(pki.Leaf{CommonName: "api.wardle.svc", DNSNames: []string{"api.wardle.svc"}, Server: true}, now)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	clientCAs := x509.NewCertPool()
	if !clientCAs.AppendCertsFromPEM(frontProxyCA) {
		t.Fatal("front-proxy CA does not parse")
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/apis/wardle.example.com/v1", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(metav1.APIResourceList{
			TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
			GroupVersion: "wardle.example.com/v1",
			APIResources: []metav1.APIResource{
				{Name: "flunders", SingularName: "flunder", Namespaced: true, Kind: "Flunder", Verbs: []string{"get", "list", "watch"}},
				{Name: "flunders/exec", Namespaced: true, Kind: "Flunder", Verbs: []string{"get"}},
			},
		})
	})
	mux.HandleFunc("/openapi/v3/apis/wardle.example.com/v1", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"openapi":"3.0.0","info":{"title":"wardle","version":"v1"},"paths":{"/apis/wardle.example.com/v1/flunders":{}}}`)
	})
	mux.HandleFunc("/apis/wardle.example.com/v1/namespaces/{ns}/flunders", func(w http.ResponseWriter, r *http.Request) {
		item := map[string]any{
			"apiVersion": "wardle.example.com/v1", "kind": "Flunder",
			"metadata": map[string]any{
				"name": r.Header.Get("X-Remote-User"), "namespace": r.PathValue("ns"), "resourceVersion": "1",
				"annotations": map[string]any{"groups": strings.Join(r.Header.Values("X-Remote-Group"), ","), "authorization": r.Header.Get("Authorization")},
			},
		}
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Query().Get("watch") == "true" || r.URL.Query().Get("watch") == "1" {
			_ = json.NewEncoder(w).Encode(map[string]any{"type": "ADDED", "object": item})
			w.(http.Flusher).Flush()
			<-r.Context().Done() // the stream stays open: the event must arrive without its end
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{
			"apiVersion": "wardle.example.com/v1", "kind": "FlunderList", "metadata": map[string]any{"resourceVersion": "1"},
			"items": []any{item},
		})
	})
	mux.HandleFunc("/apis/wardle.example.com/v1/namespaces/{ns}/flunders/{name}/exec", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "echo" {
			http.Error(w, "upgrade required", http.StatusBadRequest)
			return
		}
		conn, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		_, _ = rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
		_ = rw.Flush()
		_, _ = io.Copy(conn, rw)
	})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(r.TLS.PeerCertificates) == 0 || r.TLS.PeerCertificates[0].Subject.CommonName != pki.FrontProxyClientName {
			http.Error(w, "not the front proxy", http.StatusForbidden)
			return
		}
		mux.ServeHTTP(w, r)
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, ClientCAs: clientCAs, ClientAuth: tls.RequireAndVerifyClientCert}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv, ca.CertPEM
}

func apiServiceObject(name, group, svcName string, caBundle []byte) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{
			"group": group, "version": "v1", "groupPriorityMinimum": int64(1000), "versionPriority": int64(15),
			"service":  map[string]any{"namespace": "wardle", "name": svcName},
			"caBundle": caBundle,
		},
	}}
}

// availableCondition waits until the APIService's Available condition has status want and
// returns it.
func availableCondition(t *testing.T, c *testCluster, name, want string) map[string]any {
	t.Helper()
	var last map[string]any
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		obj, err := c.dynamic.Resource(apiServicesGVR).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
		for _, cond := range conds {
			m := cond.(map[string]any)
			if m["type"] == "Available" {
				last = m
				if m["status"] == want {
					return m
				}
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("APIService %s: Available never became %s (last %v)", name, want, last)
	return nil
}

// TestAggregation drives a real server over HTTP with an extension API server: the APIService
// becomes Available, requests (list, watch, an upgrade) reach it with the front-proxy certificate
// and the caller's identity and without the caller's credentials, discovery lists its resources,
// and an APIService without its service is Available=False and answers 503.
func TestAggregation(t *testing.T) {
	dir := t.TempDir()
	files, err := pki.EnsureFrontProxy(dir, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	proxyCert, err := tls.LoadX509KeyPair(files.ClientCert, files.ClientKey)
	if err != nil {
		t.Fatal(err)
	}
	frontProxyCA, err := os.ReadFile(filepath.Join(dir, "front-proxy-ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	c := startTestCluster(t, func(cfg *Config) {
		cfg.Aggregation = &AggregationConfig{ProxyClientCert: &proxyCert, CheckInterval: time.Hour}
	})
	ext, extCA := extensionServer(t, frontProxyCA)
	extAddr := strings.TrimPrefix(ext.URL, "https://")
	c.api.agg.resolve = func(_ context.Context, ref *apiregv1.ServiceReference) (string, availabilityFacts) {
		if ref.Name == "api" {
			return extAddr, availabilityFacts{}
		}
		return "", availabilityFacts{serviceMissing: true}
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() {
		if err := c.api.RunAggregation(ctx); err != nil {
			t.Errorf("RunAggregation: %v", err)
		}
	}()

	for _, obj := range []*unstructured.Unstructured{
		apiServiceObject("v1.wardle.example.com", "wardle.example.com", "api", extCA),
		apiServiceObject("v1.missing.example.com", "missing.example.com", "gone", extCA),
	} {
		if _, err := c.dynamic.Resource(apiServicesGVR).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if cond := availableCondition(t, c, "v1.wardle.example.com", "True"); cond["reason"] != "Passed" {
		t.Fatalf("available for the wrong reason: %v", cond)
	}
	if cond := availableCondition(t, c, "v1.missing.example.com", "False"); cond["reason"] != "ServiceNotFound" ||
		cond["message"] != `service/gone in "wardle" is not present` {
		t.Fatalf("unavailable condition: %v", cond)
	}

	// A list reaches the extension server as the caller, without the caller's credentials.
	list, err := c.dynamic.Resource(flundersGVR).Namespace("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].GetName() != "admin" {
		t.Fatalf("list: %+v", list.Items)
	}
	ann := list.Items[0].GetAnnotations()
	if !strings.Contains(ann["groups"], "system:masters") || !strings.Contains(ann["groups"], "system:authenticated") || ann["authorization"] != "" {
		t.Fatalf("identity seen by the extension server: %v", ann)
	}

	// A watch streams: its first event arrives while the stream is still open.
	w, err := c.dynamic.Resource(flundersGVR).Namespace("default").Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-w.ResultChan():
		if ev.Type != "ADDED" {
			t.Fatalf("watch event %v", ev)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no watch event through the proxy")
	}
	w.Stop()

	// An upgrade request is switched and carries bytes both ways.
	conn := dialAdmin(t, c)
	fmt.Fprintf(conn, "GET /apis/wardle.example.com/v1/namespaces/default/flunders/x/exec HTTP/1.1\r\nHost: skiff\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("upgrade: %s %s", resp.Status, body)
	}
	if _, err := conn.Write([]byte("ping\n")); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	line, err := br.ReadString('\n')
	if err != nil || line != "ping\n" {
		t.Fatalf("echo through the upgrade: %q %v", line, err)
	}

	// Discovery (aggregated, as client-go asks) lists the extension's resources.
	resources, err := c.client.Discovery().ServerResourcesForGroupVersion("wardle.example.com/v1")
	if err != nil {
		t.Fatal(err)
	}
	if len(resources.APIResources) == 0 || resources.APIResources[0].Name != "flunders" {
		t.Fatalf("discovery: %+v", resources.APIResources)
	}
	_, all, err := c.client.Discovery().ServerGroupsAndResources()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, l := range all {
		if l.GroupVersion == "wardle.example.com/v1" {
			found = true
		}
		if l.GroupVersion == "missing.example.com/v1" {
			t.Fatal("an unavailable APIService is listed in discovery")
		}
	}
	if !found {
		t.Fatal("wardle.example.com/v1 missing from aggregated discovery")
	}

	// The unavailable one answers 503.
	_, err = c.dynamic.Resource(schema.GroupVersionResource{Group: "missing.example.com", Version: "v1", Resource: "foos"}).
		Namespace("default").List(ctx, metav1.ListOptions{})
	if !apierrors.IsServiceUnavailable(err) {
		t.Fatalf("unavailable APIService: %v", err)
	}

	// The OpenAPI v3 index lists the available one beside the server's own group versions, and
	// its document, read as client-go reads it, is the extension server's.
	openAPIPaths, err := c.client.Discovery().OpenAPIV3().Paths()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := openAPIPaths["api/v1"]; !ok {
		t.Fatal("the OpenAPI v3 index lost the server's own api/v1")
	}
	if _, ok := openAPIPaths["apis/missing.example.com/v1"]; ok {
		t.Fatal("an unavailable APIService is in the OpenAPI v3 index")
	}
	wardle, ok := openAPIPaths["apis/wardle.example.com/v1"]
	if !ok {
		t.Fatalf("the OpenAPI v3 index lacks apis/wardle.example.com/v1: %v", openAPIPaths)
	}
	doc, err := wardle.Schema("application/json")
	if err != nil || !strings.Contains(string(doc), `"title":"wardle"`) {
		t.Fatalf("wardle's OpenAPI v3 document: %s, %v", doc, err)
	}

	// Deleting the APIService stops the proxying and takes it out of discovery.
	if err := c.dynamic.Resource(apiServicesGVR).Delete(ctx, "v1.wardle.example.com", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := c.dynamic.Resource(flundersGVR).Namespace("default").List(ctx, metav1.ListOptions{})
		if apierrors.IsNotFound(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still proxied after delete: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// And takes it out of the OpenAPI v3 index.
	openAPIPaths, err = c.client.Discovery().OpenAPIV3().Paths()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := openAPIPaths["apis/wardle.example.com/v1"]; ok {
		t.Fatal("a deleted APIService is still in the OpenAPI v3 index")
	}
}

// dialAdmin opens a TLS connection to the test server as the admin, speaking HTTP/1.1.
func dialAdmin(t *testing.T, c *testCluster) net.Conn {
	t.Helper()
	cert, err := tls.X509KeyPair(c.admin.CertData, c.admin.KeyData)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(c.admin.CAData)
	conn, err := tls.Dial("tcp", c.server.Listener.Addr().String(), &tls.Config{
		Certificates: []tls.Certificate{cert}, RootCAs: pool, ServerName: "127.0.0.1", NextProtos: []string{"http/1.1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}
