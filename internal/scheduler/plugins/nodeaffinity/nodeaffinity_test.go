package nodeaffinity

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/skiff-sh/skiff/internal/scheduler/framework"
	st "github.com/skiff-sh/skiff/internal/scheduler/schedtest"
)

func TestFilter(t *testing.T) {
	nodes := []*v1.Node{
		st.MakeNode().Name("a").Label("zone", "z1").Label("gen", "5").Obj(),
		st.MakeNode().Name("b").Label("zone", "z2").Label("gen", "3").Obj(),
		st.MakeNode().Name("c").Obj(),
	}
	const no = "UnschedulableAndUnresolvable: " + ErrReason
	tests := []struct {
		name string
		pod  *v1.Pod
		want map[string]string
	}{
		{"no constraints", st.MakePod().Obj(), map[string]string{"a": "", "b": "", "c": ""}},
		{"nodeSelector", st.MakePod().NodeSelector(map[string]string{"zone": "z1"}).Obj(), map[string]string{"a": "", "b": no, "c": no}},
		{"required In, terms ORed", st.MakePod().NodeAffinityIn("zone", "z1").NodeAffinityIn("zone", "z2").Obj(), map[string]string{"a": "", "b": "", "c": no}},
		{"NotIn", st.MakePod().NodeAffinityExpr(v1.NodeSelectorRequirement{Key: "zone", Operator: v1.NodeSelectorOpNotIn, Values: []string{"z1"}}).Obj(), map[string]string{"a": no, "b": "", "c": ""}},
		{"DoesNotExist", st.MakePod().NodeAffinityExpr(v1.NodeSelectorRequirement{Key: "zone", Operator: v1.NodeSelectorOpDoesNotExist}).Obj(), map[string]string{"a": no, "b": no, "c": ""}},
		{"Gt", st.MakePod().NodeAffinityExpr(v1.NodeSelectorRequirement{Key: "gen", Operator: v1.NodeSelectorOpGt, Values: []string{"4"}}).Obj(), map[string]string{"a": "", "b": no, "c": no}},
		{"selector and affinity both apply", st.MakePod().NodeSelector(map[string]string{"zone": "z1"}).NodeAffinityIn("zone", "z2").Obj(), map[string]string{"a": no, "b": no, "c": no}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := st.Verdicts(st.RunFilter(NodeAffinity{}, tc.pod, nodes, nil))
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestMatchFields(t *testing.T) {
	nodes := []*v1.Node{st.MakeNode().Name("a").Obj(), st.MakeNode().Name("b").Obj()}
	pod := st.MakePod().Obj()
	pod.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{
		NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchFields: []v1.NodeSelectorRequirement{{Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{"b"}}}}}}}}
	got := st.Verdicts(st.RunFilter(NodeAffinity{}, pod, nodes, nil))
	if got["a"] == "" || got["b"] != "" {
		t.Fatalf("got %v", got)
	}
}

func TestScore(t *testing.T) {
	nodes := []*v1.Node{
		st.MakeNode().Name("a").Label("zone", "z1").Label("ssd", "true").Obj(),
		st.MakeNode().Name("b").Label("zone", "z1").Obj(),
		st.MakeNode().Name("c").Obj(),
	}
	pod := st.MakePod().PreferredNodeAffinityIn(20, "zone", "z1").PreferredNodeAffinityIn(60, "ssd", "true").Obj()
	got, status := st.RunScore(NodeAffinity{}, pod, nodes, nil)
	want := map[string]int64{"a": 100, "b": 25, "c": 0}
	if !status.IsSuccess() || !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v (%v), want %v", got, status, want)
	}
	var _ framework.ScorePlugin = NodeAffinity{}
}
