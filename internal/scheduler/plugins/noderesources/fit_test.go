package noderesources

import (
	"encoding/json"
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/skiff-sh/skiff/internal/scheduler/framework"
	st "github.com/skiff-sh/skiff/internal/scheduler/schedtest"
)

func newFit(t *testing.T, args string) framework.Plugin {
	t.Helper()
	var raw json.RawMessage
	if args != "" {
		raw = json.RawMessage(args)
	}
	p, err := NewFit(raw, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestFitFilter(t *testing.T) {
	node := st.MakeNode().Name("n").Capacity(st.Res{"cpu": "4", "memory": "8Gi", "ephemeral-storage": "10Gi", "example.com/gpu": "1", "pods": "3"}).Obj()
	used := st.MakePod().Name("used").Node("n").Req(st.Res{"cpu": "3", "memory": "4Gi"}).Obj()
	tests := []struct {
		name     string
		pod      *v1.Pod
		existing []*v1.Pod
		want     string
	}{
		{"fits on empty node", st.MakePod().Req(st.Res{"cpu": "4", "memory": "8Gi"}).Obj(), nil, ""},
		{"insufficient cpu", st.MakePod().Req(st.Res{"cpu": "2"}).Obj(), []*v1.Pod{used}, "Unschedulable: Insufficient cpu"},
		{"insufficient cpu and memory", st.MakePod().Req(st.Res{"cpu": "2", "memory": "5Gi"}).Obj(), []*v1.Pod{used}, "Unschedulable: Insufficient cpu, Insufficient memory"},
		{"exact fit", st.MakePod().Req(st.Res{"cpu": "1", "memory": "4Gi"}).Obj(), []*v1.Pod{used}, ""},
		{"init container counted", st.MakePod().Req(st.Res{"cpu": "100m"}).InitReq(st.Res{"cpu": "2"}).Obj(), []*v1.Pod{used}, "Unschedulable: Insufficient cpu"},
		{"overhead counted", st.MakePod().Req(st.Res{"cpu": "1"}).Overhead(st.Res{"cpu": "1m"}).Obj(), []*v1.Pod{used}, "Unschedulable: Insufficient cpu"},
		{"ephemeral storage", st.MakePod().Req(st.Res{"ephemeral-storage": "11Gi"}).Obj(), nil, "Unschedulable: Insufficient ephemeral-storage"},
		{"extended resource", st.MakePod().Req(st.Res{"example.com/gpu": "2"}).Obj(), nil, "Unschedulable: Insufficient example.com/gpu"},
		{"extended resource missing on node", st.MakePod().Req(st.Res{"example.com/fpga": "1"}).Obj(), nil, "Unschedulable: Insufficient example.com/fpga"},
		{"too many pods", st.MakePod().Req(st.Res{}).Obj(), []*v1.Pod{
			st.MakePod().Name("a").Node("n").Obj(), st.MakePod().Name("b").Node("n").Obj(), st.MakePod().Name("c").Node("n").Obj()}, "Unschedulable: Too many pods"},
		{"zero-request pod fits a full node", st.MakePod().Req(st.Res{}).Obj(), []*v1.Pod{st.MakePod().Name("big").Node("n").Req(st.Res{"cpu": "4"}).Obj()}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := st.Verdict(st.RunFilter(newFit(t, ""), tc.pod, []*v1.Node{node}, tc.existing)["n"])
			if got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestFitIgnoredResources(t *testing.T) {
	node := st.MakeNode().Name("n").Capacity(st.Res{"cpu": "1"}).Obj()
	pod := st.MakePod().Req(st.Res{"example.com/foo": "1"}).Obj()
	if got := st.Verdict(st.RunFilter(newFit(t, `{"ignoredResources":["example.com/foo"]}`), pod, []*v1.Node{node}, nil)["n"]); got != "" {
		t.Fatalf("ignored resource must not block: %q", got)
	}
}

func TestFitScoreStrategies(t *testing.T) {
	nodes := []*v1.Node{
		st.MakeNode().Name("empty").Capacity(st.Res{"cpu": "4", "memory": "4Gi"}).Obj(),
		st.MakeNode().Name("half").Capacity(st.Res{"cpu": "4", "memory": "4Gi"}).Obj(),
	}
	existing := []*v1.Pod{st.MakePod().Name("e").Node("half").Req(st.Res{"cpu": "2", "memory": "2Gi"}).Obj()}
	pod := st.MakePod().Req(st.Res{"cpu": "1", "memory": "1Gi"}).Obj()
	tests := []struct {
		args string
		want map[string]int64
	}{
		// empty: (4-1)/4 = 75; half: (4-3)/4 = 25.
		{"", map[string]int64{"empty": 75, "half": 25}},
		{`{"scoringStrategy":{"type":"MostAllocated"}}`, map[string]int64{"empty": 25, "half": 75}},
		// cpu weight 3, memory weight 1 with memory unused on "half" would be the same; check weights work.
		{`{"scoringStrategy":{"type":"LeastAllocated","resources":[{"name":"cpu","weight":3},{"name":"memory","weight":1}]}}`, map[string]int64{"empty": 75, "half": 25}},
	}
	for _, tc := range tests {
		got, status := st.RunScore(newFit(t, tc.args).(framework.ScorePlugin), pod, nodes, existing)
		if !status.IsSuccess() || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("args %s: got %v (%v), want %v", tc.args, got, status, tc.want)
		}
	}
}

func TestFitScoreUsesNonZeroDefaults(t *testing.T) {
	nodes := []*v1.Node{
		st.MakeNode().Name("a").Capacity(st.Res{"cpu": "1", "memory": "1Gi"}).Obj(),
		st.MakeNode().Name("b").Capacity(st.Res{"cpu": "1", "memory": "1Gi"}).Obj(),
	}
	// Best-effort pods on "a" still make it less attractive for the next one.
	existing := []*v1.Pod{st.MakePod().Name("x").Node("a").Req(st.Res{}).Obj()}
	got, _ := st.RunScore(newFit(t, "").(framework.ScorePlugin), st.MakePod().Req(st.Res{}).Obj(), nodes, existing)
	if got["a"] >= got["b"] {
		t.Fatalf("node with a best-effort pod must score lower: %v", got)
	}
}

func TestBalancedAllocation(t *testing.T) {
	nodes := []*v1.Node{
		st.MakeNode().Name("balanced").Capacity(st.Res{"cpu": "4", "memory": "4Gi"}).Obj(),
		st.MakeNode().Name("skewed").Capacity(st.Res{"cpu": "4", "memory": "4Gi"}).Obj(),
	}
	existing := []*v1.Pod{st.MakePod().Name("e").Node("skewed").Req(st.Res{"cpu": "3"}).Obj()}
	p, err := NewBalancedAllocation(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, status := st.RunScore(p.(framework.ScorePlugin), st.MakePod().Req(st.Res{"cpu": "1", "memory": "1Gi"}).Obj(), nodes, existing)
	// balanced: cpu 1/4, mem 1/4 -> std 0 -> 100. skewed: cpu 4/4, mem 1/4 -> std .375 -> 62.
	if !status.IsSuccess() || got["balanced"] != 100 || got["skewed"] != 62 {
		t.Fatalf("got %v (%v)", got, status)
	}
	got, _ = st.RunScore(p.(framework.ScorePlugin), st.MakePod().Req(st.Res{}).Obj(), nodes, existing)
	if len(got) != 0 {
		t.Fatalf("pod without requests must skip: %v", got)
	}
}
