package e2e

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skiff-sh/skiff/internal/proxy"
)

const servicesManifest = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 3
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: web
        image: localhost/busybox:local
        command: ["sh", "-c", "mkdir -p /www && hostname > /www/index.html && exec httpd -f -p 8080 -h /www"]
        ports: [{containerPort: 8080, name: http}]
        readinessProbe:
          tcpSocket: {port: 8080}
          periodSeconds: 1
---
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  type: NodePort
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: http}]
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: udp
spec:
  replicas: 1
  selector:
    matchLabels: {app: udp}
  template:
    metadata:
      labels: {app: udp}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: udp
        image: localhost/busybox:local
        command: ["/tools/nettool", "udp-echo", "9000"]
        volumeMounts: [{name: tools, mountPath: /tools}]
      volumes:
      - name: tools
        hostPath: {path: TOOLS}
---
apiVersion: v1
kind: Service
metadata:
  name: udp
spec:
  selector: {app: udp}
  ports: [{name: echo, port: 5300, targetPort: 9000, protocol: UDP}]
---
apiVersion: v1
kind: Pod
metadata:
  name: client
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: client
    image: localhost/busybox:local
    command: ["sleep", "3600"]
    volumeMounts: [{name: tools, mountPath: /tools}]
  volumes:
  - name: tools
    hostPath: {path: TOOLS}
`

func iptablesSave(t *testing.T, table string) string {
	t.Helper()
	out, err := exec.Command("iptables-save", "-t", table).Output()
	if err != nil {
		t.Fatalf("iptables-save: %v", err)
	}
	return string(out)
}

// ownLines are the rules of the node's own chains that mention what.
func ownLines(save, prefix, what string) []string {
	var out []string
	for _, l := range strings.Split(save, "\n") {
		if strings.HasPrefix(l, "-A "+prefix+"-") && strings.Contains(l, what) {
			out = append(out, l)
		}
	}
	return out
}

// TestServiceProxy is issue 9's service proxy on one node: a ClusterIP spreads 50 requests from a
// pod over all three replicas, the NodePort answers from the host on the node address and on
// 127.0.0.1, a pod reaches the API server through the kubernetes Service with client-go's
// in-cluster config, a UDP Service answers, a Service scaled to zero refuses connections at once,
// a deleted Service leaves no rule, a node killed and restarted replaces its previous run's rules,
// and a stopped node leaves none of its rules or its device.
// Nothing is sent to a cluster IP before the node's rules for it exist.
func TestServiceProxy(t *testing.T) {
	requireRuntime(t)
	addr := testHostAddress(t)
	cidr := fmt.Sprintf("10.%d.%d.0/24", 96+rand.IntN(16), rand.IntN(256))
	c := newWorkerCluster(t, "--bind-address", addr, "--service-cidr", cidr)
	prefix := proxy.NodePrefix(c.dataDir)

	tools := filepath.Join(c.dataDir, "tools")
	buildNettool(t, tools)
	c.stdin(strings.ReplaceAll(servicesManifest, "TOOLS", tools), "apply", "-f", "-")
	for _, sel := range []string{"app=web", "app=udp"} {
		eventually(t, 120*time.Second, func() error {
			out, err := c.kubectlErr("wait", "--for=condition=Ready", "pod", "-l", sel, "--timeout=2s")
			if err != nil || strings.Count(out, "condition met") < map[string]int{"app=web": 3, "app=udp": 1}[sel] {
				return errString(out)
			}
			return nil
		})
	}
	eventually(t, 60*time.Second, func() error {
		out, err := c.kubectlErr("wait", "--for=condition=Ready", "pod/client", "--timeout=2s")
		if err != nil {
			return errString(out)
		}
		return nil
	})

	vip := c.kubectl("get", "svc", "web", "-o", "jsonpath={.spec.clusterIP}")
	nodePort := c.kubectl("get", "svc", "web", "-o", "jsonpath={.spec.ports[0].nodePort}")
	pods := strings.Fields(c.kubectl("get", "pods", "-l", "app=web", "-o", "jsonpath={.items[*].metadata.name}"))
	podIPs := strings.Fields(c.kubectl("get", "pods", "-l", "app=web", "-o", "jsonpath={.items[*].status.podIP}"))
	if len(pods) != 3 || len(podIPs) != 3 {
		t.Fatalf("web pods %v %v", pods, podIPs)
	}
	// The rules first: the VIP and every replica are programmed before anything is sent.
	eventually(t, 30*time.Second, func() error {
		rules := proxyRules(t, prefix)
		if len(ruleLines(rules, vip)) == 0 {
			return fmt.Errorf("no rule for %s yet", vip)
		}
		for _, ip := range podIPs {
			if len(endpointLines(rules, ip, "8080")) == 0 {
				return fmt.Errorf("no rule for endpoint %s yet", ip)
			}
		}
		return nil
	})

	mustContain(t, c.kubectl("get", "--raw", "/metrics"), "kubeproxy_sync_proxy_rules_duration_seconds_count")

	out, err := c.kubectlErr("exec", "client", "--", "sh", "-c", "for i in $(seq 50); do wget -q -O - http://"+vip+"/; done")
	if err != nil {
		t.Fatalf("50 requests to the cluster IP: %v\n%s", err, out)
	}
	for _, pod := range pods {
		if !strings.Contains(out, pod) {
			t.Errorf("replica %s never answered on %s over 50 requests:\n%s", pod, vip, out)
		}
	}

	for _, host := range []string{addr, "127.0.0.1"} {
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Get("http://" + net.JoinHostPort(host, nodePort) + "/")
		if err != nil {
			t.Errorf("NodePort on %s: %v", host, err)
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !containsAny(string(body), pods) {
			t.Errorf("NodePort on %s answered %q, not a replica", host, body)
		}
	}

	// The kubernetes Service reaches the API server: client-go's in-cluster config in a pod.
	apiVIP := c.kubectl("get", "svc", "kubernetes", "-o", "jsonpath={.spec.clusterIP}")
	eventually(t, 30*time.Second, func() error {
		if len(ruleLines(proxyRules(t, prefix), apiVIP)) == 0 {
			return fmt.Errorf("no rule for %s yet", apiVIP)
		}
		return nil
	})
	out, err = c.kubectlErr("exec", "client", "--", "/tools/nettool", "version")
	if err != nil || !strings.Contains(out, "host=https://"+apiVIP+":443") || !strings.Contains(out, "gitVersion=v") {
		t.Errorf("in-cluster /version through %s: %v\n%s", apiVIP, err, out)
	}

	// UDP.
	udpVIP := c.kubectl("get", "svc", "udp", "-o", "jsonpath={.spec.clusterIP}")
	udpPod := c.kubectl("get", "pods", "-l", "app=udp", "-o", "jsonpath={.items[0].metadata.name}")
	eventually(t, 30*time.Second, func() error {
		if len(ruleLines(proxyRules(t, prefix), udpVIP, "udp")) == 0 {
			return fmt.Errorf("no rule for %s yet", udpVIP)
		}
		return nil
	})
	// UDP is lossy and the echo server has no readiness probe (it may still be starting under
	// load), so the exchange is retried.
	eventually(t, 30*time.Second, func() error {
		out, err := c.kubectlErr("exec", "client", "--", "/tools/nettool", "udp", udpVIP+":5300", "ping")
		if err != nil || !strings.Contains(out, udpPod+" ping") {
			return fmt.Errorf("UDP through %s: %v: %s", udpVIP, err, out)
		}
		return nil
	})

	// A crash and a restart: the previous run's rules are found and replaced, the hooks are not
	// doubled, and the cluster IP still reaches every replica.
	c.kill()
	c.start()
	eventually(t, 60*time.Second, func() error {
		if n := preroutingHooks(t, prefix); n != 1 {
			return fmt.Errorf("%d PREROUTING hooks, want 1", n)
		}
		rules := proxyRules(t, prefix)
		for _, ip := range podIPs {
			if len(endpointLines(rules, ip, "8080")) == 0 {
				return fmt.Errorf("no rule for endpoint %s after the restart", ip)
			}
		}
		return nil
	})
	// The kubelet serves exec again a moment after the API server.
	eventually(t, 30*time.Second, func() error {
		out, err := c.kubectlErr("exec", "client", "--", "wget", "-q", "-O", "-", "http://"+vip+"/")
		if err != nil || !containsAny(out, pods) {
			return fmt.Errorf("cluster IP after a restart: %v: %s", err, out)
		}
		return nil
	})

	// Scaled to zero: refused at once, not a timeout.
	c.kubectl("scale", "deployment", "web", "--replicas=0")
	eventually(t, 60*time.Second, func() error {
		if len(ruleLines(proxyRules(t, prefix), vip, "reject")) == 0 {
			return fmt.Errorf("no reject rule for %s yet", vip)
		}
		return nil
	})
	start := time.Now()
	out, err = c.kubectlErr("exec", "client", "--", "wget", "-q", "-O", "-", "http://"+vip+"/")
	took := time.Since(start)
	if err == nil || !strings.Contains(out, "refused") {
		t.Errorf("a service without endpoints: want connection refused, got %v\n%s", err, out)
	}
	t.Logf("connection to a service without endpoints refused after %s (kubectl exec included)", took)

	// Deleted: none of its rules remain (a replica back first, so there is an endpoint chain to remove).
	c.kubectl("scale", "deployment", "web", "--replicas=1")
	eventually(t, 60*time.Second, func() error {
		if len(endpointLines(proxyRules(t, prefix), "", "8080")) == 0 {
			return fmt.Errorf("no endpoint rule yet")
		}
		return nil
	})
	c.kubectl("delete", "svc", "web")
	eventually(t, 30*time.Second, func() error {
		rules := proxyRules(t, prefix)
		if l := append(ruleLines(rules, vip), endpointLines(rules, "", "8080")...); len(l) > 0 {
			return fmt.Errorf("rules of the deleted service remain: %v", l)
		}
		return nil
	})

	// A clean stop removes everything the node's proxy owns.
	c.kubectl("delete", "deployment", "--all", "--cascade=foreground", "--timeout=60s")
	c.kubectl("delete", "pod", "--all", "--grace-period=1", "--timeout=60s")
	c.stop()
	for _, table := range []string{"nat", "filter"} {
		if save := iptablesSave(t, table); strings.Contains(save, prefix) {
			t.Errorf("%s rules left after the node stopped:\n%s", table, ownLines(save, prefix, ""))
		}
	}
	if rules := proxyRules(t, prefix); len(rules) > 0 {
		t.Errorf("nftables table %s left after the node stopped:\n%s", proxy.NftTable(prefix), strings.Join(rules, "\n"))
	}
	if out, err := exec.Command("ip", "link", "show", proxy.DeviceName(prefix)).CombinedOutput(); err == nil {
		t.Errorf("the service range device outlived the node: %s", out)
	}
	// Neither the crash, the restart nor the stop made the proxy log an error.
	log, _ := os.ReadFile(filepath.Join(c.dataDir, "skiff.log"))
	for _, line := range strings.Split(string(log), "\n") {
		if strings.Contains(line, "component=proxy") && strings.Contains(line, "level=ERROR") {
			t.Errorf("the proxy logged an error: %s", line)
		}
	}
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// removeProxyRules removes what a node's service proxy left on the host when the node did not stop
// cleanly (a test that killed it): its chains, hooks, nftables table and service-range device. A clean stop has
// removed them already.
func removeProxyRules(t *testing.T, dataDir string) {
	t.Helper()
	prefix := proxy.NodePrefix(dataDir)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	host := proxy.Host{}
	if err := host.CleanupAll(ctx, prefix); err != nil {
		t.Logf("remove the node's service rules: %v", err)
	}
	if err := host.DeleteDevice(ctx, proxy.DeviceName(prefix)); err != nil {
		t.Logf("remove the node's service range device: %v", err)
	}
}

// buildNettool builds the static test tool (test/e2e/nettool) into dir, which pods mount by
// hostPath.
func buildNettool(t *testing.T, dir string) {
	t.Helper()
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "nettool"), "./nettool")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build nettool: %v\n%s", err, out)
	}
}
