package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/skiff-sh/skiff/internal/scheduler"
	st "github.com/skiff-sh/skiff/internal/scheduler/schedtest"
)

// fakeCluster is a fake clientset (binding subresource emulated, unbounded
// watches) with skiff's scheduler running against it. Figures measured this
// way say nothing about the API server: the fake client serializes every
// call under one lock.
func fakeCluster(tb testing.TB) *fake.Clientset {
	cs, start := heldFakeCluster(tb)
	start()
	return cs
}

// heldFakeCluster is fakeCluster with the scheduler's caches synced but its
// loop not started until start is called.
func heldFakeCluster(tb testing.TB) (*fake.Clientset, func()) {
	tb.Helper()
	cs := fake.NewSimpleClientset() //nolint:staticcheck // the managed-fields tracker is too slow for thousands of objects
	hub := st.InstallBufferedWatches(cs)
	st.InstallBindingReactorWithHub(cs, nil, hub)
	ctx, cancel := context.WithCancel(context.Background())
	factory := informers.NewSharedInformerFactory(cs, 0)
	s, err := scheduler.New(scheduler.Config{Client: cs, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, factory)
	if err != nil {
		tb.Fatal(err)
	}
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	done := make(chan struct{})
	var once sync.Once
	start := func() { once.Do(func() { go func() { s.Run(ctx); close(done) }() }) }
	tb.Cleanup(func() {
		cancel()
		start() // Run returns at once on a cancelled context
		<-done
		s.Shutdown()
		factory.Shutdown()
	})
	return cs, start
}

// With Release, every pod is pending before the scheduler starts, and the
// figures count from the release.
func TestRunBenchmarkRelease(t *testing.T) {
	cs, start := heldFakeCluster(t)
	released := false
	r, err := RunBenchmark(context.Background(), cs, Options{Nodes: 50, Pods: 300, KeepObjects: true, Release: func(context.Context) error {
		pods, err := cs.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, p := range pods.Items {
			if p.Spec.NodeName != "" {
				t.Errorf("pod %s bound before release", p.Name)
			}
		}
		if len(pods.Items) != 300 {
			t.Errorf("%d pods exist at release, want 300", len(pods.Items))
		}
		released = true
		start()
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	if !released || !r.Released || r.PodsPerSecond <= 0 || r.P99 < r.P50 || len(st.Bindings(cs)) != 300 {
		t.Fatalf("implausible result %+v (released %v)", r, released)
	}
	if !strings.Contains(r.String(), "all pending before scheduling began") {
		t.Errorf("report %q does not say the pods were pending up front", r)
	}
}

func TestRunBenchmarkFakeClientset(t *testing.T) {
	for _, tc := range []struct {
		workload    string
		nodes, pods int
	}{
		{Plain, 100, 1000},
		{Mixed, 100, 500},
	} {
		t.Run(tc.workload, func(t *testing.T) {
			cs := fakeCluster(t)
			r, err := RunBenchmark(context.Background(), cs, Options{Nodes: tc.nodes, Pods: tc.pods, Workload: tc.workload, KeepObjects: true})
			if err != nil {
				t.Fatal(err)
			}
			if r.Pods != tc.pods || r.PodsPerSecond <= 0 || r.P50 <= 0 || r.P99 < r.P50 || r.Max < r.P99 {
				t.Fatalf("implausible result %+v", r)
			}
			bindings := st.Bindings(cs)
			if len(bindings) != tc.pods {
				t.Fatalf("%d bindings, want %d", len(bindings), tc.pods)
			}
			t.Logf("fake clientset, in-process scheduler: %s", r)
		})
	}
}

func TestOptionsValidation(t *testing.T) {
	if _, err := RunBenchmark(context.Background(), fake.NewClientset(), Options{Nodes: 0, Pods: 1}); err == nil {
		t.Fatal("zero nodes must fail")
	}
	if _, err := RunBenchmark(context.Background(), fake.NewClientset(), Options{Nodes: 1, Pods: 1, Workload: "heavy"}); err == nil {
		t.Fatal("unknown workload must fail")
	}
}

// BenchmarkSchedulerFakeClientset runs the end-to-end harness against the
// fake clientset; run with -benchtime=1x (each iteration is a whole run).
func BenchmarkSchedulerFakeClientset(b *testing.B) {
	for _, tc := range []struct {
		workload    string
		nodes, pods int
	}{
		{Plain, 500, 10000},
		{Plain, 5000, 10000},
		{Mixed, 500, 2000},
	} {
		b.Run(fmt.Sprintf("%s/%dnodes/%dpods", tc.workload, tc.nodes, tc.pods), func(b *testing.B) {
			for range b.N {
				cs := fakeCluster(b)
				r, err := RunBenchmark(context.Background(), cs, Options{Nodes: tc.nodes, Pods: tc.pods, Workload: tc.workload, KeepObjects: true})
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(r.PodsPerSecond, "pods/s")
				b.ReportMetric(float64(r.P50.Milliseconds()), "p50-ms")
				b.ReportMetric(float64(r.P99.Milliseconds()), "p99-ms")
				b.Logf("fake clientset: %s", r)
			}
		})
	}
}
