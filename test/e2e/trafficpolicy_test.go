package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skiff-sh/skiff/internal/proxy"
)

const trafficPolicyManifest = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: who
spec:
  replicas: 1
  selector:
    matchLabels: {app: who}
  template:
    metadata:
      labels: {app: who}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: who
        image: localhost/busybox:local
        command: ["/tools/nettool", "http-whoami", "8080"]
        volumeMounts: [{name: tools, mountPath: /tools}]
        readinessProbe:
          tcpSocket: {port: 8080}
          periodSeconds: 1
      volumes:
      - name: tools
        hostPath: {path: TOOLS}
---
apiVersion: v1
kind: Service
metadata:
  name: who
spec:
  type: LoadBalancer
  externalTrafficPolicy: Local
  selector: {app: who}
  ports: [{name: http, port: 80, targetPort: 8080}]
`

// TestTrafficPolicyLocal is issue 9's externalTrafficPolicy Local, health-check node port and
// loadBalancerSourceRanges on one worker bound to an address of a test bridge, with a client in a
// network namespace on that bridge (addresses this test created): the Service gets a
// healthCheckNodePort, which answers 200 with localEndpoints 1 while the pod runs and 503 after
// scaling to 0; the NodePort seen from the client keeps the client's address; a source range
// without the client drops its traffic to the load-balancer IP (the NodePort still answers), one
// with it lets it through. Nothing is sent to the LB IP before the node's rules for it exist.
func TestTrafficPolicyLocal(t *testing.T) {
	requireRuntime(t)
	n := newTestNet(t)
	client := n.addHost()
	nodeIP := n.HostIP()
	healthz := freePort(t)
	cidr := fmt.Sprintf("10.%d.%d.0/24", 96+rand.IntN(16), rand.IntN(256))
	c := newWorkerCluster(t, "--bind-address", nodeIP, "--service-cidr", cidr, "--proxy-healthz-port", strconv.Itoa(healthz))
	prefix := proxy.NodePrefix(c.dataDir)

	tools := filepath.Join(c.dataDir, "tools")
	buildNettool(t, tools)
	c.stdin(strings.ReplaceAll(trafficPolicyManifest, "TOOLS", tools), "apply", "-f", "-")
	eventually(t, 120*time.Second, func() error {
		out, err := c.kubectlErr("wait", "--for=condition=Ready", "pod", "-l", "app=who", "--timeout=2s")
		if err != nil {
			return errString(out + c.kubectl("get", "pods", "-o", "wide"))
		}
		return nil
	})
	podIP := c.kubectl("get", "pods", "-l", "app=who", "-o", "jsonpath={.items[0].status.podIP}")
	hcPort := c.kubectl("get", "svc", "who", "-o", "jsonpath={.spec.healthCheckNodePort}")
	nodePort := c.kubectl("get", "svc", "who", "-o", "jsonpath={.spec.ports[0].nodePort}")
	if hc, err := strconv.Atoi(hcPort); err != nil || hc < 30000 || hc > 32767 || hcPort == nodePort {
		t.Fatalf("healthCheckNodePort %q (nodePort %s), want a port of the node-port range", hcPort, nodePort)
	}
	var lbIP string
	eventually(t, 90*time.Second, func() error {
		lbIP = c.kubectl("get", "svc", "who", "-o", "jsonpath={.status.loadBalancer.ingress[0].ip}")
		if lbIP == "" {
			return errString("no load-balancer IP yet; events:\n" + c.kubectl("get", "events", "--field-selector", "involvedObject.name=who"))
		}
		return nil
	})
	// The node's rules for the LB IP and the endpoint exist before anything is sent.
	waitRules := func(what ...string) {
		t.Helper()
		eventually(t, 60*time.Second, func() error {
			rules := proxyRules(t, prefix)
			if len(endpointLines(rules, podIP, "8080")) == 0 {
				return fmt.Errorf("no rule of %s to %s:8080 yet", prefix, podIP)
			}
			for _, w := range what {
				if len(ruleLines(rules, w)) == 0 {
					return fmt.Errorf("no rule of %s with %q yet", prefix, w)
				}
			}
			return nil
		})
	}
	waitRules(lbIP, nodePort)

	hc := func() (int, map[string]any, error) {
		resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + nodeIP + ":" + hcPort + "/")
		if err != nil {
			return 0, nil, err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		var r map[string]any
		if err := json.Unmarshal(body, &r); err != nil {
			return resp.StatusCode, nil, fmt.Errorf("reply %q: %w", body, err)
		}
		return resp.StatusCode, r, nil
	}
	eventually(t, 30*time.Second, func() error {
		code, r, err := hc()
		if err != nil || code != 200 || r["localEndpoints"] != float64(1) || r["serviceProxyHealthy"] != true ||
			fmt.Sprint(r["service"]) != "map[name:who namespace:default]" {
			return fmt.Errorf("health check: %d %v %v", code, r, err)
		}
		return nil
	})
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get(fmt.Sprintf("http://%s:%d/healthz", nodeIP, healthz))
	if err != nil || resp.StatusCode != 200 {
		t.Errorf("proxy /healthz: %v %v", err, resp)
	}
	if resp != nil {
		resp.Body.Close()
	}

	// From the client's namespace: curl prints "<pod> <the peer address the pod saw>".
	fromClient := func(addr string) (string, error) {
		out, err := client.Command("curl", "-sS", "--max-time", "3", "http://"+addr+"/").CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	eventually(t, 30*time.Second, func() error {
		out, err := fromClient(nodeIP + ":" + nodePort)
		if err != nil || !strings.HasPrefix(out, "who-") || !strings.HasSuffix(out, " "+client.IP) {
			return fmt.Errorf("NodePort from %s: %v %q, want the pod to see %s", client.IP, err, out, client.IP)
		}
		return nil
	})
	if out, err := fromClient(lbIP + ":80"); err != nil || !strings.HasSuffix(out, " "+client.IP) {
		t.Errorf("LB IP from the client before any source range: %v %q", err, out)
	}

	// A source range without the client: its traffic to the LB IP is dropped, the NodePort is not
	// subject to the ranges.
	c.kubectl("patch", "svc", "who", "--type=merge", "-p", `{"spec":{"loadBalancerSourceRanges":["192.0.2.0/24"]}}`)
	waitSourceRangeRule(t, prefix, "192.0.2.0/24")
	waitRules("not in loadBalancerSourceRanges")
	if out, err := fromClient(lbIP + ":80"); err == nil {
		t.Errorf("LB IP answered a client outside loadBalancerSourceRanges: %q", out)
	}
	if out, err := fromClient(nodeIP + ":" + nodePort); err != nil || !strings.HasSuffix(out, " "+client.IP) {
		t.Errorf("NodePort with source ranges set: %v %q", err, out)
	}
	c.kubectl("patch", "svc", "who", "--type=merge", "-p", `{"spec":{"loadBalancerSourceRanges":["`+client.IP+`/32"]}}`)
	waitSourceRangeRule(t, prefix, client.IP+"/32")
	if out, err := fromClient(lbIP + ":80"); err != nil || !strings.HasSuffix(out, " "+client.IP) {
		t.Errorf("LB IP from a client inside loadBalancerSourceRanges: %v %q", err, out)
	}

	// No local endpoint: the health check says so.
	c.kubectl("scale", "deployment", "who", "--replicas=0")
	eventually(t, 60*time.Second, func() error {
		code, r, err := hc()
		if err != nil || code != 503 || r["localEndpoints"] != float64(0) {
			return fmt.Errorf("health check after scaling to 0: %d %v %v", code, r, err)
		}
		return nil
	})
}
