package plugins_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	schedcache "github.com/skiff-sh/skiff/internal/scheduler/cache"
	"github.com/skiff-sh/skiff/internal/scheduler/framework"
	"github.com/skiff-sh/skiff/internal/scheduler/plugins/interpodaffinity"
	"github.com/skiff-sh/skiff/internal/scheduler/plugins/podtopologyspread"
)

// scanOnly hides the snapshot's PodIndex, so plugins count by visiting every pod.
type scanOnly struct{ framework.NodeInfoLister }

// gen makes random nodes, pods and terms from small value sets so that selectors match often.
type gen struct{ r *rand.Rand }

func (g gen) pick(vals ...string) string { return vals[g.r.IntN(len(vals))] }

func (g gen) node(i int) *v1.Node {
	labels := map[string]string{v1.LabelHostname: fmt.Sprintf("n%d", i)}
	if g.r.IntN(10) > 0 {
		labels[v1.LabelTopologyZone] = g.pick("z1", "z2", "z3")
	}
	if g.r.IntN(3) == 0 {
		labels["rack"] = g.pick("r1", "r2")
	}
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("n%d", i), Labels: labels}}
}

func (g gen) selector() *metav1.LabelSelector {
	switch g.r.IntN(4) {
	case 0:
		return &metav1.LabelSelector{MatchLabels: map[string]string{"app": g.pick("a1", "a2", "a3")}}
	case 1:
		return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"t1", "t2"}}}}
	case 2:
		return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpExists}}}
	}
	return nil
}

func (g gen) key() string { return g.pick(v1.LabelHostname, v1.LabelTopologyZone, "rack") }

func (g gen) term() v1.PodAffinityTerm {
	t := v1.PodAffinityTerm{LabelSelector: g.selector(), TopologyKey: g.key()}
	switch g.r.IntN(4) {
	case 0:
		t.Namespaces = []string{"ns1", "ns2"}
	case 1:
		t.NamespaceSelector = &metav1.LabelSelector{}
	}
	return t
}

func (g gen) terms(n int) []v1.PodAffinityTerm {
	var out []v1.PodAffinityTerm
	for range g.r.IntN(n + 1) {
		out = append(out, g.term())
	}
	return out
}

func (g gen) weighted(n int) []v1.WeightedPodAffinityTerm {
	var out []v1.WeightedPodAffinityTerm
	for range g.r.IntN(n + 1) {
		out = append(out, v1.WeightedPodAffinityTerm{Weight: int32(g.r.IntN(100) + 1), PodAffinityTerm: g.term()})
	}
	return out
}

func (g gen) pod(i int, incoming bool) *v1.Pod {
	labels := map[string]string{}
	if g.r.IntN(4) > 0 {
		labels["app"] = g.pick("a1", "a2", "a3")
	}
	if g.r.IntN(2) == 0 {
		labels["tier"] = g.pick("t1", "t2", "t3")
	}
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", i), Namespace: g.pick("ns1", "ns2"), UID: types.UID(fmt.Sprintf("uid-%d", i)), Labels: labels}}
	if !incoming && g.r.IntN(10) == 0 {
		now := metav1.NewTime(time.Unix(1, 0))
		p.DeletionTimestamp = &now
	}
	aff := &v1.Affinity{}
	n := 1
	if incoming {
		n = 2
	}
	if g.r.IntN(3) == 0 {
		aff.PodAffinity = &v1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: g.terms(n), PreferredDuringSchedulingIgnoredDuringExecution: g.weighted(n)}
	}
	if g.r.IntN(3) == 0 {
		aff.PodAntiAffinity = &v1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: g.terms(n), PreferredDuringSchedulingIgnoredDuringExecution: g.weighted(n)}
	}
	if aff.PodAffinity != nil || aff.PodAntiAffinity != nil {
		p.Spec.Affinity = aff
	}
	if incoming {
		for range g.r.IntN(3) {
			when := v1.DoNotSchedule
			if g.r.IntN(2) == 0 {
				when = v1.ScheduleAnyway
			}
			c := v1.TopologySpreadConstraint{MaxSkew: int32(g.r.IntN(3) + 1), TopologyKey: g.key(), WhenUnsatisfiable: when, LabelSelector: g.selector()}
			if c.LabelSelector == nil {
				c.LabelSelector = &metav1.LabelSelector{}
			}
			p.Spec.TopologySpreadConstraints = append(p.Spec.TopologySpreadConstraints, c)
		}
		if g.r.IntN(5) == 0 {
			p.Spec.NodeSelector = map[string]string{v1.LabelTopologyZone: "z1"}
		}
	}
	return p
}

// verdicts runs a plugin's PreFilter, Filter on every node, PreScore, Score and NormalizeScore
// and renders the outcome per node (Skip at PreScore counts as a score of zero everywhere,
// which is what the framework makes of it).
func verdicts(t *testing.T, pl framework.Plugin, pod *v1.Pod, lister framework.NodeInfoLister) []string {
	t.Helper()
	ctx := context.Background()
	nodes := lister.List()
	out := make([]string, len(nodes))
	state := framework.NewCycleState()
	pre := pl.(framework.PreFilterPlugin).PreFilter(ctx, state, pod, lister)
	for i, ni := range nodes {
		out[i] = ni.Node().Name + " prefilter=" + pre.Code().String()
		if pre.IsSuccess() {
			f := pl.(framework.FilterPlugin).Filter(ctx, state, pod, ni)
			out[i] += fmt.Sprintf(" filter=%s %v", f.Code(), f.Reasons())
		}
	}
	ps := pl.(framework.PreScorePlugin).PreScore(ctx, state, pod, nodes, lister)
	scores := make([]framework.NodeScore, len(nodes))
	if ps.IsSuccess() {
		sp := pl.(framework.ScorePlugin)
		for i, ni := range nodes {
			s, st := sp.Score(ctx, state, pod, ni)
			if !st.IsSuccess() {
				t.Fatalf("%s Score: %v", pl.Name(), st.AsError())
			}
			scores[i] = framework.NodeScore{Name: ni.Node().Name, Score: s}
		}
		if ext := sp.ScoreExtensions(); ext != nil {
			ext.NormalizeScore(ctx, state, pod, scores)
		}
	} else if !ps.IsSkip() {
		t.Fatalf("%s PreScore: %v", pl.Name(), ps.AsError())
	}
	for i := range nodes {
		out[i] += fmt.Sprintf(" score=%d", scores[i].Score)
	}
	return out
}

// TestIndexMatchesScan builds random clusters through the cache (pods added, assumed, forgotten,
// confirmed, removed; node labels changed; nodes removed and added back) with the snapshot
// updated incrementally in between, and checks that InterPodAffinity and PodTopologySpread give
// every node the same Filter verdict and normalized score from the snapshot's PodIndex as from
// visiting every pod.
func TestIndexMatchesScan(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	g := gen{rand.New(rand.NewPCG(seed, 15))}
	ipa, err := interpodaffinity.New(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	pts, err := podtopologyspread.New(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for cluster := range 40 {
		c := schedcache.New()
		snap := schedcache.NewEmptySnapshot()
		numNodes := 3 + g.r.IntN(25)
		nodes := make([]*v1.Node, numNodes)
		for i := range nodes {
			nodes[i] = g.node(i)
			c.AddNode(nodes[i])
		}
		var bound, assumed []*v1.Pod
		removedNodes := map[int]bool{}
		next := 0
		for op := range 300 {
			switch k := g.r.IntN(20); {
			case k < 8:
				p := g.pod(next, false)
				next++
				p.Spec.NodeName = nodes[g.r.IntN(numNodes)].Name
				c.AddPod(p)
				bound = append(bound, p)
			case k < 11:
				p := g.pod(next, false)
				next++
				p.Spec.NodeName = nodes[g.r.IntN(numNodes)].Name
				if err := c.AssumePod(p); err != nil {
					t.Fatal(err)
				}
				assumed = append(assumed, p)
			case k < 13 && len(assumed) > 0:
				i := g.r.IntN(len(assumed))
				p := assumed[i]
				assumed = slices.Delete(assumed, i, i+1)
				if g.r.IntN(2) == 0 {
					if err := c.ForgetPod(p); err != nil {
						t.Fatal(err)
					}
				} else {
					c.AddPod(p)
					bound = append(bound, p)
				}
			case k < 16 && len(bound) > 0:
				i := g.r.IntN(len(bound))
				c.RemovePod(bound[i])
				bound = slices.Delete(bound, i, i+1)
			case k < 17:
				i := g.r.IntN(numNodes)
				if !removedNodes[i] {
					nodes[i] = g.node(i)
					c.UpdateNode(nil, nodes[i])
				}
			case k < 18:
				i := g.r.IntN(numNodes)
				if removedNodes[i] {
					c.AddNode(nodes[i])
				} else {
					c.RemoveNode(nodes[i])
				}
				removedNodes[i] = !removedNodes[i]
			}
			if op%7 == 0 {
				c.UpdateSnapshot(snap)
			}
			if op%50 != 49 {
				continue
			}
			c.UpdateSnapshot(snap)
			if snap.PodIndex() == nil {
				t.Fatal("snapshot has no PodIndex")
			}
			for range 5 {
				pod := g.pod(next, true)
				next++
				for _, pl := range []framework.Plugin{ipa, pts} {
					indexed := verdicts(t, pl, pod, snap)
					scanned := verdicts(t, pl, pod, scanOnly{snap})
					if !slices.Equal(indexed, scanned) {
						t.Fatalf("cluster %d op %d, %s, pod %+v %+v:\nindexed %q\nscanned %q", cluster, op, pl.Name(), pod.Labels, pod.Spec, indexed, scanned)
					}
				}
			}
		}
	}
}

// TestPreFilterExtensionsMatchPreFilter removes random pods from one node of random clusters
// through InterPodAffinity's and PodTopologySpread's PreFilterExtensions (as preemption does) and
// checks every node's Filter verdict against a PreFilter run afresh on the cluster without them.
func TestPreFilterExtensionsMatchPreFilter(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	g := gen{rand.New(rand.NewPCG(seed, 16))}
	ipa, _ := interpodaffinity.New(nil, nil)
	pts, _ := podtopologyspread.New(nil, nil)
	ctx := context.Background()
	for cluster := range 60 {
		var nodes []*v1.Node
		for i := range 2 + g.r.IntN(10) {
			nodes = append(nodes, g.node(i))
		}
		var pods []*v1.Pod
		for i := range g.r.IntN(40) {
			p := g.pod(i, false)
			p.Spec.NodeName = nodes[g.r.IntN(len(nodes))].Name
			pods = append(pods, p)
		}
		target := nodes[g.r.IntN(len(nodes))].Name
		var kept, removed []*v1.Pod
		for _, p := range pods {
			if p.Spec.NodeName == target && g.r.IntN(2) == 0 {
				removed = append(removed, p)
			} else {
				kept = append(kept, p)
			}
		}
		before := schedcache.NewSnapshot(pods, nodes)
		after := schedcache.NewSnapshot(kept, nodes)
		for range 4 {
			pod := g.pod(1000, true)
			for _, pl := range []framework.Plugin{ipa, pts} {
				state := framework.NewCycleState()
				if !pl.(framework.PreFilterPlugin).PreFilter(ctx, state, pod, scanOnly{before}).IsSuccess() {
					continue
				}
				sim := state.Clone()
				ni, _ := before.Get(target)
				ni = ni.Clone()
				for _, p := range removed {
					pi := framework.NewPodInfo(p)
					if err := ni.RemovePod(p); err != nil {
						t.Fatal(err)
					}
					if st := pl.(framework.PreFilterExtender).PreFilterExtensions().RemovePod(ctx, sim, pod, pi, ni); !st.IsSuccess() {
						t.Fatal(st.AsError())
					}
				}
				fresh := framework.NewCycleState()
				if !pl.(framework.PreFilterPlugin).PreFilter(ctx, fresh, pod, scanOnly{after}).IsSuccess() {
					continue // the fresh PreFilter skips: nothing left to compare
				}
				for _, want := range after.List() {
					got := want
					if want.Node().Name == target {
						got = ni
					}
					gs := pl.(framework.FilterPlugin).Filter(ctx, sim, pod, got)
					ws := pl.(framework.FilterPlugin).Filter(ctx, fresh, pod, want)
					if gs.Code() != ws.Code() || !slices.Equal(gs.Reasons(), ws.Reasons()) {
						t.Fatalf("cluster %d, %s, node %s (target %s): extensions %v, fresh PreFilter %v; pod %+v", cluster, pl.Name(), want.Node().Name, target, gs, ws, pod.Spec)
					}
				}
				// Adding the pods back restores the original verdicts.
				for _, p := range removed {
					ni.AddPod(p)
					pl.(framework.PreFilterExtender).PreFilterExtensions().AddPod(ctx, sim, pod, framework.NewPodInfo(p), ni)
				}
				for _, orig := range before.List() {
					got := orig
					if orig.Node().Name == target {
						got = ni
					}
					gs := pl.(framework.FilterPlugin).Filter(ctx, sim, pod, got)
					ws := pl.(framework.FilterPlugin).Filter(ctx, state, pod, orig)
					if gs.Code() != ws.Code() {
						t.Fatalf("cluster %d, %s, node %s: after adding back %v, originally %v", cluster, pl.Name(), orig.Node().Name, gs, ws)
					}
				}
			}
		}
	}
}
