package e2e

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

const proxiedRC = `apiVersion: v1
kind: ReplicationController
metadata:
  name: web
spec:
  replicas: 1
  template:
    metadata:
      labels:
        app: web
    spec:
      terminationGracePeriodSeconds: 1 # httpd as PID 1 ignores SIGTERM: no 30 s wait at cleanup
      containers:
      - name: web
        image: localhost/busybox:local
        command: ["sh", "-c", "mkdir -p /www && echo hello-through-the-proxy > /www/index.html && exec httpd -f -p 8080 -h /www"]
        ports:
        - containerPort: 8080
          name: http
`

// TestProxySubresources reaches a real kubelet and a real pod through the API server's proxies:
// nodes/proxy to the kubelet's healthz, services/proxy and pods/proxy to an RC's pod, and the same
// through `kubectl proxy`.
func TestProxySubresources(t *testing.T) {
	c := newWorkerCluster(t)
	node := c.kubectl("get", "nodes", "-o", "jsonpath={.items[0].metadata.name}")
	mustContain(t, c.kubectl("get", "--raw", "/api/v1/nodes/"+node+"/proxy/healthz"), "ok")

	c.stdin(proxiedRC, "apply", "-f", "-")
	t.Cleanup(func() { _, _ = c.kubectlErr("delete", "rc", "web", "--cascade=foreground", "--timeout=60s") })
	eventually(t, 60*time.Second, func() error {
		out, err := c.kubectlErr("wait", "--for=condition=Ready", "pod", "-l", "app=web", "--timeout=2s")
		if err != nil || !strings.Contains(out, "condition met") {
			return errString(out)
		}
		return nil
	})
	pod := c.kubectl("get", "pods", "-l", "app=web", "-o", "jsonpath={.items[0].metadata.name}")
	mustContain(t, c.kubectl("get", "--raw", "/api/v1/namespaces/default/pods/"+pod+":8080/proxy/index.html"), "hello-through-the-proxy")
	// Without a port, the first port the containers declare.
	mustContain(t, c.kubectl("get", "--raw", "/api/v1/namespaces/default/pods/"+pod+"/proxy/"), "hello-through-the-proxy")

	c.kubectl("expose", "rc", "web", "--port=80", "--target-port=http")
	for _, svc := range []string{"web:80", "http:web:80"} {
		eventually(t, 30*time.Second, func() error {
			out, err := c.kubectlErr("get", "--raw", "/api/v1/namespaces/default/services/"+svc+"/proxy/")
			if err != nil || !strings.Contains(out, "hello-through-the-proxy") {
				return errString(svc + ": " + out)
			}
			return nil
		})
	}

	port := freePort(t)
	proxy := c.kubectlCmd(t.Context(), "", "proxy", "--port="+itoa(port))
	if err := proxy.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = proxy.Process.Kill(); _, _ = proxy.Process.Wait() }()
	eventually(t, 20*time.Second, func() error {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/api/v1/namespaces/default/services/web:80/proxy/", port))
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if !strings.Contains(string(body), "hello-through-the-proxy") {
			return errString(fmt.Sprintf("%d %s", resp.StatusCode, body))
		}
		return nil
	})
}
