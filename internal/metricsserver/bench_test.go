package metricsserver

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// kubeletAnswer is a /metrics/resource answer for pods pods of one container each, in the
// kubelet's layout.
func kubeletAnswer(pods int, at time.Time) []byte {
	var b strings.Builder
	ms := strconv.FormatInt(at.UnixMilli(), 10)
	for _, metric := range []string{"container_cpu_usage_seconds_total", "container_memory_working_set_bytes", "container_start_time_seconds"} {
		fmt.Fprintf(&b, "# HELP %s x\n# TYPE %s gauge\n", metric, metric)
		for i := 0; i < pods; i++ {
			fmt.Fprintf(&b, "%s{container=\"app\",namespace=\"bench\",pod=\"pod-%d\"} %g %s\n", metric, i, 12.5+float64(i), ms)
		}
	}
	fmt.Fprintf(&b, "node_cpu_usage_seconds_total 12345.6 %s\nnode_memory_working_set_bytes 1.2e+09 %s\n", ms, ms)
	for i := 0; i < pods; i++ {
		fmt.Fprintf(&b, "pod_cpu_usage_seconds_total{namespace=\"bench\",pod=\"pod-%d\"} 1 %s\n", i, ms)
	}
	b.WriteString("resource_scrape_error 0\nscrape_error 0\n")
	return []byte(b.String())
}

// processCPU is the process's user and system CPU time so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU adds cpu-ns/op: the CPU time the process spent per operation, which unlike ns/op
// does not grow with the machine's load (it includes the GC's work, and for BenchmarkScrapeNode
// the fake kubelet's serving side).
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(processCPU(b)-start)/float64(b.N), "cpu-ns/op")
}

// BenchmarkParseAndStore is the scraper's CPU per node and cycle without the network: parsing
// one kubelet's answer and storing it.
func BenchmarkParseAndStore(b *testing.B) {
	for _, pods := range []int{10, 110} {
		b.Run(fmt.Sprintf("pods=%d", pods), func(b *testing.B) {
			body := kubeletAnswer(pods, time.Now())
			p := NewPoints()
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			start := processCPU(b)
			for i := 0; i < b.N; i++ {
				batch, err := ParseResourceMetrics("n1", body, time.Now())
				if err != nil {
					b.Fatal(err)
				}
				p.Store([]Batch{batch})
			}
			reportCPU(b, start)
		})
	}
}

// BenchmarkScrapeNode is one node's whole scrape over HTTPS on loopback (a kept-alive connection,
// as between cycles), parse included; the fake kubelet's side is a static answer.
func BenchmarkScrapeNode(b *testing.B) {
	for _, pods := range []int{10, 110} {
		b.Run(fmt.Sprintf("pods=%d", pods), func(b *testing.B) {
			body := kubeletAnswer(pods, time.Now())
			kubelet := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(body) }))
			defer kubelet.Close()
			u, _ := url.Parse(kubelet.URL)
			port, _ := strconv.Atoi(u.Port())
			s, err := New(Config{Transport: kubelet.Client().Transport, Log: slog.New(slog.DiscardHandler)})
			if err != nil {
				b.Fatal(err)
			}
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{
				Addresses:       []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: u.Hostname()}},
				DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: int32(port)}},
			}}
			b.ReportAllocs()
			start := processCPU(b)
			for i := 0; i < b.N; i++ {
				batch, err := s.ScrapeNode(context.Background(), node)
				if err != nil {
					b.Fatal(err)
				}
				s.points.Store([]Batch{batch})
			}
			reportCPU(b, start)
		})
	}
}
