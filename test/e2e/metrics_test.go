package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	metricsclient "k8s.io/metrics/pkg/client/clientset/versioned"
)

// busyPod burns CPU in a loop, capped at 200m so that the test does not take a core of the
// shared machine.
const busyPod = `apiVersion: v1
kind: Pod
metadata:
  name: busy
  labels: {app: busy}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: spin
    image: localhost/busybox:local
    command: ["sh", "-c", "while :; do :; done"]
    resources:
      requests: {cpu: 100m, memory: 16Mi}
      limits: {cpu: 200m, memory: 32Mi}
`

// pollEvery retries f every interval until it returns nil or timeout passes (kubectl calls are
// too heavy to repeat every 100 ms).
func pollEvery(t *testing.T, timeout, interval time.Duration, f func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("condition not met in %s: %v", timeout, err)
		}
		time.Sleep(interval)
	}
}

// TestResourceMetrics is issue 11's "kubectl top" with nothing installed: the kubelet serves the
// Summary API and resource metrics, the API server scrapes them into metrics.k8s.io, and kubectl
// top shows a busy pod's CPU and the node's CPU and memory.
func TestResourceMetrics(t *testing.T) {
	c := newWorkerCluster(t, "--metrics-resolution=5s")
	node := strings.TrimPrefix(strings.TrimSpace(c.kubectl("get", "nodes", "-o", "name")), "node/")
	c.stdin(busyPod, "apply", "-f", "-")
	c.kubectl("wait", "--for=condition=Ready", "pod/busy", "--timeout=60s")

	// The kubelet's Summary API through the API server's node proxy.
	pollEvery(t, 30*time.Second, time.Second, func() error {
		out, err := c.kubectlErr("get", "--raw", "/api/v1/nodes/"+node+"/proxy/stats/summary")
		if err != nil {
			return errString(out)
		}
		var s statsv1alpha1.Summary
		if err := json.Unmarshal([]byte(out), &s); err != nil {
			return fmt.Errorf("summary: %w: %s", err, out)
		}
		if s.Node.NodeName != node || s.Node.CPU == nil || s.Node.CPU.UsageCoreNanoSeconds == nil || s.Node.Memory == nil ||
			s.Node.Memory.WorkingSetBytes == nil || *s.Node.Memory.WorkingSetBytes == 0 || s.Node.Fs == nil {
			return fmt.Errorf("summary node = %+v", s.Node)
		}
		for _, p := range s.Pods {
			if p.PodRef.Name != "busy" || p.PodRef.Namespace != "default" {
				continue
			}
			if len(p.Containers) != 1 || p.Containers[0].Name != "spin" || p.Containers[0].CPU == nil ||
				p.Containers[0].CPU.UsageCoreNanoSeconds == nil || *p.Containers[0].CPU.UsageCoreNanoSeconds == 0 ||
				p.CPU == nil || p.Memory == nil || p.Memory.WorkingSetBytes == nil {
				return fmt.Errorf("summary pod busy = %+v", p)
			}
			return nil
		}
		return fmt.Errorf("summary has no pod default/busy: %s", out)
	})
	out := c.kubectl("get", "--raw", "/api/v1/nodes/"+node+"/proxy/metrics/resource")
	mustContain(t, out, `container_cpu_usage_seconds_total{container="spin",namespace="default",pod="busy"}`,
		`pod_memory_working_set_bytes{namespace="default",pod="busy"}`, "node_cpu_usage_seconds_total ", "resource_scrape_error 0")
	// The kubelet's own /metrics: its node's name and what runs (e2e.test's metrics grabber).
	mustContain(t, c.kubectl("get", "--raw", "/api/v1/nodes/"+node+"/proxy/metrics"),
		`kubelet_node_name{node="`+node+`"} 1`, `kubelet_running_containers{container_state="running"} `, "kubelet_running_pods ")

	// The API server lists the group and reports its APIService as local and available.
	mustContain(t, c.kubectl("api-resources", "--api-group=metrics.k8s.io"), "NodeMetrics", "PodMetrics")
	available := c.kubectl("get", "apiservice", "v1beta1.metrics.k8s.io", "-o", `jsonpath={.status.conditions[?(@.type=="Available")].status}/{.status.conditions[?(@.type=="Available")].reason}`)
	if available != "True/Local" {
		t.Errorf("APIService v1beta1.metrics.k8s.io Available = %q, want True/Local", available)
	}

	// kubectl top pods: the busy pod's CPU is not zero once two scrapes have been made.
	pollEvery(t, 90*time.Second, 2*time.Second, func() error {
		out, err := c.kubectlErr("top", "pods", "--no-headers")
		if err != nil {
			return errString(out)
		}
		for _, line := range strings.Split(out, "\n") {
			f := strings.Fields(line)
			if len(f) == 3 && f[0] == "busy" {
				cpu, err := resource.ParseQuantity(f[1])
				if err != nil || cpu.MilliValue() == 0 {
					return fmt.Errorf("busy pod CPU %q is zero or unreadable: %s", f[1], out)
				}
				t.Logf("kubectl top pods: %s", line)
				return nil
			}
		}
		return fmt.Errorf("no busy pod in kubectl top pods:\n%s", out)
	})
	// The HPA lists PodMetrics by its target's selector.
	mustContain(t, c.kubectl("top", "pods", "-l", "app=busy", "--containers"), "busy", "spin")
	raw := c.kubectl("get", "--raw", "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods?labelSelector=app%3Dnone")
	mustNotContain(t, raw, `"name":"busy"`)
	// ... through k8s.io/metrics' clientset, in protobuf as skiff's controller manager asks.
	restCfg, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	restCfg.ContentType = "application/vnd.kubernetes.protobuf"
	restCfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	mc, err := metricsclient.NewForConfig(restCfg)
	if err != nil {
		t.Fatal(err)
	}
	list, err := mc.MetricsV1beta1().PodMetricses("default").List(t.Context(), metav1.ListOptions{LabelSelector: "app=busy"})
	if err != nil || len(list.Items) != 1 || list.Items[0].Name != "busy" || len(list.Items[0].Containers) != 1 || list.Items[0].Containers[0].Usage.Cpu().IsZero() {
		t.Fatalf("PodMetrics app=busy through the clientset = %+v, %v", list, err)
	}

	// kubectl top nodes: the node with CPU and memory and their percentages of allocatable.
	pollEvery(t, 30*time.Second, 2*time.Second, func() error {
		out, err := c.kubectlErr("top", "nodes", "--no-headers")
		if err != nil {
			return errString(out)
		}
		f := strings.Fields(out)
		if len(f) < 5 || f[0] != node || !strings.HasSuffix(f[1], "m") || !strings.HasSuffix(f[2], "%") || !strings.HasSuffix(f[3], "Mi") {
			return fmt.Errorf("kubectl top nodes = %q", out)
		}
		t.Logf("kubectl top nodes: %s", strings.TrimSpace(out))
		return nil
	})

	// Read-only: a write is 405 with a Status.
	out, err = c.kubectlErr("delete", "--raw", "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods/busy")
	if err == nil || !strings.Contains(out, "MethodNotAllowed") && !strings.Contains(out, "405") && !strings.Contains(out, "not allowed") {
		t.Errorf("delete of a PodMetrics = %v: %s, want 405 MethodNotAllowed", err, out)
	}
}

// TestResourceMetricsAcrossNodes: the API server scrapes a joined worker that runs in a network
// namespace of its own (its kubelet on the worker's address), so kubectl top shows the worker and
// a busy pod on it; the worker's summary lists its own interfaces.
func TestResourceMetricsAcrossNodes(t *testing.T) {
	n := newTestNet(t)
	c := newTmpfsJoinCluster(t, n)
	token := c.createToken()
	w := newJoinedNode(t, n.addHost(), "worker-1", c.ServerURL(n))
	w.start(token)
	t.Cleanup(w.stop)
	t.Cleanup(func() { _, _ = c.kubectlErr("delete", "pods", "--all", "--grace-period=1", "--timeout=60s") })
	eventually(t, 300*time.Second, func() error {
		out, err := c.kubectlErr("wait", "--for=condition=Ready", "node/worker-1", "--timeout=2s")
		if err != nil {
			return errString(out + "\n" + w.log())
		}
		return nil
	})
	archive, err := execOutput(skiffBinary, "images", "build-busybox", "--out", c.dataDir)
	if err != nil {
		t.Fatalf("build image: %v\n%s", err, archive)
	}
	if out, err := execOutput(skiffBinary, "images", "import", "--data-dir", w.dataDir, strings.TrimSpace(archive)); err != nil {
		t.Fatalf("import image on %s: %v\n%s", w.name, err, out)
	}
	c.stdin(busyPod, "apply", "-f", "-")
	c.kubectl("wait", "--for=condition=Ready", "pod/busy", "--timeout=120s")

	pollEvery(t, 120*time.Second, 2*time.Second, func() error {
		out, err := c.kubectlErr("top", "nodes", "--no-headers")
		if err != nil {
			return errString(out)
		}
		f := strings.Fields(out)
		if len(f) < 5 || f[0] != "worker-1" || !strings.HasSuffix(f[1], "m") || !strings.HasSuffix(f[3], "Mi") {
			return fmt.Errorf("kubectl top nodes = %q", out)
		}
		return nil
	})
	pollEvery(t, 60*time.Second, 2*time.Second, func() error {
		out, err := c.kubectlErr("top", "pods", "busy", "--no-headers")
		if err != nil {
			return errString(out)
		}
		f := strings.Fields(out)
		if len(f) != 3 || f[0] != "busy" {
			return fmt.Errorf("kubectl top pods busy = %q", out)
		}
		if cpu, err := resource.ParseQuantity(f[1]); err != nil || cpu.MilliValue() == 0 {
			return fmt.Errorf("busy pod CPU %q is zero or unreadable", f[1])
		}
		return nil
	})
	var s statsv1alpha1.Summary
	if err := json.Unmarshal([]byte(c.kubectl("get", "--raw", "/api/v1/nodes/worker-1/proxy/stats/summary")), &s); err != nil {
		t.Fatal(err)
	}
	if s.Node.NodeName != "worker-1" || s.Node.Network == nil || len(s.Node.Network.Interfaces) == 0 {
		t.Errorf("worker-1 summary node = %+v", s.Node)
	}
}
