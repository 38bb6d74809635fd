package metricsserver

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/skiff-sh/skiff/internal/storage"
)

// TestScrapeOnce scrapes a fake kubelet over TLS twice and serves the node's and the pod's CPU
// rate between the two answers; a NotReady node is not scraped.
func TestScrapeOnce(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	var scrapes atomic.Int64
	kubelet := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics/resource" {
			http.NotFound(w, r)
			return
		}
		n := scrapes.Add(1)
		ms := clk.Now().UnixMilli()
		// Per scrape: the node uses 1.5 cores, the container a quarter of one, over 15 s.
		fmt.Fprintf(w, "node_cpu_usage_seconds_total %g %d\nnode_memory_working_set_bytes 2048 %d\n", 22.5*float64(n), ms, ms)
		fmt.Fprintf(w, "container_cpu_usage_seconds_total{container=\"app\",namespace=\"ns\",pod=\"web\"} %g %d\n", 3.75*float64(n), ms)
		fmt.Fprintf(w, "container_memory_working_set_bytes{container=\"app\",namespace=\"ns\",pod=\"web\"} 1024 %d\n", ms)
	}))
	defer kubelet.Close()
	u, _ := url.Parse(kubelet.URL)
	port, _ := strconv.Atoi(u.Port())

	reg := prometheus.NewRegistry()
	s, err := New(Config{Transport: kubelet.Client().Transport, Clock: clk, Log: slog.New(slog.DiscardHandler), Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	nodes := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	pods := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	ready := func(name, addr string, status corev1.ConditionStatus) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{
			Conditions:      []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status}},
			Addresses:       []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: addr}},
			DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: int32(port)}},
		}}
	}
	_ = nodes.Add(ready("n1", u.Hostname(), corev1.ConditionTrue))
	_ = nodes.Add(ready("down", "127.0.0.1", corev1.ConditionFalse)) // would answer: same port
	_ = pods.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", Labels: map[string]string{"app": "web"}}})
	s.nodes, s.pods = corelisters.NewNodeLister(nodes), corelisters.NewPodLister(pods)

	ctx := context.Background()
	s.ScrapeOnce(ctx)
	node := &metricsv1beta1.NodeMetrics{}
	if err := s.NodeStorage().Get(ctx, KeyPrefix("nodes")+"n1", storage.GetOptions{}, node); !storage.IsNotFound(err) {
		t.Fatalf("after one scrape: %v, want NotFound (no rate yet)", err)
	}
	clk.Step(15 * time.Second)
	s.ScrapeOnce(ctx)
	if err := s.NodeStorage().Get(ctx, KeyPrefix("nodes")+"n1", storage.GetOptions{}, node); err != nil {
		t.Fatal(err)
	}
	if node.Usage.Cpu().MilliValue() != 1500 || node.Window.Duration != 15*time.Second {
		t.Errorf("node usage = %v over %s, want 1500m over 15s", node.Usage.Cpu(), node.Window.Duration)
	}
	pod := &metricsv1beta1.PodMetrics{}
	if err := s.PodStorage().Get(ctx, KeyPrefix("pods")+"ns/web", storage.GetOptions{}, pod); err != nil {
		t.Fatal(err)
	}
	if len(pod.Containers) != 1 || pod.Containers[0].Usage.Cpu().MilliValue() != 250 || pod.Labels["app"] != "web" {
		t.Errorf("pod = %+v", pod)
	}
	if got := scrapes.Load(); got != 2 {
		t.Errorf("kubelet scraped %d times, want 2 (the NotReady node is skipped)", got)
	}
	if got := value(t, s.metrics.requests.WithLabelValues("true")); got != 2 {
		t.Errorf("metrics_server_kubelet_request_total{success=true} = %v, want 2", got)
	}
	if got := value(t, s.metrics.points.WithLabelValues("container")); got != 1 {
		t.Errorf("metrics_server_storage_points{type=container} = %v, want 1", got)
	}
}

// value reads a counter's or gauge's current value.
func value(t *testing.T, m prometheus.Metric) float64 {
	t.Helper()
	var out dto.Metric
	if err := m.Write(&out); err != nil {
		t.Fatal(err)
	}
	if out.Counter != nil {
		return out.Counter.GetValue()
	}
	return out.Gauge.GetValue()
}
