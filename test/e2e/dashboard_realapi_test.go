package e2e

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/skiff-sh/skiff/internal/simnode"
)

// TestDashboardRealAPIFirstPaint measures the page against a real skiff API server (through
// `skiff dashboard`): SKIFF_DASH_NODES simulated nodes and SKIFF_DASH_PODS pods bound to them,
// time to the first rows and to everything loaded in the nodes and pods views. Heavy: it runs
// only with SKIFF_DASH_REAL=1; the figures are logged (docs/user/dashboard.md).
func TestDashboardRealAPIFirstPaint(t *testing.T) {
	if os.Getenv("SKIFF_DASH_REAL") != "1" {
		t.Skip("set SKIFF_DASH_REAL=1 (and SKIFF_DASH_NODES, SKIFF_DASH_PODS) to measure against a real API server")
	}
	nodes, pods := envInt("SKIFF_DASH_NODES", 1000), envInt("SKIFF_DASH_PODS", 10000)
	c := newCluster(t)
	c.startSimNodes(t, simnode.Config{Nodes: nodes, NamePrefix: "n-", Workers: 4})
	cfg, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 2000, 2000
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < pods; i += 16 {
				p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("app-%06d", i), Namespace: "default", Labels: map[string]string{"app": "app"}},
					Spec: corev1.PodSpec{NodeName: fmt.Sprintf("n-%d", i%nodes), Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}}}}
				if _, err := cs.CoreV1().Pods("default").Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("create pods: %v", err)
	}
	t.Logf("created %d pods on %d simulated nodes in %v", pods, nodes, time.Since(began).Round(time.Millisecond))
	url := startDashboard(t, c)
	ctx := browser(t)
	for _, v := range []struct{ view, table, noun string }{{"nodes", "t-nodes", strconv.Itoa(nodes) + " nodes"}, {"pods", "t-pods", strconv.Itoa(pods) + " pods"}} {
		if err := chromedp.Run(ctx, chromedp.Navigate("about:blank")); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if err := chromedp.Run(ctx, chromedp.Navigate(url+"#"+v.view)); err != nil {
			t.Fatal(err)
		}
		first := since(t, ctx, start, 120*time.Second, "first rows", `document.querySelector('#`+v.table+` .vt-row') !== null`)
		all := since(t, ctx, start, 300*time.Second, "all loaded",
			fmt.Sprintf(`(h => h.includes(%q) && !h.includes('loading'))(document.getElementById('head').innerText)`, v.noun))
		t.Logf("real API server, %s view (%d nodes, %d pods): first rows %v, all loaded %v, JS heap %.0f MiB",
			v.view, nodes, pods, first.Round(time.Millisecond), all.Round(time.Millisecond), heapMiB(t, ctx))
	}
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}
