package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/skiff-sh/skiff/internal/dashboard"
)

// fakeAPI serves the dashboard and a synthetic API (lists paged with limit/continue, watches
// that stay open and quiet, a pod log that follows) so the page can be measured on a cluster
// size this machine cannot hold, and its log following checked without a container runtime.
type fakeAPI struct {
	lists map[string][][]byte // path -> items (JSON)
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	switch {
	case strings.HasPrefix(r.URL.Path, dashboard.Prefix):
		dashboard.Assets().ServeHTTP(w, r)
		return
	case r.URL.Path == "/api":
		fmt.Fprint(w, `{"kind":"APIVersions","versions":["v1"]}`)
		return
	case strings.HasSuffix(r.URL.Path, "/log"):
		// A log that follows: one line every 100ms until the client goes away.
		w.Header().Set("Content-Type", "text/plain")
		for i := 1; ; i++ {
			if _, err := fmt.Fprintf(w, "line %d\n", i); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	if q.Get("watch") != "" {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		return
	}
	items, ok := f.lists[r.URL.Path]
	if !ok {
		items = nil // every other list is empty
	}
	if sel := q.Get("fieldSelector"); strings.HasPrefix(sel, "metadata.name=") {
		name := `"name":"` + strings.TrimPrefix(sel, "metadata.name=") + `"`
		var one [][]byte
		for _, it := range items {
			if strings.Contains(string(it), name) {
				one = append(one, it)
			}
		}
		items = one
	}
	start, _ := strconv.Atoi(q.Get("continue"))
	limit, _ := strconv.Atoi(q.Get("limit"))
	if limit <= 0 {
		limit = len(items)
	}
	end := min(start+limit, len(items))
	cont := ""
	if end < len(items) {
		cont = strconv.Itoa(end)
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"kind":"List","apiVersion":"v1","metadata":{"resourceVersion":"1","continue":%q},"items":[`, cont)
	for i := start; i < end; i++ {
		if i > start {
			w.Write([]byte{','})
		}
		w.Write(items[i])
	}
	fmt.Fprint(w, `]}`)
}

// newFakeAPI serves f until the test ends; its open watches and logs are cut first (the
// browser, started after it, is stopped before it).
func newFakeAPI(t *testing.T, f *fakeAPI) *httptest.Server {
	srv := httptest.NewServer(f)
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	return srv
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func syntheticCluster(t *testing.T, nodes, podsPerNode int) *fakeAPI {
	t.Helper()
	created := time.Now().UTC().Add(-time.Hour).Format(time.RFC3339)
	f := &fakeAPI{lists: map[string][][]byte{}}
	for n := range nodes {
		name := fmt.Sprintf("node-%05d", n)
		role := "worker"
		if n < 3 {
			role = "controlplane"
		}
		f.lists["/api/v1/nodes"] = append(f.lists["/api/v1/nodes"], mustJSON(t, map[string]any{
			"metadata": map[string]any{"name": name, "creationTimestamp": created,
				"labels": map[string]string{"node-role.kubernetes.io/" + role: ""}},
			"spec": map[string]any{},
			"status": map[string]any{
				"conditions":  []map[string]string{{"type": "Ready", "status": "True"}},
				"addresses":   []map[string]string{{"type": "InternalIP", "address": fmt.Sprintf("10.250.%d.%d", n/250, n%250)}},
				"nodeInfo":    map[string]string{"kubeletVersion": "v1.37.2", "containerRuntimeVersion": "sim://1.0"},
				"capacity":    map[string]string{"cpu": "4", "memory": "16Gi", "pods": "110"},
				"allocatable": map[string]string{"cpu": "4", "memory": "16Gi", "pods": "110"},
			},
		}))
		for p := range podsPerNode {
			f.lists["/api/v1/pods"] = append(f.lists["/api/v1/pods"], mustJSON(t, map[string]any{
				"metadata": map[string]any{"name": fmt.Sprintf("app-%05d-%02d", n, p), "namespace": fmt.Sprintf("ns-%03d", n%100),
					"creationTimestamp": created, "labels": map[string]string{"app": "app"}},
				"spec": map[string]any{"nodeName": name, "containers": []map[string]any{{"name": "app", "image": "registry.example/app:1",
					"resources": map[string]any{"requests": map[string]string{"cpu": "100m", "memory": "128Mi"}}}}},
				"status": map[string]any{"phase": "Running", "containerStatuses": []map[string]any{{"name": "app", "ready": true, "restartCount": 0}}},
			}))
		}
	}
	logger := mustJSON(t, map[string]any{
		"metadata": map[string]any{"name": "logger", "namespace": "default", "creationTimestamp": created},
		"spec":     map[string]any{"nodeName": "node-00000", "containers": []map[string]any{{"name": "app", "image": "registry.example/app:1"}}},
		"status":   map[string]any{"phase": "Running"},
	})
	f.lists["/api/v1/namespaces/default/pods"] = [][]byte{logger}
	return f
}

// since polls expr every 10ms and answers how long after start it first held.
func since(t *testing.T, ctx context.Context, start time.Time, timeout time.Duration, what, expr string) time.Duration {
	t.Helper()
	for {
		var ok bool
		if err := chromedp.Run(ctx, chromedp.Evaluate(expr, &ok)); err == nil && ok {
			return time.Since(start)
		}
		if time.Since(start) > timeout {
			var text string
			_ = chromedp.Run(ctx, chromedp.Evaluate(`document.body.innerText.slice(0, 2000)`, &text))
			t.Fatalf("%s: not true after %v; page:\n%s", what, timeout, text)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func heapMiB(t *testing.T, ctx context.Context) float64 {
	t.Helper()
	var used float64
	if err := chromedp.Run(ctx, chromedp.ActionFunc(func(ctx context.Context) error {
		u, _, _, _, err := runtime.GetHeapUsage().Do(ctx)
		used = u
		return err
	})); err != nil {
		t.Fatal(err)
	}
	return used / (1 << 20)
}

// TestDashboardLargeCluster measures the page on 5,000 nodes and 50,000 pods (synthetic API):
// time to the first rows, time until every page is loaded, JavaScript heap, and that only the
// visible rows are in the DOM. The figures are logged (docs/user/dashboard.md).
func TestDashboardLargeCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("large synthetic cluster")
	}
	f := syntheticCluster(t, 5000, 10)
	addSyntheticMetrics(t, f) // usage columns: 5,000 NodeMetrics and 50,000 PodMetrics
	srv := newFakeAPI(t, f)
	ctx := browser(t)

	start := time.Now()
	if err := chromedp.Run(ctx, chromedp.Navigate(srv.URL+"/dashboard/#nodes")); err != nil {
		t.Fatal(err)
	}
	first := since(t, ctx, start, 60*time.Second, "first node rows", `document.querySelector('#t-nodes .vt-row') !== null`)
	all := since(t, ctx, start, 120*time.Second, "5000 nodes and 50000 pods loaded",
		`(h => h.includes('5000 nodes') && !h.includes('loading'))(document.getElementById('head').innerText)`)
	usage := since(t, ctx, start, 60*time.Second, "node usage from metrics.k8s.io", `(r => r !== null && r.innerText.includes('6Gi (38%)'))(document.querySelector('#t-nodes .vt-row'))`)
	var rows int
	var summed string
	if err := chromedp.Run(ctx, chromedp.Evaluate(`document.querySelectorAll('#t-nodes .vt-row').length`, &rows),
		chromedp.Evaluate(`document.querySelector('#t-nodes .vt-row').innerText`, &summed)); err != nil {
		t.Fatal(err)
	}
	if rows == 0 || rows > 200 {
		t.Errorf("%d node rows in the DOM, want only the visible ones", rows)
	}
	if !strings.Contains(summed, "1 / 4 / 4") || !strings.Contains(summed, "1.3Gi / 16Gi / 16Gi") {
		t.Errorf("first node's requests not summed from its 10 pods: %q", summed)
	}
	// Scrolling to the end renders the last node.
	if err := chromedp.Run(ctx, chromedp.Evaluate(`(b => { b.scrollTop = b.scrollHeight; })(document.getElementById('t-nodes'))`, nil)); err != nil {
		t.Fatal(err)
	}
	since(t, ctx, time.Now(), 10*time.Second, "last node rendered after scrolling", `document.getElementById('t-nodes').innerText.includes('node-04999')`)
	nodesHeap := heapMiB(t, ctx)

	// A fresh page for the pods view (a hash change alone would reuse the loaded pod list).
	if err := chromedp.Run(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	if err := chromedp.Run(ctx, chromedp.Navigate(srv.URL+"/dashboard/#pods")); err != nil {
		t.Fatal(err)
	}
	podsFirst := since(t, ctx, start, 60*time.Second, "first pod rows", `document.querySelector('#t-pods .vt-row') !== null`)
	podsAll := since(t, ctx, start, 120*time.Second, "50000 pods listed",
		`(h => h.includes('50000 pods') && !h.includes('loading'))(document.getElementById('head').innerText)`)
	podsUsage := since(t, ctx, start, 60*time.Second, "pod usage from metrics.k8s.io", `(r => r !== null && r.innerText.includes('50Mi'))(document.querySelector('#t-pods .vt-row'))`)
	if err := chromedp.Run(ctx, chromedp.Evaluate(`document.querySelectorAll('#t-pods .vt-row').length`, &rows)); err != nil {
		t.Fatal(err)
	}
	if rows == 0 || rows > 200 {
		t.Errorf("%d pod rows in the DOM, want only the visible ones", rows)
	}
	t.Logf("nodes view (5000 nodes, 50000 pods summed per node): first rows %v, all loaded %v, usage shown %v, JS heap %.0f MiB; pods view (50000 pods): first rows %v, all loaded %v, usage shown %v, JS heap %.0f MiB; %d rows in the DOM",
		first.Round(time.Millisecond), all.Round(time.Millisecond), usage.Round(time.Millisecond), nodesHeap, podsFirst.Round(time.Millisecond), podsAll.Round(time.Millisecond), podsUsage.Round(time.Millisecond), heapMiB(t, ctx), rows)
}

// TestDashboardLogsFollow: a running pod's log is followed, lines appearing without a reload.
func TestDashboardLogsFollow(t *testing.T) {
	srv := newFakeAPI(t, syntheticCluster(t, 1, 0))
	ctx := browser(t)
	if err := chromedp.Run(ctx, chromedp.Navigate(srv.URL+"/dashboard/#pod/default/logger")); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, 30*time.Second, "first log lines", `(l => l !== null && l.textContent.includes('line 2\n'))(document.getElementById('logs'))`)
	if err := chromedp.Run(ctx, chromedp.Evaluate(`window.__noReload = 1`, nil)); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, 30*time.Second, "later log lines, followed", `window.__noReload === 1 && document.getElementById('logs').textContent.includes('line 12\n')`)
}
