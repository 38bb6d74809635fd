package interpodaffinity

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-sh/skiff/internal/scheduler/framework"
	st "github.com/skiff-sh/skiff/internal/scheduler/schedtest"
)

func plugin(t *testing.T) *InterPodAffinity {
	t.Helper()
	p, err := New(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p.(*InterPodAffinity)
}

func zonedNodes() []*v1.Node {
	return []*v1.Node{
		st.MakeNode().Name("a1").Label("zone", "a").Obj(),
		st.MakeNode().Name("a2").Label("zone", "a").Obj(),
		st.MakeNode().Name("b1").Label("zone", "b").Obj(),
		st.MakeNode().Name("nozone").Obj(),
	}
}

func TestFilter(t *testing.T) {
	db := st.MakePod().Name("db").Node("a1").Label("app", "db").Obj()
	const (
		aff      = "UnschedulableAndUnresolvable: " + ErrReasonAffinityRulesNotMatch
		anti     = "Unschedulable: " + ErrReasonAntiAffinityRulesNotMatch
		existing = "Unschedulable: " + ErrReasonExistingAntiAffinityRulesNotMatch
	)
	tests := []struct {
		name     string
		pod      *v1.Pod
		existing []*v1.Pod
		want     map[string]string
	}{
		{"no affinity", st.MakePod().Obj(), []*v1.Pod{db}, map[string]string{"a1": "", "a2": "", "b1": "", "nozone": ""}},
		{"affinity to db's zone", st.MakePod().PodAffinity(st.PodAffinityTerm("zone", "app", "db")).Obj(), []*v1.Pod{db},
			map[string]string{"a1": "", "a2": "", "b1": aff, "nozone": aff}},
		{"affinity by hostname", st.MakePod().PodAffinity(st.PodAffinityTerm(v1.LabelHostname, "app", "db")).Obj(), []*v1.Pod{db},
			map[string]string{"a1": "", "a2": aff, "b1": aff, "nozone": aff}},
		{"affinity other namespace does not match", st.MakePod().Namespace("other").PodAffinity(st.PodAffinityTerm("zone", "app", "db")).Obj(), []*v1.Pod{db},
			map[string]string{"a1": aff, "a2": aff, "b1": aff, "nozone": aff}},
		{"first pod of a self-affine group goes anywhere with the key", st.MakePod().Label("app", "web").PodAffinity(st.PodAffinityTerm("zone", "app", "web")).Obj(), []*v1.Pod{db},
			map[string]string{"a1": "", "a2": "", "b1": "", "nozone": aff}},
		{"anti-affinity to db's zone", st.MakePod().PodAntiAffinity(st.PodAffinityTerm("zone", "app", "db")).Obj(), []*v1.Pod{db},
			map[string]string{"a1": anti, "a2": anti, "b1": "", "nozone": ""}},
		{"existing pod's anti-affinity", st.MakePod().Label("app", "web").Obj(),
			[]*v1.Pod{st.MakePod().Name("lonely").Node("b1").PodAntiAffinity(st.PodAffinityTerm("zone", "app", "web")).Obj()},
			map[string]string{"a1": "", "a2": "", "b1": existing, "nozone": ""}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := st.Verdicts(st.RunFilter(plugin(t), tc.pod, zonedNodes(), tc.existing))
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got  %v\nwant %v", got, tc.want)
			}
		})
	}
}

func TestFilterNamespaces(t *testing.T) {
	db := st.MakePod().Name("db").Namespace("data").Node("a1").Label("app", "db").Obj()
	term := st.PodAffinityTerm("zone", "app", "db")
	term.Namespaces = []string{"data"}
	got := st.Verdicts(st.RunFilter(plugin(t), st.MakePod().PodAffinity(term).Obj(), zonedNodes(), []*v1.Pod{db}))
	if got["a2"] != "" || got["b1"] == "" {
		t.Fatalf("explicit namespaces: %v", got)
	}
	all := st.PodAffinityTerm("zone", "app", "db")
	all.NamespaceSelector = &metav1.LabelSelector{}
	// Without a namespace lister an empty selector still resolves to no extra namespaces.
	got = st.Verdicts(st.RunFilter(plugin(t), st.MakePod().PodAffinity(all).Obj(), zonedNodes(), []*v1.Pod{db}))
	if got["a2"] == "" {
		t.Fatalf("namespaceSelector without lister must not match: %v", got)
	}
}

func TestScore(t *testing.T) {
	existing := []*v1.Pod{
		st.MakePod().Name("cache").Node("a1").Label("app", "cache").Obj(),
		st.MakePod().Name("noisy").Node("b1").Label("app", "noisy").Obj(),
	}
	pod := st.MakePod().PreferredPodAffinity(80, st.PodAffinityTerm("zone", "app", "cache")).
		PreferredPodAntiAffinity(20, st.PodAffinityTerm("zone", "app", "noisy")).Obj()
	got, status := st.RunScore(plugin(t), pod, zonedNodes(), existing)
	// raw: zone a = 80, zone b = -20, nozone = 0 -> normalized over [-20, 80].
	want := map[string]int64{"a1": 100, "a2": 100, "b1": 0, "nozone": 20}
	if !status.IsSuccess() || !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v (%v), want %v", got, status, want)
	}
}

func TestScoreExistingPodsPreferences(t *testing.T) {
	existing := []*v1.Pod{
		st.MakePod().Name("fan").Node("b1").PreferredPodAffinity(50, st.PodAffinityTerm("zone", "app", "web")).Obj(),
		st.MakePod().Name("hard").Node("a1").PodAffinity(st.PodAffinityTerm(v1.LabelHostname, "app", "web")).Obj(),
	}
	got, _ := st.RunScore(plugin(t), st.MakePod().Label("app", "web").Obj(), zonedNodes(), existing)
	// zone b gets 50 from fan; host a1 gets the hard weight 1.
	want := map[string]int64{"a1": 2, "a2": 0, "b1": 100, "nozone": 0}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v want %v", got, want)
	}
	got, _ = st.RunScore(plugin(t), st.MakePod().Label("app", "other").Obj(), zonedNodes(), existing)
	if len(got) != 0 {
		t.Fatalf("nothing matches: plugin must skip, got %v", got)
	}
	var _ framework.ScorePlugin = plugin(t)
}
