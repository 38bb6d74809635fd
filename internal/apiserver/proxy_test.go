package apiserver

//lint:file-ignore SA1019 core/v1 Endpoints are deprecated, not removed: services/proxy reads them.

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
)

func TestSplitSchemeNamePort(t *testing.T) {
	tests := []struct {
		in                 string
		scheme, name, port string
		ok                 bool
	}{
		{"web", "", "web", "", true},
		{"web:8080", "", "web", "8080", true},
		{"https:web:443", "https", "web", "443", true},
		{"https:web:", "https", "web", "", true},
		{":web:80", "", "web", "80", true},
		{"https::80", "", "", "", false},
		{"ftp:web:21", "", "", "", false},
		{"a:b:c:d", "", "", "", false},
		{"", "", "", "", false},
	}
	for _, tt := range tests {
		scheme, name, port, ok := splitSchemeNamePort(tt.in)
		if scheme != tt.scheme || name != tt.name || port != tt.port || ok != tt.ok {
			t.Errorf("%q: got %q %q %q %v", tt.in, scheme, name, port, ok)
		}
	}
}

// backend is a test server on loopback that records what reached it and speaks a tiny upgraded
// protocol on /upgrade.
func backend(t *testing.T, tlsServer bool) (*httptest.Server, *string) {
	t.Helper()
	var seen string
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/upgrade" {
			conn, rw, err := http.NewResponseController(w).Hijack()
			if err != nil {
				return
			}
			defer conn.Close()
			_, _ = rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
			_ = rw.Flush()
			line, _ := rw.ReadString('\n')
			_, _ = rw.WriteString("echo " + line)
			_ = rw.Flush()
			return
		}
		if r.URL.Path == "/page" {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprintf(w, `<a href="/rewriteme">x</a><img src="rel.png"><a href="http://%s/abs">y</a> uri=%s`, r.Host, r.Header.Get("X-Forwarded-Uri"))
			return
		}
		if r.URL.Path == "/moved" {
			http.Redirect(w, r, "/target", http.StatusFound)
			return
		}
		body, _ := io.ReadAll(r.Body)
		seen = fmt.Sprintf("%s %s?%s auth=%q body=%q", r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("Authorization"), body)
		fmt.Fprint(w, "hello from backend")
	})
	var srv *httptest.Server
	if tlsServer {
		srv = httptest.NewTLSServer(h)
	} else {
		srv = httptest.NewServer(h)
	}
	t.Cleanup(srv.Close)
	return srv, &seen
}

func port(t *testing.T, srv *httptest.Server) string {
	t.Helper()
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Port()
}

// raw does one request against the API server as the admin and returns the code and body.
func raw(t *testing.T, c *testCluster, method, path, body string) (int, string) {
	t.Helper()
	rt, err := rest.TransportFor(c.admin)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(method, c.server.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer not-for-the-backend")
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out)
}

// forceStatus writes obj's new state straight to storage, past validation: pods, endpoints and
// nodes on loopback are refused by the API, and the proxies are tested against loopback servers.
func forceUpdate(t *testing.T, c *testCluster, resource, namespace, name string, mutate func(runtime.Object)) {
	t.Helper()
	h := c.api.handlerForGroupResource(schema.GroupResource{Resource: resource})
	_, err := h.st.GuaranteedUpdate(context.Background(), namespace, name, nil, false, func(current runtime.Object) (runtime.Object, error) {
		next := current.DeepCopyObject()
		mutate(next)
		return next, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestProxySubresources(t *testing.T) {
	c := startTestCluster(t)
	c.api.proxyAddressAllowed = func(ip net.IP) bool { return ip != nil && ip.IsLoopback() }
	ctx := context.Background()
	ns := c.namespace(t, "proxy")
	plain, seen := backend(t, false)

	pod := makePod("web").ns(ns).label("app", "web").obj()
	pod.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 1}}
	if _, err := c.client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	forceUpdate(t, c, "pods", ns, "web", func(o runtime.Object) {
		p := o.(*corev1.Pod)
		p.Status.PodIP, p.Status.PodIPs = "127.0.0.1", []corev1.PodIP{{IP: "127.0.0.1"}}
	})

	t.Run("pods/proxy", func(t *testing.T) {
		base := "/api/v1/namespaces/" + ns + "/pods/web:" + port(t, plain) + "/proxy"
		code, body := raw(t, c, http.MethodGet, base+"/some/path?x=1&y=2", "")
		if code != 200 || body != "hello from backend" || *seen != `GET /some/path?x=1&y=2 auth="" body=""` {
			t.Fatalf("GET: %d %q, backend saw %q", code, body, *seen)
		}
		for _, method := range []string{http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
			code, _ := raw(t, c, method, base+"/m", "payload")
			if want := method + ` /m? auth="" body="payload"`; code != 200 || *seen != want {
				t.Fatalf("%s: %d, backend saw %q, want %q", method, code, *seen, want)
			}
		}
		// Links and redirects to the backend's root stay under the proxy path.
		code, body = raw(t, c, http.MethodGet, base+"/page", "")
		want := `<a href="` + base + `/rewriteme">x</a><img src="rel.png"><a href="` + base + `/abs">y</a> uri=` + base + `/page`
		if code != 200 || body != want {
			t.Fatalf("HTML page: %d\n got %s\nwant %s", code, body, want)
		}
		// A redirect to the backend's root stays under the proxy path too.
		rt, err := rest.TransportFor(c.admin)
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest(http.MethodGet, c.server.URL+base+"/moved", nil)
		resp, err := rt.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusFound || loc != base+"/target" {
			t.Fatalf("redirect: %d to %q, want 302 to %s/target", resp.StatusCode, loc, base)
		}
		// GET at the proxy root is sent to the root with a slash, as Kubernetes does.
		code, _ = raw(t, c, http.MethodGet, base+"?method=GET", "")
		if code != http.StatusMovedPermanently {
			t.Fatalf("GET of the proxy root: %d, want 301", code)
		}
		// Without a port, the first declared container port (1, where nothing listens): a 503.
		code, body = raw(t, c, http.MethodGet, "/api/v1/namespaces/"+ns+"/pods/web/proxy/", "")
		if code != http.StatusServiceUnavailable || !strings.Contains(body, "error trying to reach service") {
			t.Fatalf("unreachable port: %d %s", code, body)
		}
		code, body = raw(t, c, http.MethodGet, "/api/v1/namespaces/"+ns+"/pods/a:b:c:d/proxy/", "")
		if code != http.StatusBadRequest || !strings.Contains(body, `invalid pod request \"a:b:c:d\"`) {
			t.Fatalf("bad name: %d %s", code, body)
		}
	})

	t.Run("pods/proxy upgrade", func(t *testing.T) {
		tlsCfg, err := rest.TLSConfigFor(c.admin)
		if err != nil {
			t.Fatal(err)
		}
		conn, err := tls.Dial("tcp", strings.TrimPrefix(c.server.URL, "https://"), tlsCfg)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprintf(conn, "GET /api/v1/namespaces/%s/pods/web:%s/proxy/upgrade HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n", ns, port(t, plain))
		br := bufio.NewReader(conn)
		resp, err := http.ReadResponse(br, nil)
		if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
			t.Fatalf("upgrade: %v %v", err, resp)
		}
		fmt.Fprint(conn, "ping\n")
		line, err := br.ReadString('\n')
		if err != nil || line != "echo ping\n" {
			t.Fatalf("after the upgrade: %q %v", line, err)
		}
	})

	t.Run("services/proxy", func(t *testing.T) {
		tlsBackend, tlsSeen := backend(t, true)
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{
				{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}, {Name: "https", Port: 443, Protocol: corev1.ProtocolTCP},
			}},
		}
		if _, err := c.client.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		code, body := raw(t, c, http.MethodGet, "/api/v1/namespaces/"+ns+"/services/web:http/proxy/", "")
		if code != http.StatusNotFound {
			t.Fatalf("without endpoints: %d %s", code, body)
		}
		ep := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns}, Subsets: []corev1.EndpointSubset{{
			Addresses: []corev1.EndpointAddress{{IP: "10.0.0.9", TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: "web"}}},
			Ports:     []corev1.EndpointPort{{Name: "http", Port: 1}, {Name: "https", Port: 1}},
		}}}
		if _, err := c.client.CoreV1().Endpoints(ns).Create(ctx, ep, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// The address is not the pod's: never dialled.
		code, body = raw(t, c, http.MethodGet, "/api/v1/namespaces/"+ns+"/services/web:http/proxy/", "")
		if code != http.StatusServiceUnavailable || !strings.Contains(body, `no endpoints available for service \"web:http\"`) {
			t.Fatalf("foreign address: %d %s", code, body)
		}
		forceUpdate(t, c, "endpoints", ns, "web", func(o runtime.Object) {
			e := o.(*corev1.Endpoints)
			e.Subsets[0].Addresses[0].IP = "127.0.0.1"
			e.Subsets[0].Ports[0].Port = int32(mustAtoi(t, port(t, plain)))
			e.Subsets[0].Ports[1].Port = int32(mustAtoi(t, port(t, tlsBackend)))
		})
		for _, name := range []string{"web:http", "web:80"} {
			code, body = raw(t, c, http.MethodGet, "/api/v1/namespaces/"+ns+"/services/"+name+"/proxy/svc?q=1", "")
			if code != 200 || body != "hello from backend" || *seen != `GET /svc?q=1 auth="" body=""` {
				t.Fatalf("%s: %d %q, backend saw %q", name, code, body, *seen)
			}
		}
		code, body = raw(t, c, http.MethodGet, "/api/v1/namespaces/"+ns+"/services/https:web:https/proxy/secure", "")
		if code != 200 || body != "hello from backend" || !strings.HasPrefix(*tlsSeen, "GET /secure") {
			t.Fatalf("https: %d %q, backend saw %q", code, body, *tlsSeen)
		}
		code, body = raw(t, c, http.MethodGet, "/api/v1/namespaces/"+ns+"/services/web:8080/proxy/", "")
		if code != http.StatusServiceUnavailable || !strings.Contains(body, `no service port 8080 found for service \"web\"`) {
			t.Fatalf("unknown port: %d %s", code, body)
		}
	})

	t.Run("nodes/proxy", func(t *testing.T) {
		kubelet, kubeletSeen := backend(t, true)
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
		if _, err := c.client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		code, body := raw(t, c, http.MethodGet, "/api/v1/nodes/n1/proxy/healthz", "")
		if code != http.StatusServiceUnavailable || !strings.Contains(body, "no kubelet client is configured") {
			t.Fatalf("without a kubelet client: %d %s", code, body)
		}
		// The kubelet client of a real server verifies kubelets against the cluster CA; the test
		// kubelet's certificate is httptest's.
		c.api.cfg.Kubelet = &KubeletClientConfig{TLS: kubelet.Client().Transport.(*http.Transport).TLSClientConfig}
		c.api.kubeletTransport = kubelet.Client().Transport.(*http.Transport)
		forceUpdate(t, c, "nodes", "", "n1", func(o runtime.Object) {
			n := o.(*corev1.Node)
			n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}}
			n.Status.DaemonEndpoints.KubeletEndpoint.Port = int32(mustAtoi(t, port(t, kubelet)))
		})
		code, body = raw(t, c, http.MethodGet, "/api/v1/nodes/n1/proxy/healthz", "")
		if code != 200 || body != "hello from backend" || *kubeletSeen != `GET /healthz? auth="" body=""` {
			t.Fatalf("kubelet: %d %q, kubelet saw %q", code, body, *kubeletSeen)
		}
		// Another port of the node goes over plain HTTP.
		code, body = raw(t, c, http.MethodGet, "/api/v1/nodes/n1:"+port(t, plain)+"/proxy/other", "")
		if code != 200 || *seen != `GET /other? auth="" body=""` {
			t.Fatalf("other port: %d %q, backend saw %q", code, body, *seen)
		}
	})
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	var n int
	if _, err := fmt.Sscan(s, &n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestProxyPath(t *testing.T) {
	tests := []struct{ path, want string }{
		{"/api/v1/namespaces/ns/pods/web:80/proxy/a/b/", "/a/b/"},
		{"/api/v1/namespaces/ns/pods/web/proxy", ""},
		{"/api/v1/namespaces/proxy/pods/proxy/proxy/pods/proxy/proxy", "/pods/proxy/proxy"},
		{"/api/v1/nodes/n1/proxy/healthz", "/healthz"},
	}
	for _, tt := range tests {
		r := httptest.NewRequest(http.MethodGet, tt.path, nil)
		if got := proxyPath(r, ParseRequestInfo(r)); got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.path, got, tt.want)
		}
	}
}
