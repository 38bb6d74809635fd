package podtopologyspread

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"

	st "github.com/skiff-sh/skiff/internal/scheduler/schedtest"
)

func nodes() []*v1.Node {
	return []*v1.Node{
		st.MakeNode().Name("a1").Label("zone", "a").Obj(),
		st.MakeNode().Name("a2").Label("zone", "a").Obj(),
		st.MakeNode().Name("b1").Label("zone", "b").Obj(),
		st.MakeNode().Name("c1").Label("zone", "c").Taint("dedicated", "x", v1.TaintEffectNoSchedule).Obj(),
		st.MakeNode().Name("nozone").Obj(),
	}
}

func web(name, node string) *v1.Pod {
	return st.MakePod().Name(name).Node(node).Label("app", "web").Obj()
}

func int32p(v int32) *int32 { return &v }

func TestFilter(t *testing.T) {
	const (
		skew    = "Unschedulable: " + ErrReasonConstraintsNotMatch
		missing = "UnschedulableAndUnresolvable: " + ErrReasonNodeLabelNotMatch
	)
	newPod := func() *PodSpec { return &PodSpec{st.MakePod().Name("new").Label("app", "web")} }
	tests := []struct {
		name     string
		pod      *v1.Pod
		existing []*v1.Pod
		want     map[string]string
	}{
		{"no constraints", st.MakePod().Obj(), nil, map[string]string{"a1": "", "a2": "", "b1": "", "c1": "", "nozone": ""}},
		{"zone skew 1: a has 2, b 0, c 0", newPod().spread(1, nil).Obj(), []*v1.Pod{web("w1", "a1"), web("w2", "a2")},
			map[string]string{"a1": skew, "a2": skew, "b1": "", "c1": "", "nozone": missing}},
		{"balanced zones accept any", newPod().spread(1, nil).Obj(), []*v1.Pod{web("w1", "a1"), web("w2", "b1"), web("w3", "c1")},
			map[string]string{"a1": "", "a2": "", "b1": "", "c1": "", "nozone": missing}},
		{"other labels do not count", newPod().spread(1, nil).Obj(), []*v1.Pod{st.MakePod().Name("x").Node("a1").Label("app", "db").Obj()},
			map[string]string{"a1": "", "a2": "", "b1": "", "c1": "", "nozone": missing}},
		{"minDomains above domain count forces global minimum 0", newPod().spread(1, int32p(5)).Obj(), []*v1.Pod{web("w1", "a1"), web("w2", "b1"), web("w3", "c1")},
			map[string]string{"a1": skew, "a2": skew, "b1": skew, "c1": skew, "nozone": missing}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := st.Verdicts(st.RunFilter(PodTopologySpread{}, tc.pod, nodes(), tc.existing))
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got  %v\nwant %v", got, tc.want)
			}
		})
	}
}

// PodSpec wraps the builder to add the zone constraint used by these tests.
type PodSpec struct{ *st.PodWrapper }

func (p *PodSpec) spread(maxSkew int32, minDomains *int32) *st.PodWrapper {
	return p.Spread(maxSkew, "zone", v1.DoNotSchedule, "app", "web", minDomains)
}

func TestFilterNodeInclusionPolicies(t *testing.T) {
	existing := []*v1.Pod{web("w1", "a1"), web("w2", "b1")}
	// Default nodeTaintsPolicy Ignore: tainted zone c counts as an empty domain, so min is 0 and a, b are full.
	pod := st.MakePod().Name("new").Label("app", "web").Spread(1, "zone", v1.DoNotSchedule, "app", "web", nil).Obj()
	got := st.Verdicts(st.RunFilter(PodTopologySpread{}, pod, nodes(), existing))
	if got["a2"] == "" || got["b1"] == "" || got["c1"] != "" {
		t.Fatalf("taints ignored: %v", got)
	}
	honor := v1.NodeInclusionPolicyHonor
	pod.Spec.TopologySpreadConstraints[0].NodeTaintsPolicy = &honor
	got = st.Verdicts(st.RunFilter(PodTopologySpread{}, pod, nodes(), existing))
	if got["a2"] != "" || got["b1"] != "" {
		t.Fatalf("taints honoured: zone c excluded, a and b balanced: %v", got)
	}
	// nodeAffinityPolicy Honor (default): only zones the pod may use count.
	pod = st.MakePod().Name("new").Label("app", "web").NodeAffinityIn("zone", "a", "b").Spread(1, "zone", v1.DoNotSchedule, "app", "web", nil).Obj()
	got = st.Verdicts(st.RunFilter(PodTopologySpread{}, pod, nodes(), existing))
	if got["a2"] != "" || got["b1"] != "" {
		t.Fatalf("affinity honoured: %v", got)
	}
}

func TestScore(t *testing.T) {
	existing := []*v1.Pod{web("w1", "a1"), web("w2", "a2"), web("w3", "b1")}
	pod := st.MakePod().Name("new").Label("app", "web").Spread(1, "zone", v1.ScheduleAnyway, "app", "web", nil).Obj()
	got, status := st.RunScore(PodTopologySpread{}, pod, nodes(), existing)
	if !status.IsSuccess() {
		t.Fatal(status)
	}
	if !(got["c1"] > got["b1"] && got["b1"] > got["a1"] && got["a1"] == got["a2"] && got["nozone"] == 0) {
		t.Fatalf("emptier zones must score higher: %v", got)
	}
	if got["c1"] != 100 {
		t.Fatalf("emptiest zone scores 100: %v", got)
	}
}
