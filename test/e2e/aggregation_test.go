package e2e

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skiff-sh/skiff/internal/pki"
)

// wardleServer is a small extension API server: wardle.example.com/v1 with one resource, flunders,
// served only to a client certificate that verifies against the requestheader CA skiff publishes
// (requestHeaderCA, asked at each handshake, as real servers follow the ConfigMap) and carries an
// allowed name; the one flunder it lists is named after X-Remote-User.
func wardleServer(t *testing.T, addr string, requestHeaderCA func() []byte, allowedNames []string) (port int, caPEM []byte) {
	t.Helper()
	now := time.Now()
	ca, err := pki.LoadOrCreateCA(t.TempDir(), "wardle-ca", "wardle-ca", now)
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
	if !x509.NewCertPool().AppendCertsFromPEM(requestHeaderCA()) {
		t.Fatal("requestheader-client-ca-file does not parse")
	}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(r.TLS.PeerCertificates) == 0 || !slices.Contains(allowedNames, r.TLS.PeerCertificates[0].Subject.CommonName) {
			http.Error(w, "front proxy not recognised", http.StatusUnauthorized)
			return
		}
		user := r.Header.Get("X-Remote-User")
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/apis/wardle.example.com/v1":
			_ = json.NewEncoder(w).Encode(map[string]any{
				"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "wardle.example.com/v1",
				"resources": []any{map[string]any{"name": "flunders", "singularName": "flunder", "namespaced": true, "kind": "Flunder",
					"verbs": []string{"get", "list"}, "shortNames": []string{"fl"}}},
			})
		case strings.HasPrefix(r.URL.Path, "/apis/wardle.example.com/v1/namespaces/") && strings.HasSuffix(r.URL.Path, "/flunders"):
			if user == "" {
				http.Error(w, "no user", http.StatusUnauthorized)
				return
			}
			ns := strings.Split(r.URL.Path, "/")[5]
			_ = json.NewEncoder(w).Encode(map[string]any{
				"kind": "FlunderList", "apiVersion": "wardle.example.com/v1", "metadata": map[string]any{"resourceVersion": "1"},
				"items": []any{map[string]any{"kind": "Flunder", "apiVersion": "wardle.example.com/v1",
					"metadata": map[string]any{"name": "flunder-for-" + user, "namespace": ns, "creationTimestamp": now.UTC().Format(time.RFC3339)}}},
			})
		default:
			http.NotFound(w, r)
		}
	})
	ln, err := net.Listen("tcp", net.JoinHostPort(addr, "0"))
	if err != nil {
		t.Fatal(err)
	}
	serverConfig := func() *tls.Config {
		roots := x509.NewCertPool()
		roots.AppendCertsFromPEM(requestHeaderCA())
		return &tls.Config{Certificates: []tls.Certificate{cert}, ClientCAs: roots, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12}
	}
	srv := &http.Server{Handler: handler, TLSConfig: &tls.Config{
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) { return serverConfig(), nil },
	}, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.ServeTLS(ln, "", "") }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().(*net.TCPAddr).Port, ca.CertPEM
}

// TestAggregatedAPIServer: an extension API server written here (trusting the front proxy through
// kube-system/extension-apiserver-authentication, as real ones do) is registered by an APIService
// over a Service and an EndpointSlice on a host address; it becomes Available, `kubectl get`
// answers through skiff with the caller's name, `kubectl api-resources` lists its resource, and an
// APIService whose service does not exist shows Available=False with its reason.
func TestAggregatedAPIServer(t *testing.T) {
	c := newCluster(t)
	mustContain(t, c.kubectl("get", "apiservices"), "v1.apps", "Local", "True")
	caPEM := c.kubectl("get", "configmap", "-n", "kube-system", "extension-apiserver-authentication", "-o", "jsonpath={.data.requestheader-client-ca-file}")
	namesJSON := c.kubectl("get", "configmap", "-n", "kube-system", "extension-apiserver-authentication", "-o", "jsonpath={.data.requestheader-allowed-names}")
	var allowed []string
	if err := json.Unmarshal([]byte(namesJSON), &allowed); err != nil {
		t.Fatalf("requestheader-allowed-names %q: %v", namesJSON, err)
	}
	hosts := newHostPair(t)
	port, wardleCA := wardleServer(t, hosts.a, func() []byte { return []byte(caPEM) }, allowed)

	c.stdin(wardleManifest(port, hosts.a, wardleCA)+`---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata:
  name: v1.nowhere.example.com
spec:
  group: nowhere.example.com
  version: v1
  groupPriorityMinimum: 1000
  versionPriority: 15
  insecureSkipTLSVerify: true
  service:
    namespace: wardle
    name: nowhere
`, "apply", "-f", "-")

	eventually(t, 60*time.Second, func() error {
		out, err := c.kubectlErr("get", "apiservice", "v1.wardle.example.com")
		if err != nil || !strings.Contains(out, "wardle/api") || !strings.Contains(out, "True") {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	})
	mustContain(t, c.kubectl("get", "flunders", "-n", "wardle"), "flunder-for-kubernetes-admin")
	mustContain(t, c.kubectl("get", "fl", "-n", "wardle", "-o", "name"), "flunder.wardle.example.com/flunder-for-kubernetes-admin")
	mustContain(t, c.kubectl("api-resources", "--api-group", "wardle.example.com"), "flunders", "fl", "wardle.example.com/v1", "Flunder")

	eventually(t, 60*time.Second, func() error {
		out, err := c.kubectlErr("get", "apiservice", "v1.nowhere.example.com")
		if err != nil || !strings.Contains(out, "False (ServiceNotFound)") {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	})
	mustContain(t, c.kubectl("get", "apiservice", "v1.nowhere.example.com", "-o", "jsonpath={.status.conditions[0].message}"),
		`service/nowhere in "wardle" is not present`)
}

// wardleManifest registers the wardle server at addr:port (its serving CA wardleCA) through a
// Service, an EndpointSlice and an APIService.
func wardleManifest(port int, addr string, wardleCA []byte) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Namespace
metadata:
  name: wardle
---
apiVersion: v1
kind: Service
metadata:
  name: api
  namespace: wardle
spec:
  ports:
  - name: https
    port: 443
    targetPort: %[1]d
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: api-1
  namespace: wardle
  labels:
    kubernetes.io/service-name: api
addressType: IPv4
ports:
- name: https
  port: %[1]d
  protocol: TCP
endpoints:
- addresses: ["%[2]s"]
  conditions:
    ready: true
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata:
  name: v1.wardle.example.com
spec:
  group: wardle.example.com
  version: v1
  groupPriorityMinimum: 1000
  versionPriority: 15
  caBundle: %[3]s
  service:
    namespace: wardle
    name: api
`, port, addr, base64.StdEncoding.EncodeToString(wardleCA))
}
