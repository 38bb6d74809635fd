package imagelocality

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	st "github.com/skiff-sh/skiff/internal/scheduler/schedtest"
)

func TestScore(t *testing.T) {
	const mb = 1024 * 1024
	nodes := []*v1.Node{
		st.MakeNode().Name("has-big").Image(500*mb, "registry.example/big:v1").Obj(),
		st.MakeNode().Name("has-small").Image(10*mb, "small:latest").Obj(),
		st.MakeNode().Name("none").Obj(),
	}
	got, status := st.RunScore(ImageLocality{}, st.MakePod().Container("registry.example/big:v1").Obj(), nodes, nil)
	if !status.IsSuccess() {
		t.Fatal(status)
	}
	// 500MB spread over 1 of 3 nodes = 166MB effective: (166-23)/(1000-23) * 100 = 14.
	if got["has-big"] != 14 || got["has-small"] != 0 || got["none"] != 0 {
		t.Fatalf("got %v", got)
	}
	// Untagged names match ":latest"; 10MB is below the threshold.
	got, _ = st.RunScore(ImageLocality{}, st.MakePod().Container("small").Obj(), nodes, nil)
	if got["has-small"] != 0 {
		t.Fatalf("small image must not count: %v", got)
	}
}
