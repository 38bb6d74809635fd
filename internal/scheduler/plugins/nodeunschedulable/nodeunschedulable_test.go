package nodeunschedulable

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	st "github.com/skiff-sh/skiff/internal/scheduler/schedtest"
)

func TestFilter(t *testing.T) {
	nodes := []*v1.Node{st.MakeNode().Name("cordoned").Unschedulable().Obj(), st.MakeNode().Name("ok").Obj()}
	tests := []struct {
		name string
		pod  *v1.Pod
		want string
	}{
		{"plain pod", st.MakePod().Obj(), "UnschedulableAndUnresolvable: " + ErrReason},
		{"tolerates unschedulable", st.MakePod().Toleration(v1.TaintNodeUnschedulable, v1.TolerationOpExists, "", v1.TaintEffectNoSchedule).Obj(), ""},
	}
	for _, tc := range tests {
		got := st.Verdicts(st.RunFilter(NodeUnschedulable{}, tc.pod, nodes, nil))
		if got["cordoned"] != tc.want || got["ok"] != "" {
			t.Errorf("%s: got %v", tc.name, got)
		}
	}
}
