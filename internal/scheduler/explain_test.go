package scheduler

import (
	"context"
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	toolscache "k8s.io/client-go/tools/cache"

	explainv1 "github.com/skiff-sh/skiff/internal/apis/schedulingexplainv1alpha1"
	st "github.com/skiff-sh/skiff/internal/scheduler/schedtest"
)

// newTestExplainer is an Explainer over a fake clientset holding objs, its caches synced.
func newTestExplainer(t *testing.T, objs ...runtime.Object) *Explainer {
	t.Helper()
	cs := fake.NewClientset(objs...)
	factory := informers.NewSharedInformerFactory(cs, 0)
	e, err := NewExplainer(cs, factory, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); factory.Shutdown() })
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	toolscache.WaitForCacheSync(ctx.Done(), e.HasSynced)
	return e
}

func verdictOf(n explainv1.NodeExplanation, plugin, point string) *explainv1.PluginVerdict {
	for i := range n.Verdicts {
		if n.Verdicts[i].Plugin == plugin && n.Verdicts[i].ExtensionPoint == point {
			return &n.Verdicts[i]
		}
	}
	return nil
}

func TestExplain(t *testing.T) {
	e := newTestExplainer(t,
		st.MakeNode().Name("tiny-tainted").Capacity(st.Res{"cpu": "1"}).Taint("dedicated", "gpu", v1.TaintEffectNoSchedule).Obj(),
		st.MakeNode().Name("roomy").Capacity(st.Res{"cpu": "8", "memory": "8Gi"}).Obj(),
		st.MakeNode().Name("busy").Capacity(st.Res{"cpu": "8", "memory": "8Gi"}).Obj(),
		st.MakePod().Name("running").Node("busy").Req(st.Res{"cpu": "4", "memory": "4Gi"}).Obj(),
		st.MakePod().Name("pending").Req(st.Res{"cpu": "2", "memory": "1Gi"}).Obj(),
	)
	ctx := context.Background()

	r, err := e.Explain(ctx, "default", "pending", []string{"tiny-tainted"})
	if err != nil {
		t.Fatal(err)
	}
	if r.FeasibleNodes != 2 || r.TotalNodes != 3 || len(r.Nodes) != 1 || r.Nodes[0].Feasible {
		t.Fatalf("status %+v", r)
	}
	n := r.Nodes[0]
	// Every rejection is reported, not only the first.
	if v := verdictOf(n, "TaintToleration", "Filter"); v == nil || v.Code != "UnschedulableAndUnresolvable" || v.Reasons[0] != "node(s) had untolerated taint {dedicated: gpu}" {
		t.Fatalf("taint verdict %+v", v)
	}
	if v := verdictOf(n, "NodeResourcesFit", "Filter"); v == nil || v.Code != "Unschedulable" || v.Reasons[0] != "Insufficient cpu" {
		t.Fatalf("fit verdict %+v", v)
	}
	// Named nodes get the plugins that accepted too.
	if v := verdictOf(n, "NodeName", "Filter"); v == nil || v.Code != "Success" {
		t.Fatalf("NodeName verdict %+v", v)
	}
	var text strings.Builder
	FormatExplanation(&text, "default/pending", r, true)
	if !strings.Contains(text.String(), "does NOT fit") {
		t.Fatalf("text:\n%s", text.String())
	}

	r, err = e.Explain(ctx, "default", "pending", []string{"roomy", "busy"})
	if err != nil {
		t.Fatal(err)
	}
	roomy, busy := r.Nodes[0], r.Nodes[1]
	if !roomy.Feasible || roomy.Rank != 1 || len(roomy.Scores) == 0 || roomy.TotalScore <= 0 {
		t.Fatalf("roomy %+v", roomy)
	}
	if !busy.Feasible || busy.Rank != 2 || busy.TotalScore >= roomy.TotalScore {
		t.Fatalf("busy should rank below roomy: %+v vs %+v", busy, roomy)
	}

	// Every node: rejections first, only the rejecting verdicts, no per-plugin scores.
	r, err = e.Explain(ctx, "default", "pending", nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, n := range r.Nodes {
		names = append(names, n.Name)
	}
	if !reflect.DeepEqual(names, []string{"tiny-tainted", "roomy", "busy"}) {
		t.Fatalf("order %v", names)
	}
	if len(r.Nodes[0].Verdicts) != 2 || len(r.Nodes[1].Verdicts) != 0 || r.Nodes[1].Scores != nil {
		t.Fatalf("all-nodes answer %+v", r.Nodes)
	}
	wantSummary := []explainv1.ReasonCount{{Reason: "Insufficient cpu", Count: 1}, {Reason: "Insufficient memory", Count: 1}, {Reason: "node(s) had untolerated taint {dedicated: gpu}", Count: 1}}
	if !reflect.DeepEqual(r.Summary, wantSummary) {
		t.Fatalf("summary %+v", r.Summary)
	}

	if _, err := e.Explain(ctx, "default", "missing", nil); !apierrors.IsNotFound(err) {
		t.Fatalf("missing pod: %v", err)
	}
	if _, err := e.Explain(ctx, "default", "pending", []string{"nope"}); !apierrors.IsNotFound(err) {
		t.Fatalf("missing node: %v", err)
	}
}

func TestExplainNoNodeFits(t *testing.T) {
	e := newTestExplainer(t,
		st.MakeNode().Name("a").Capacity(st.Res{"cpu": "1"}).Obj(),
		st.MakeNode().Name("b").Capacity(st.Res{"cpu": "1"}).Taint("node-role.kubernetes.io/control-plane", "", v1.TaintEffectNoSchedule).Obj(),
		st.MakePod().Name("huge").Req(st.Res{"cpu": "4"}).Obj(),
	)
	r, err := e.Explain(context.Background(), "default", "huge", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }."
	if r.FeasibleNodes != 0 || r.Message != want {
		t.Fatalf("got %q", r.Message)
	}
	if r.Nodes[0].Name != "a" || r.Nodes[0].Reasons[0] != "Insufficient cpu" {
		t.Fatalf("nodes %+v", r.Nodes)
	}
}

func TestSummarize(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   [][]string
		want []explainv1.ReasonCount
	}{
		{name: "none", in: [][]string{nil, nil}, want: nil},
		{name: "by count then reason", in: [][]string{{"b", "a"}, {"a"}, {"c"}, nil},
			want: []explainv1.ReasonCount{{Reason: "a", Count: 2}, {Reason: "b", Count: 1}, {Reason: "c", Count: 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Summarize(tc.in); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Summarize = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestRanks(t *testing.T) {
	for _, tc := range []struct {
		in   []int64
		want []int
	}{
		{in: nil, want: []int{}},
		{in: []int64{5, 9, 5, 1}, want: []int{2, 1, 2, 4}},
	} {
		if got := Ranks(tc.in); !reflect.DeepEqual(got, tc.want) {
			t.Fatalf("Ranks(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestSortNodes(t *testing.T) {
	nodes := []explainv1.NodeExplanation{
		{Name: "f2", Feasible: true, Rank: 2}, {Name: "z"}, {Name: "f1", Feasible: true, Rank: 1}, {Name: "a"},
	}
	SortNodes(nodes)
	var got []string
	for _, n := range nodes {
		got = append(got, n.Name)
	}
	if want := []string{"a", "z", "f1", "f2"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
}

// A bound pod is explained as if pending: its own requests do not count against its node.
func TestExplainBoundPodAsIfPending(t *testing.T) {
	e := newTestExplainer(t,
		st.MakeNode().Name("full").Capacity(st.Res{"cpu": "2", "memory": "2Gi"}).Obj(),
		st.MakePod().Name("sole").UID("sole").Node("full").Req(st.Res{"cpu": "2"}).Obj(),
		st.MakePod().Name("other").UID("other").Req(st.Res{"cpu": "1"}).Obj(),
	)
	ctx := context.Background()
	r, err := e.Explain(ctx, "default", "sole", []string{"full"})
	if err != nil {
		t.Fatal(err)
	}
	if r.BoundTo != "full" || !r.Nodes[0].Feasible {
		t.Fatalf("bound pod on its own node: %+v", r)
	}
	// Its requests still count for every other pod.
	if r, err = e.Explain(ctx, "default", "other", nil); err != nil || r.FeasibleNodes != 0 || r.Nodes[0].Reasons[0] != "Insufficient cpu" {
		t.Fatalf("other pod: %+v, %v", r, err)
	}
}
