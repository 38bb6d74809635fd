package kubelet

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// TestStatsEndpoints: the kubelet's /stats/summary and /metrics/resource report a running pod's
// CPU and memory from the runtime's container stats (a runtime without sandbox stats: the pod's
// are its containers' sums), and both need an authenticated caller.
func TestStatsEndpoints(t *testing.T) {
	h := newHarness(t, nil)
	h.create(makePod("spinner").obj())
	h.waitPod("default", "spinner", "running", podRunning)
	h.step(10 * time.Second)

	code, body := h.get("/stats/summary", true)
	if code != http.StatusOK {
		t.Fatalf("GET /stats/summary = %d %s", code, body)
	}
	var s statsv1alpha1.Summary
	if err := json.Unmarshal([]byte(body), &s); err != nil {
		t.Fatal(err)
	}
	if s.Node.NodeName != testNode || s.Node.CPU == nil || s.Node.Memory == nil || s.Node.Memory.WorkingSetBytes == nil {
		t.Errorf("node = %+v", s.Node)
	}
	var found bool
	for _, p := range s.Pods {
		if p.PodRef.Namespace != "default" || p.PodRef.Name != "spinner" {
			continue
		}
		found = true
		if len(p.Containers) != 1 || p.Containers[0].Name != "app" || p.Containers[0].CPU == nil || *p.Containers[0].CPU.UsageCoreNanoSeconds != 1e9 {
			t.Errorf("containers = %+v, want app with 1 core-second (a tenth of a core for 10s)", p.Containers)
		}
		if p.CPU == nil || *p.CPU.UsageCoreNanoSeconds != 1e9 || p.Memory == nil || *p.Memory.WorkingSetBytes != 4<<20 {
			t.Errorf("pod usage = %+v %+v, want its container's", p.CPU, p.Memory)
		}
	}
	if !found {
		t.Fatalf("no default/spinner in %s", body)
	}

	code, body = h.get("/metrics/resource", true)
	if code != http.StatusOK {
		t.Fatalf("GET /metrics/resource = %d %s", code, body)
	}
	for _, want := range []string{
		`container_cpu_usage_seconds_total{container="app",namespace="default",pod="spinner"} 1 `,
		`pod_memory_working_set_bytes{namespace="default",pod="spinner"} 4.194304e+06 `,
		"node_cpu_usage_seconds_total ", "resource_scrape_error 0\n",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics/resource lacks %q:\n%s", want, body)
		}
	}
	for _, path := range []string{"/stats/summary", "/metrics/resource"} {
		if code, _ := h.get(path, false); code != http.StatusUnauthorized {
			t.Errorf("anonymous GET %s = %d, want 401", path, code)
		}
	}
}
