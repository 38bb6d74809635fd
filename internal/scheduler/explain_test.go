package scheduler

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"

	st "github.com/skiff-sh/skiff/internal/scheduler/schedtest"
)

func verdictOf(r Report, plugin, point string) *Verdict {
	for i := range r.Verdicts {
		if r.Verdicts[i].Plugin == plugin && r.Verdicts[i].ExtensionPoint == point {
			return &r.Verdicts[i]
		}
	}
	return nil
}

func TestExplain(t *testing.T) {
	cs := fake.NewClientset(
		st.MakeNode().Name("tiny-tainted").Capacity(st.Res{"cpu": "1"}).Taint("dedicated", "gpu", v1.TaintEffectNoSchedule).Obj(),
		st.MakeNode().Name("roomy").Capacity(st.Res{"cpu": "8", "memory": "8Gi"}).Obj(),
		st.MakeNode().Name("busy").Capacity(st.Res{"cpu": "8", "memory": "8Gi"}).Obj(),
		st.MakePod().Name("running").Node("busy").Req(st.Res{"cpu": "4", "memory": "4Gi"}).Obj(),
		st.MakePod().Name("pending").Req(st.Res{"cpu": "2", "memory": "1Gi"}).Obj(),
	)
	ctx := context.Background()

	r, err := Explain(ctx, cs, "default", "pending", "tiny-tainted")
	if err != nil {
		t.Fatal(err)
	}
	if r.Fits || r.FeasibleNodes != 2 || r.TotalNodes != 3 {
		t.Fatalf("report %+v", r)
	}
	// Every rejection is reported, not only the first.
	if v := verdictOf(r, "TaintToleration", "Filter"); v == nil || v.Code != "UnschedulableAndUnresolvable" || v.Reasons[0] != "node(s) had untolerated taint {dedicated: gpu}" {
		t.Fatalf("taint verdict %+v", v)
	}
	if v := verdictOf(r, "NodeResourcesFit", "Filter"); v == nil || v.Code != "Unschedulable" || v.Reasons[0] != "Insufficient cpu" {
		t.Fatalf("fit verdict %+v", v)
	}
	if v := verdictOf(r, "NodeName", "Filter"); v == nil || v.Code != "Success" {
		t.Fatalf("NodeName verdict %+v", v)
	}
	if !strings.Contains(r.String(), "does NOT fit") {
		t.Fatalf("text:\n%s", r)
	}

	r, err = Explain(ctx, cs, "default", "pending", "roomy")
	if err != nil {
		t.Fatal(err)
	}
	if !r.Fits || r.Rank != 1 || r.FeasibleNodes != 2 || len(r.Scores) == 0 || r.TotalScore <= 0 {
		t.Fatalf("roomy report %+v", r)
	}
	busy, err := Explain(ctx, cs, "default", "pending", "busy")
	if err != nil {
		t.Fatal(err)
	}
	if !busy.Fits || busy.Rank != 2 || busy.TotalScore >= r.TotalScore {
		t.Fatalf("busy should rank below roomy: %+v vs %+v", busy, r)
	}
	if _, err := Explain(ctx, cs, "default", "missing", "roomy"); err == nil {
		t.Fatal("missing pod must fail")
	}
	if _, err := Explain(ctx, cs, "default", "pending", "nope"); err == nil {
		t.Fatal("missing node must fail")
	}
}

func TestExplainNoNodeFits(t *testing.T) {
	cs := fake.NewClientset(
		st.MakeNode().Name("a").Capacity(st.Res{"cpu": "1"}).Obj(),
		st.MakeNode().Name("b").Capacity(st.Res{"cpu": "1"}).Taint("node-role.kubernetes.io/control-plane", "", v1.TaintEffectNoSchedule).Obj(),
		st.MakePod().Name("huge").Req(st.Res{"cpu": "4"}).Obj(),
	)
	r, err := Explain(context.Background(), cs, "default", "huge", "a")
	if err != nil {
		t.Fatal(err)
	}
	want := "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }."
	if r.Fits || r.ClusterMessage != want {
		t.Fatalf("got %q", r.ClusterMessage)
	}
}
