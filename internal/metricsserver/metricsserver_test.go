package metricsserver

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/skiff-sh/skiff/internal/storage"
)

var t0 = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)

const kubeletText = `# HELP container_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the container in core-seconds
# TYPE container_cpu_usage_seconds_total counter
container_cpu_usage_seconds_total{container="app",namespace="ns",pod="web"} 2.5 1795521600000
container_cpu_usage_seconds_total{container="odd \"name\"",namespace="ns",pod="web"} 1 1795521600000
container_memory_working_set_bytes{container="app",namespace="ns",pod="web"} 1.048576e+06 1795521600000
container_memory_working_set_bytes{container="odd \"name\"",namespace="ns",pod="web"} 10 1795521600000
container_start_time_seconds{container="app",namespace="ns",pod="web"} 1.7955216e+09 1795521600000
container_cpu_usage_seconds_total{container="nomem",namespace="ns",pod="web"} 1 1795521600000
node_cpu_usage_seconds_total 100.25 1795521600000
node_memory_working_set_bytes 4096
resource_scrape_error 0
`

func TestParseResourceMetrics(t *testing.T) {
	b, err := ParseResourceMetrics("n1", []byte(kubeletText), t0.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if b.NodeSample == nil || b.NodeSample.CPU != 100.25 || b.NodeSample.Memory != 4096 || !b.NodeSample.Time.Equal(t0) {
		t.Errorf("node sample = %+v", b.NodeSample)
	}
	app := b.Containers[ContainerKey{"ns", "web", "app"}]
	if app.CPU != 2.5 || app.Memory != 1<<20 || !app.Time.Equal(t0) || !app.StartTime.Equal(t0) {
		t.Errorf("app = %+v", app)
	}
	if _, ok := b.Containers[ContainerKey{"ns", "web", `odd "name"`}]; !ok {
		t.Errorf("escaped label value not read: %+v", b.Containers)
	}
	if _, ok := b.Containers[ContainerKey{"ns", "web", "nomem"}]; ok {
		t.Error("a container without a memory reading was kept")
	}
	for _, bad := range []string{"node_cpu_usage_seconds_total", "node_cpu_usage_seconds_total x", `container_cpu_usage_seconds_total{pod="a 1`, "node_cpu_usage_seconds_total 1 2 3"} {
		if _, err := ParseResourceMetrics("n1", []byte(bad), t0); err == nil {
			t.Errorf("ParseResourceMetrics(%q) accepted it", bad)
		}
	}
}

func sample(at time.Time, cpu float64, mem uint64) Sample {
	return Sample{Time: at, CPU: cpu, Memory: mem}
}

func TestPointsRates(t *testing.T) {
	key := ContainerKey{"ns", "web", "app"}
	pod := PodKey{"ns", "web"}
	type step struct {
		node      *Sample
		container *Sample
		// want: node and pod CPU in nanocores, or -1 for no usage yet.
		wantNode, wantPod int64
		wantWindow        time.Duration
		// wantPodWindow is the pod's window when it differs from the node's.
		wantPodWindow time.Duration
	}
	s := func(v Sample) *Sample { return &v }
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"two samples give a rate", []step{
			{node: s(sample(t0, 10, 1)), container: s(sample(t0, 1, 5)), wantNode: -1, wantPod: -1},
			{node: s(sample(t0.Add(15*time.Second), 25, 1)), container: s(sample(t0.Add(15*time.Second), 2.5, 5)), wantNode: 1e9, wantPod: 100e6, wantWindow: 15 * time.Second},
		}},
		{"the same reading twice keeps the rate", []step{
			{node: s(sample(t0, 10, 1)), wantNode: -1, wantPod: -1},
			{node: s(sample(t0.Add(10*time.Second), 15, 1)), wantNode: 500e6, wantPod: -1, wantWindow: 10 * time.Second},
			{node: s(sample(t0.Add(10*time.Second), 15, 1)), wantNode: 500e6, wantPod: -1, wantWindow: 10 * time.Second},
		}},
		{"a counter that went back starts again", []step{
			{node: s(sample(t0, 10, 1)), wantNode: -1, wantPod: -1},
			{node: s(sample(t0.Add(10*time.Second), 2, 1)), wantNode: -1, wantPod: -1},
			{node: s(sample(t0.Add(20*time.Second), 4, 1)), wantNode: 200e6, wantPod: -1, wantWindow: 10 * time.Second},
		}},
		{"a node missing from a cycle is dropped", []step{
			{node: s(sample(t0, 10, 1)), wantNode: -1, wantPod: -1},
			{wantNode: -1, wantPod: -1},
			{node: s(sample(t0.Add(20*time.Second), 30, 1)), wantNode: -1, wantPod: -1},
		}},
		{"a container started after the previous scrape counts from its start", []step{
			{node: s(sample(t0, 10, 1)), wantNode: -1, wantPod: -1},
			{node: s(sample(t0.Add(10*time.Second), 10, 1)), container: &Sample{Time: t0.Add(10 * time.Second), CPU: 2, Memory: 7, StartTime: t0.Add(6 * time.Second)},
				wantNode: 0, wantPod: 500e6, wantWindow: 10 * time.Second, wantPodWindow: 4 * time.Second},
		}},
		{"a container older than the previous scrape waits for a second sample", []step{
			{node: s(sample(t0, 10, 1)), wantNode: -1, wantPod: -1},
			{node: s(sample(t0.Add(10*time.Second), 10, 1)), container: &Sample{Time: t0.Add(10 * time.Second), CPU: 2, StartTime: t0.Add(-time.Hour)}, wantNode: 0, wantPod: -1, wantWindow: 10 * time.Second},
		}},
		{"a restarted container starts again", []step{
			{node: s(sample(t0, 0, 1)), container: &Sample{Time: t0, CPU: 5, StartTime: t0.Add(-time.Hour)}, wantNode: -1, wantPod: -1},
			{node: s(sample(t0.Add(10*time.Second), 0, 1)), container: &Sample{Time: t0.Add(10 * time.Second), CPU: 6, StartTime: t0.Add(-time.Hour)}, wantNode: 0, wantPod: 100e6, wantWindow: 10 * time.Second},
			// Restarted 5 s ago, after the previous scrape: 6.5 core-seconds since its start.
			{node: s(sample(t0.Add(20*time.Second), 0, 1)), container: &Sample{Time: t0.Add(20 * time.Second), CPU: 6.5, StartTime: t0.Add(15 * time.Second)},
				wantNode: 0, wantPod: 1300e6, wantWindow: 10 * time.Second, wantPodWindow: 5 * time.Second},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := NewPoints()
			for i, st := range tc.steps {
				var batches []Batch
				if st.node != nil || st.container != nil {
					b := Batch{Node: "n1", NodeSample: st.node, Containers: map[ContainerKey]Sample{}}
					if st.container != nil {
						b.Containers[key] = *st.container
					}
					batches = append(batches, b)
				}
				p.Store(batches)
				u, ok := p.Node("n1")
				if got := cpuOr(u.CPUNanoCores, ok); got != st.wantNode {
					t.Errorf("step %d: node cpu = %d, want %d", i, got, st.wantNode)
				}
				if ok && u.Window != st.wantWindow {
					t.Errorf("step %d: node window = %s, want %s", i, u.Window, st.wantWindow)
				}
				_, window, containers, ok := p.Pod(pod)
				var cpu uint64
				if ok {
					cpu = containers[0].CPUNanoCores
				}
				if got := cpuOr(cpu, ok); got != st.wantPod {
					t.Errorf("step %d: pod cpu = %d, want %d", i, got, st.wantPod)
				}
				wantPodWindow := st.wantWindow
				if st.wantPodWindow != 0 {
					wantPodWindow = st.wantPodWindow
				}
				if ok && window != wantPodWindow {
					t.Errorf("step %d: pod window = %s, want %s", i, window, wantPodWindow)
				}
			}
		})
	}
}

func cpuOr(v uint64, ok bool) int64 {
	if !ok {
		return -1
	}
	return int64(v)
}

// testServer is a Server whose points hold one node and three pods, two of them labelled app=web.
func testServer(t *testing.T) *Server {
	t.Helper()
	s, err := New(Config{Transport: http.DefaultTransport, Clock: clocktesting.NewFakeClock(t0), Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	nodes := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	pods := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	_ = nodes.Add(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"zone": "a"}}})
	for _, p := range []struct{ ns, name, app string }{{"ns", "web-1", "web"}, {"ns", "web-2", "web"}, {"ns", "db", "db"}, {"other", "web-1", "web"}} {
		_ = pods.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: p.ns, Name: p.name, Labels: map[string]string{"app": p.app}}})
	}
	s.nodes, s.pods = corelisters.NewNodeLister(nodes), corelisters.NewPodLister(pods)
	batch := func(at time.Time, cpu float64) Batch {
		b := Batch{Node: "n1", NodeSample: &Sample{Time: at, CPU: cpu * 4, Memory: 1 << 30}, Containers: map[ContainerKey]Sample{}}
		for _, k := range []ContainerKey{{"ns", "web-1", "app"}, {"ns", "web-2", "app"}, {"ns", "db", "db"}, {"other", "web-1", "app"}, {"ns", "gone", "app"}} {
			b.Containers[k] = Sample{Time: at, CPU: cpu, Memory: 1 << 20}
		}
		return b
	}
	s.points.Store([]Batch{batch(t0, 1)})
	s.points.Store([]Batch{batch(t0.Add(10*time.Second), 2)})
	return s
}

func attrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	switch m := obj.(type) {
	case *metricsv1beta1.PodMetrics:
		return m.Labels, fields.Set{"metadata.name": m.Name, "metadata.namespace": m.Namespace}, nil
	case *metricsv1beta1.NodeMetrics:
		return m.Labels, fields.Set{"metadata.name": m.Name}, nil
	}
	return nil, nil, nil
}

func TestStorageSelectors(t *testing.T) {
	s := testServer(t)
	ctx := context.Background()
	pods := s.PodStorage()
	for _, tc := range []struct {
		name, prefix, label, field string
		want                       []string
	}{
		{"all namespaces", KeyPrefix("pods"), "", "", []string{"ns/db", "ns/web-1", "ns/web-2", "other/web-1"}},
		{"one namespace", KeyPrefix("pods") + "ns/", "", "", []string{"ns/db", "ns/web-1", "ns/web-2"}},
		{"label selector (as the HPA lists)", KeyPrefix("pods") + "ns/", "app=web", "", []string{"ns/web-1", "ns/web-2"}},
		{"set-based selector", KeyPrefix("pods"), "app notin (web)", "", []string{"ns/db"}},
		{"field selector", KeyPrefix("pods"), "", "metadata.name=web-1", []string{"ns/web-1", "other/web-1"}},
		{"no match", KeyPrefix("pods") + "ns/", "app=nope", "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pred := storage.Predicate{Attrs: attrs}
			var err error
			if pred.Label, err = labels.Parse(tc.label); err != nil {
				t.Fatal(err)
			}
			if pred.Field, err = fields.ParseSelector(tc.field); err != nil {
				t.Fatal(err)
			}
			list := &metricsv1beta1.PodMetricsList{}
			if err := pods.List(ctx, tc.prefix, storage.ListOptions{Recursive: true, Predicate: pred}, list); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, m := range list.Items {
				got = append(got, m.Namespace+"/"+m.Name)
				if len(m.Containers) != 1 || m.Containers[0].Usage.Cpu().MilliValue() != 100 || m.Window.Duration != 10*time.Second {
					t.Errorf("%s/%s = %+v, want 100m over 10s", m.Namespace, m.Name, m.Containers)
				}
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}

	got := &metricsv1beta1.PodMetrics{}
	if err := pods.Get(ctx, KeyPrefix("pods")+"ns/db", storage.GetOptions{}, got); err != nil || got.Labels["app"] != "db" {
		t.Errorf("get ns/db = %+v, %v", got, err)
	}
	if err := pods.Get(ctx, KeyPrefix("pods")+"ns/gone", storage.GetOptions{}, got); !storage.IsNotFound(err) {
		t.Errorf("get of a pod that no longer exists = %v, want NotFound", err)
	}
	node := &metricsv1beta1.NodeMetrics{}
	if err := s.NodeStorage().Get(ctx, KeyPrefix("nodes")+"n1", storage.GetOptions{}, node); err != nil {
		t.Fatal(err)
	}
	if node.Usage.Cpu().MilliValue() != 400 || node.Usage.Memory().Value() != 1<<30 || node.Labels["zone"] != "a" {
		t.Errorf("node n1 = %+v", node)
	}
	if err := s.NodeStorage().Create(ctx, KeyPrefix("nodes")+"n2", node, node); err == nil {
		t.Error("create succeeded on read-only storage")
	}
	if _, err := s.NodeStorage().Watch(ctx, KeyPrefix("nodes"), storage.ListOptions{}); err == nil {
		t.Error("watch succeeded on read-only storage")
	}
}
