package tainttoleration

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"

	st "github.com/skiff-sh/skiff/internal/scheduler/schedtest"
)

func TestFilter(t *testing.T) {
	nodes := []*v1.Node{
		st.MakeNode().Name("cp").Taint("node-role.kubernetes.io/control-plane", "", v1.TaintEffectNoSchedule).Obj(),
		st.MakeNode().Name("gpu").Taint("gpu", "true", v1.TaintEffectNoExecute).Obj(),
		st.MakeNode().Name("soft").Taint("spot", "yes", v1.TaintEffectPreferNoSchedule).Obj(),
		st.MakeNode().Name("plain").Obj(),
	}
	tests := []struct {
		name string
		pod  *v1.Pod
		want map[string]string
	}{
		{"no tolerations", st.MakePod().Obj(), map[string]string{
			"cp":    "UnschedulableAndUnresolvable: node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }",
			"gpu":   "UnschedulableAndUnresolvable: node(s) had untolerated taint {gpu: true}",
			"soft":  "",
			"plain": "",
		}},
		{"tolerates control plane with Exists", st.MakePod().Toleration("node-role.kubernetes.io/control-plane", v1.TolerationOpExists, "", v1.TaintEffectNoSchedule).Obj(), map[string]string{
			"cp": "", "gpu": "UnschedulableAndUnresolvable: node(s) had untolerated taint {gpu: true}", "soft": "", "plain": ""}},
		{"Equal with wrong value does not tolerate", st.MakePod().Toleration("gpu", v1.TolerationOpEqual, "false", "").Obj(), map[string]string{
			"cp":  "UnschedulableAndUnresolvable: node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }",
			"gpu": "UnschedulableAndUnresolvable: node(s) had untolerated taint {gpu: true}", "soft": "", "plain": ""}},
		{"empty key Exists tolerates everything", st.MakePod().Toleration("", v1.TolerationOpExists, "", "").Obj(), map[string]string{
			"cp": "", "gpu": "", "soft": "", "plain": ""}},
		{"effect must match", st.MakePod().Toleration("gpu", v1.TolerationOpEqual, "true", v1.TaintEffectNoSchedule).Obj(), map[string]string{
			"cp":  "UnschedulableAndUnresolvable: node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }",
			"gpu": "UnschedulableAndUnresolvable: node(s) had untolerated taint {gpu: true}", "soft": "", "plain": ""}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := st.Verdicts(st.RunFilter(TaintToleration{}, tc.pod, nodes, nil))
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %v\nwant %v", got, tc.want)
			}
		})
	}
}

func TestScore(t *testing.T) {
	nodes := []*v1.Node{
		st.MakeNode().Name("two").Taint("a", "1", v1.TaintEffectPreferNoSchedule).Taint("b", "1", v1.TaintEffectPreferNoSchedule).Obj(),
		st.MakeNode().Name("one").Taint("a", "1", v1.TaintEffectPreferNoSchedule).Obj(),
		st.MakeNode().Name("none").Obj(),
	}
	got, _ := st.RunScore(TaintToleration{}, st.MakePod().Obj(), nodes, nil)
	if want := map[string]int64{"two": 0, "one": 50, "none": 100}; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v want %v", got, want)
	}
	got, _ = st.RunScore(TaintToleration{}, st.MakePod().Toleration("a", v1.TolerationOpExists, "", v1.TaintEffectPreferNoSchedule).Obj(), nodes, nil)
	if want := map[string]int64{"two": 0, "one": 100, "none": 100}; !reflect.DeepEqual(got, want) {
		t.Fatalf("tolerating a: got %v want %v", got, want)
	}
}
