package e2e

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"k8s.io/apimachinery/pkg/api/resource"
	"strings"
)

// TestDashboardUsageDecisions table-tests the page's pure usage decisions in the browser: the
// one note the usage columns get, a usage cell with its share of allocatable, a metrics object's
// usage; and a page on an API whose metrics.k8s.io has no samples saying so once.
func TestDashboardUsageDecisions(t *testing.T) {
	srv := newFakeAPI(t, syntheticCluster(t, 1, 0))
	ctx := browser(t)
	if err := chromedp.Run(ctx, chromedp.Navigate(srv.URL+"/dashboard/#nodes")); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, 30*time.Second, "page loaded", `typeof metricsNote === 'function'`)
	tests := []struct{ expr, want string }{
		{`metricsNote({status: 403, error: 'forbidden'}, 0, 'nodes').startsWith('usage: this user may not read metrics.k8s.io')`, "true"},
		{`metricsNote({status: 404, error: 'the server could not find the requested resource'}, 0, 'nodes')`, "usage: metrics not available (metrics.k8s.io is not served)"},
		{`metricsNote({status: 503, error: 'service unavailable'}, 0, 'nodes')`, "usage: metrics not available (metrics.k8s.io is not served)"},
		{`metricsNote({status: 500, error: 'boom'}, 0, 'nodes')`, "usage: metrics not available (boom)"},
		{`metricsNote({loaded: false}, 0, 'nodes')`, "usage: loading metrics…"},
		{`metricsNote({loaded: true, count: 0}, 0, 'nodes')`, "usage: metrics not available (metrics.k8s.io has no samples yet)"},
		{`metricsNote({loaded: true, count: 2}, 1, 'Ready nodes').startsWith('usage: metrics not available for 1 Ready nodes')`, "true"},
		{`metricsNote({loaded: true, count: 2}, 0, 'Ready nodes')`, ""},
		{`usageCell(undefined, 4, fmtCPU)`, "–"},
		{`usageCell(0.25, 4, fmtCPU)`, "250m (6%)"},
		{`usageCell(512 * 1024 * 1024, 2 * 1024 ** 3, fmtMem)`, "512Mi (25%)"},
		{`usageCell(0.1, 0, fmtCPU)`, "100m"},
		{`usageCell(0, 4, fmtCPU)`, "0 (0%)"},
		{`JSON.stringify(metricsUsage({metadata: {name: 'n'}, usage: {cpu: '250m', memory: '1Ki'}}))`, `{"cpu":0.25,"mem":1024}`},
		{`JSON.stringify(metricsUsage({metadata: {name: 'p'}, containers: [{usage: {cpu: '1500000n', memory: '1Mi'}}, {usage: {cpu: '2m', memory: '1Mi'}}]}))`, `{"cpu":0.0035,"mem":2097152}`},
		{`JSON.stringify(metricsUsage({metadata: {name: 'p'}, containers: []}))`, `{"cpu":0,"mem":0}`},
		{`[401, 403, 404, 500, 503, 0].map(metricsGone).join(',')`, "true,true,true,false,false,false"},
	}
	for _, tt := range tests {
		var got any
		if err := chromedp.Run(ctx, chromedp.Evaluate(tt.expr, &got)); err != nil {
			t.Errorf("%s: %v", tt.expr, err)
			continue
		}
		if s := fmt.Sprint(got); s != tt.want {
			t.Errorf("%s = %q, want %q", tt.expr, s, tt.want)
		}
	}
	// The fake API's metrics list is empty: the note says so, once, and the rows are there.
	waitJS(t, ctx, 30*time.Second, "no-samples note on the nodes view",
		`(n => n !== null && n.innerText.includes('metrics not available') && document.querySelectorAll('#metrics-note').length === 1 && document.querySelectorAll('#t-nodes .vt-row').length > 0)(document.getElementById('metrics-note'))`)
}

// usedJS is a JavaScript expression: the text of the cell with class cls in the first row of
// table id whose text contains name ("" when none).
func usedJS(id, name, cls string) string {
	return fmt.Sprintf(`((r => r ? (r.querySelector('.%s') || {innerText: ''}).innerText : '')(Array.from(document.querySelectorAll('#%s .vt-row')).find(r => r.innerText.includes(%q))))`, cls, id, name)
}

// TestDashboardUsage: on a worker cluster running a busy pod, the pods view shows the pod's CPU
// and memory usage and the nodes view the node's, as a share of allocatable, once
// metrics.k8s.io has them (kubectl top pods answering first).
func TestDashboardUsage(t *testing.T) {
	ctx := browser(t)
	c := newWorkerCluster(t, "--metrics-resolution=5s")
	c.stdin(busyPod, "apply", "-f", "-")
	c.kubectl("wait", "--for=condition=Ready", "pod/busy", "--timeout=60s")
	pollEvery(t, 90*time.Second, 2*time.Second, func() error {
		out, err := c.kubectlErr("top", "pods", "--no-headers")
		if err != nil {
			return errString(out)
		}
		for _, line := range strings.Split(out, "\n") {
			if f := strings.Fields(line); len(f) == 3 && f[0] == "busy" {
				if cpu, err := resource.ParseQuantity(f[1]); err != nil || cpu.IsZero() {
					return fmt.Errorf("busy pod CPU %q is zero or unreadable", f[1])
				}
				return nil
			}
		}
		return fmt.Errorf("no busy pod in kubectl top pods:\n%s", out)
	})
	url := startDashboard(t, c)

	if err := chromedp.Run(ctx, chromedp.Navigate(url+"#pods")); err != nil {
		t.Fatal(err)
	}
	// Non-zero: a figure, not the no-sample dash and not "0".
	nonZero := `(s => s !== '' && s !== '–' && !/^0( |$)/.test(s))`
	waitJS(t, ctx, 60*time.Second, "busy pod CPU usage", nonZero+`(`+usedJS("t-pods", "busy", "cpu-used")+`)`)
	waitJS(t, ctx, 10*time.Second, "busy pod memory usage", nonZero+`(`+usedJS("t-pods", "busy", "mem-used")+`)`)
	var podCPU string
	_ = chromedp.Run(ctx, chromedp.Evaluate(usedJS("t-pods", "busy", "cpu-used"), &podCPU))
	screenshot(t, ctx, "pods-usage")

	if err := chromedp.Run(ctx, chromedp.Navigate(url+"#nodes")); err != nil {
		t.Fatal(err)
	}
	node := strings.TrimPrefix(strings.TrimSpace(c.kubectl("get", "nodes", "-o", "name")), "node/")
	waitJS(t, ctx, 60*time.Second, "node CPU usage with its share of allocatable",
		`(s => `+nonZero+`(s) && s.endsWith('%)'))(`+usedJS("t-nodes", node, "cpu-used")+`)`)
	waitJS(t, ctx, 10*time.Second, "node memory usage with its share of allocatable",
		`(s => `+nonZero+`(s) && s.endsWith('%)'))(`+usedJS("t-nodes", node, "mem-used")+`)`)
	waitJS(t, ctx, 10*time.Second, "no metrics note when every node has a sample", `document.getElementById('metrics-note') === null`)
	var nodeCPU string
	_ = chromedp.Run(ctx, chromedp.Evaluate(usedJS("t-nodes", node, "cpu-used"), &nodeCPU))
	t.Logf("page: pod busy CPU %s, node %s CPU %s", podCPU, node, nodeCPU)
	screenshot(t, ctx, "nodes-usage")
}

// TestDashboardUsageUnavailable: on a cluster without workers metrics.k8s.io has no samples;
// the nodes and pods views say so once and work as before.
func TestDashboardUsageUnavailable(t *testing.T) {
	ctx := browser(t)
	c := newCluster(t)
	url := startDashboard(t, c)
	for _, view := range []string{"nodes", "pods"} {
		if err := chromedp.Run(ctx, chromedp.Navigate(url+"#"+view)); err != nil {
			t.Fatal(err)
		}
		waitJS(t, ctx, 60*time.Second, view+": metrics not available, said once",
			`(n => n !== null && n.innerText.includes('metrics not available') && document.querySelectorAll('#metrics-note').length === 1)(document.getElementById('metrics-note'))`)
		waitJS(t, ctx, 30*time.Second, view+": the list itself loaded",
			`(s => s !== null && !s.innerText.includes('loading'))(document.querySelector('#head .status'))`)
	}
}

// addSyntheticMetrics gives the fake API's nodes and cluster-wide pods a metrics.k8s.io sample
// each: every node uses 1200m and 6Gi, every pod 12m and 50Mi.
func addSyntheticMetrics(t *testing.T, f *fakeAPI) {
	t.Helper()
	type meta struct {
		Metadata struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace,omitempty"`
		} `json:"metadata"`
	}
	for _, kind := range []struct{ from, to string }{{"/api/v1/nodes", "/apis/metrics.k8s.io/v1beta1/nodes"}, {"/api/v1/pods", "/apis/metrics.k8s.io/v1beta1/pods"}} {
		for _, raw := range f.lists[kind.from] {
			var m meta
			if err := json.Unmarshal(raw, &m); err != nil {
				t.Fatal(err)
			}
			obj := map[string]any{"metadata": m.Metadata, "timestamp": "2026-01-01T00:00:00Z", "window": "15s"}
			if m.Metadata.Namespace == "" {
				obj["usage"] = map[string]string{"cpu": "1200m", "memory": "6Gi"}
			} else {
				obj["containers"] = []map[string]any{{"name": "app", "usage": map[string]string{"cpu": "12m", "memory": "50Mi"}}}
			}
			f.lists[kind.to] = append(f.lists[kind.to], mustJSON(t, obj))
		}
	}
}
