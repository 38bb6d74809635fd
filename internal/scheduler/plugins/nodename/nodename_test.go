package nodename

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"

	st "github.com/skiff-sh/skiff/internal/scheduler/schedtest"
)

func TestFilter(t *testing.T) {
	nodes := []*v1.Node{st.MakeNode().Name("a").Obj(), st.MakeNode().Name("b").Obj()}
	got := st.Verdicts(st.RunFilter(NodeName{}, st.MakePod().Node("b").Obj(), nodes, nil))
	want := map[string]string{"a": "UnschedulableAndUnresolvable: " + ErrReason, "b": ""}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v want %v", got, want)
	}
	if got := st.Verdicts(st.RunFilter(NodeName{}, st.MakePod().Obj(), nodes, nil)); got["a"] != "" || got["b"] != "" {
		t.Fatalf("no nodeName fits everywhere: %v", got)
	}
}
