package framework_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"

	schedcache "github.com/skiff-sh/skiff/internal/scheduler/cache"
	"github.com/skiff-sh/skiff/internal/scheduler/framework"
	"github.com/skiff-sh/skiff/internal/scheduler/plugins"
	st "github.com/skiff-sh/skiff/internal/scheduler/schedtest"
)

// scoreCluster is n nodes of varied size and load, and a pod to score them for.
func scoreCluster(n int, seed int) (*schedcache.Snapshot, *v1.Pod) {
	var nodes []*v1.Node
	var pods []*v1.Pod
	for i := range n {
		name := fmt.Sprintf("node-%d-%d", seed, i)
		nodes = append(nodes, st.MakeNode().Name(name).Label("zone", fmt.Sprint(i%3)).
			Capacity(st.Res{"cpu": fmt.Sprint(2 + (i*seed)%7), "memory": fmt.Sprintf("%dGi", 4+(i+seed)%5), "pods": "110"}).Obj())
		for k := range (i + seed) % 4 {
			pods = append(pods, st.MakePod().Name(fmt.Sprintf("p-%d-%d-%d", seed, i, k)).Node(name).Req(st.Res{"cpu": "300m", "memory": "512Mi"}).Obj())
		}
	}
	pod := st.MakePod().Name(fmt.Sprintf("pending-%d", seed)).Req(st.Res{"cpu": "200m", "memory": "256Mi"}).
		PreferredNodeAffinityIn(5, "zone", "1").Obj()
	return schedcache.NewSnapshot(pods, nodes), pod
}

// scoreOnce runs PreScore and Score on every node of snap.
func scoreOnce(t *testing.T, fwk *framework.Framework, snap *schedcache.Snapshot, pod *v1.Pod) *framework.PluginScores {
	t.Helper()
	ctx := context.Background()
	state := framework.NewCycleState()
	if s := fwk.RunPreScorePlugins(ctx, state, pod, snap.List(), snap); !s.IsSuccess() {
		t.Fatal(s.AsError())
	}
	scores, s := fwk.RunScorePlugins(ctx, state, pod, snap.List())
	if !s.IsSuccess() {
		t.Fatal(s.AsError())
	}
	return scores
}

// TestScoreBuffersReused: scores computed in buffers a released result left behind, for more or
// fewer nodes than before, equal those of a framework that never scored; a result that is kept
// is not touched by later cycles.
func TestScoreBuffersReused(t *testing.T) {
	newFwk := func() *framework.Framework {
		fwk, err := framework.NewFramework(plugins.NewInTreeRegistry(), plugins.DefaultPlugins(), framework.Profile{SchedulerName: "default-scheduler"}, framework.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return fwk
	}
	copyOf := func(s *framework.PluginScores) framework.PluginScores {
		out := framework.PluginScores{Plugins: append([]string(nil), s.Plugins...), Totals: append([]int64(nil), s.Totals...)}
		for _, row := range s.Scores {
			out.Scores = append(out.Scores, append([]int64(nil), row...))
		}
		return out
	}
	reused := newFwk()
	keptSnap, keptPod := scoreCluster(9, 1)
	kept := scoreOnce(t, reused, keptSnap, keptPod)
	keptCopy := copyOf(kept)
	for round, n := range []int{40, 3, 120, 1, 40} {
		snap, pod := scoreCluster(n, round+2)
		got := scoreOnce(t, reused, snap, pod)
		want := scoreOnce(t, newFwk(), snap, pod)
		if g, w := copyOf(got), copyOf(want); !reflect.DeepEqual(g, w) {
			t.Fatalf("round %d (%d nodes): reused buffers scored\n%+v\nfresh ones\n%+v", round, n, g, w)
		}
		if len(got.Totals) != n || len(got.Scores) != n {
			t.Fatalf("round %d: %d totals, %d rows for %d nodes", round, len(got.Totals), len(got.Scores), n)
		}
		got.Release()
		want.Release()
		got.Release() // a second release of the emptied result is harmless
	}
	if !reflect.DeepEqual(copyOf(kept), keptCopy) {
		t.Fatal("a result that was never released changed under later cycles")
	}
}

// rankByName scores a node by the number in its name and normalizes by reversing against the
// highest score, checking that each normalized entry names the node it was scored on.
type rankByName struct{ misnamed *[]string }

func (rankByName) Name() string { return "RankByName" }

func (rankByName) Score(_ context.Context, _ *framework.CycleState, _ *v1.Pod, ni *framework.NodeInfo) (int64, *framework.Status) {
	var seed, i int64
	fmt.Sscanf(ni.Node().Name, "node-%d-%d", &seed, &i)
	return i, nil
}

func (p rankByName) ScoreExtensions() framework.ScoreExtensions { return p }

func (p rankByName) NormalizeScore(_ context.Context, _ *framework.CycleState, _ *v1.Pod, scores []framework.NodeScore) *framework.Status {
	for i, s := range scores {
		if s.Name != fmt.Sprintf("node-7-%d", s.Score) {
			*p.misnamed = append(*p.misnamed, fmt.Sprintf("%d: %s scored %d", i, s.Name, s.Score))
		}
	}
	for i := range scores {
		scores[i].Score = framework.MaxNodeScore - scores[i].Score
	}
	return nil
}

// TestNormalizeSeesNodeNames: a plugin's normalizer gets each node's name beside its raw score
// (the scoring workers keep bare numbers), and what it writes back is what gets weighted.
func TestNormalizeSeesNodeNames(t *testing.T) {
	var misnamed []string
	reg := plugins.NewInTreeRegistry()
	reg["RankByName"] = func(json.RawMessage, framework.Handle) (framework.Plugin, error) {
		return rankByName{misnamed: &misnamed}, nil
	}
	defaults := append(plugins.DefaultPlugins(), framework.PluginRef{Name: "RankByName", Weight: 2})
	fwk, err := framework.NewFramework(reg, defaults, framework.Profile{SchedulerName: "names"}, framework.Options{Parallelism: 2})
	if err != nil {
		t.Fatal(err)
	}
	snap, pod := scoreCluster(50, 7)
	for range 3 {
		scores := scoreOnce(t, fwk, snap, pod)
		col := slices.Index(scores.Plugins, "RankByName")
		if col < 0 {
			t.Fatalf("RankByName did not score: %v", scores.Plugins)
		}
		for i, ni := range snap.List() {
			var seed, idx int64
			fmt.Sscanf(ni.Node().Name, "node-%d-%d", &seed, &idx)
			var total int64
			for _, w := range scores.Scores[i] {
				total += w
			}
			if want := 2 * (framework.MaxNodeScore - idx); scores.Scores[i][col] != want || scores.Totals[i] != total {
				t.Fatalf("%s: row %v (RankByName at %d), total %d, want RankByName %d", ni.Node().Name, scores.Scores[i], col, scores.Totals[i], want)
			}
		}
		scores.Release()
	}
	if len(misnamed) > 0 {
		t.Fatalf("the normalizer saw scores under other nodes' names: %v", misnamed)
	}
}
