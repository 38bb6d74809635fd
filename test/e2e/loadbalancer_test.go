package e2e

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

const lbManifest = `apiVersion: v1
kind: Service
metadata:
  name: NAME
spec:
  type: LoadBalancer
  selector: {app: who}
  ports: [{port: 80, targetPort: 8080}]
`

// loadBalancerService is issue 9's cloud controller manager with the built-in local provider,
// on three workers in network namespaces: a LoadBalancer Service gets every worker's address
// (addresses this test created) in status.loadBalancer.ingress and the cleanup finalizer, and
// answers from the host on each of them, also on a node without a backend pod (host-gw carries
// the traffic on); a second one on the same port stays pending with a SyncLoadBalancerFailed
// event, and gets the addresses once the first is deleted (which clears its rules and finalizer).
// It runs on TestPodNetworkAcrossNodes's cluster.
func loadBalancerService(t *testing.T, pc *podNetCluster) {
	c := pc.c
	manifest := pc.whoamiPod("who-1", "worker-1") + pc.whoamiPod("who-2", "worker-2") + strings.ReplaceAll(lbManifest, "NAME", "lb")
	c.stdin(manifest, "apply", "-f", "-")
	var want []string
	for _, w := range pc.workers {
		want = append(want, w.host.IP)
	}
	slices.Sort(want)
	waitIngress := func(svc string) {
		t.Helper()
		eventually(t, 90*time.Second, func() error {
			got := strings.Fields(c.kubectl("get", "svc", svc, "-o", "jsonpath={.status.loadBalancer.ingress[*].ip}"))
			slices.Sort(got)
			if !slices.Equal(got, want) {
				return fmt.Errorf("%s ingress %v, want %v; events:\n%s", svc, got, want, c.kubectl("get", "events", "--field-selector", "involvedObject.name="+svc))
			}
			return nil
		})
	}
	waitIngress("lb")
	mustContain(t, c.kubectl("get", "svc", "lb", "-o", "jsonpath={.metadata.finalizers}"), "service.kubernetes.io/load-balancer-cleanup")
	mustContain(t, c.kubectl("get", "events", "--field-selector", "involvedObject.name=lb"), "EnsuredLoadBalancer")
	mustContain(t, c.kubectl("get", "lease", "-n", "kube-system", "cloud-controller-manager", "-o", "jsonpath={.spec.holderIdentity}"), "cp-1_")
	eventually(t, 120*time.Second, func() error {
		out, err := c.kubectlErr("wait", "--for=condition=Ready", "pod", "-l", "app=who", "--timeout=2s")
		if err != nil || strings.Count(out, "condition met") < 2 {
			return errString(out + c.kubectl("get", "pods", "-o", "wide"))
		}
		return nil
	})

	// Each worker's rules for its own address and the backends exist before the host sends anything.
	ips := strings.Fields(c.kubectl("get", "pods", "-l", "app=who", "-o", "jsonpath={.items[*].status.podIP}"))
	get := func(addr string) (string, error) {
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Get("http://" + addr + ":80/")
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return string(body), err
	}
	for _, w := range pc.workers {
		natRulesFor(t, w, w.host.IP)
		eventually(t, 60*time.Second, func() error {
			out, _ := hostRules(w.host.Command)
			for _, ip := range ips {
				if !hostHasEndpointRule(out, ip, "8080") {
					return fmt.Errorf("%s: no rule for endpoint %s yet", w.name, ip)
				}
			}
			return nil
		})
		body, err := get(w.host.IP)
		if err != nil || !strings.HasPrefix(body, "who-") {
			t.Errorf("load balancer on %s (%s): %v %q", w.host.IP, w.name, err, body)
		}
	}

	// A second balancer on the same port has no node to go to: pending, with a warning.
	c.stdin(strings.ReplaceAll(lbManifest, "NAME", "lb2"), "apply", "-f", "-")
	eventually(t, 60*time.Second, func() error {
		ev := c.kubectl("get", "events", "--field-selector", "involvedObject.name=lb2")
		if !strings.Contains(ev, "SyncLoadBalancerFailed") || !strings.Contains(ev, "port in use by default/lb") {
			return errString("events of lb2:\n" + ev)
		}
		return nil
	})
	if got := c.kubectl("get", "svc", "lb2", "-o", "jsonpath={.status.loadBalancer.ingress}"); got != "" {
		t.Errorf("lb2 got addresses while lb holds its port: %s", got)
	}

	// Deleting the first: finalizer lifted, the Service gone, and the second takes the port.
	c.kubectl("delete", "svc", "lb", "--timeout=60s")
	waitIngress("lb2")
	mustContain(t, c.kubectl("get", "events", "--field-selector", "involvedObject.name=lb"), "DeletedLoadBalancer")
	for _, w := range pc.workers {
		eventually(t, 60*time.Second, func() error {
			body, err := get(w.host.IP)
			if err != nil || !strings.HasPrefix(body, "who-") {
				return fmt.Errorf("lb2 on %s: %v %q", w.host.IP, err, body)
			}
			return nil
		})
	}
}
