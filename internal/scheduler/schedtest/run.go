package schedtest

import (
	"context"

	v1 "k8s.io/api/core/v1"

	"github.com/skiff-sh/skiff/internal/scheduler/cache"
	"github.com/skiff-sh/skiff/internal/scheduler/framework"
)

// RunFilter runs plugin's PreFilter (if any) and Filter (if any) for pod on
// every node, with existing pods placed by spec.nodeName, and returns each
// node's status (nil = fits). A PreFilter rejection is returned for every node.
func RunFilter(plugin framework.Plugin, pod *v1.Pod, nodes []*v1.Node, existing []*v1.Pod) map[string]*framework.Status {
	ctx := context.Background()
	snap := cache.NewSnapshot(existing, nodes)
	state := framework.NewCycleState()
	out := map[string]*framework.Status{}
	if pf, ok := plugin.(framework.PreFilterPlugin); ok {
		st := pf.PreFilter(ctx, state, pod, snap)
		if st.IsSkip() {
			for _, n := range nodes {
				out[n.Name] = nil
			}
			return out
		}
		if !st.IsSuccess() {
			for _, n := range nodes {
				out[n.Name] = st
			}
			return out
		}
	}
	f, ok := plugin.(framework.FilterPlugin)
	for _, ni := range snap.List() {
		if ok {
			out[ni.Node().Name] = f.Filter(ctx, state, pod, ni)
		} else {
			out[ni.Node().Name] = nil
		}
	}
	return out
}

// RunScore runs PreScore (over all nodes as feasible), Score and
// NormalizeScore and returns each node's final, unweighted score. A skipped
// plugin yields an empty map.
func RunScore(plugin framework.ScorePlugin, pod *v1.Pod, nodes []*v1.Node, existing []*v1.Pod) (map[string]int64, *framework.Status) {
	ctx := context.Background()
	snap := cache.NewSnapshot(existing, nodes)
	state := framework.NewCycleState()
	if pf, ok := plugin.(framework.PreFilterPlugin); ok {
		if st := pf.PreFilter(ctx, state, pod, snap); !st.IsSuccess() && !st.IsSkip() {
			return nil, st
		}
	}
	if ps, ok := plugin.(framework.PreScorePlugin); ok {
		st := ps.PreScore(ctx, state, pod, snap.List(), snap)
		if st.IsSkip() {
			return map[string]int64{}, nil
		}
		if !st.IsSuccess() {
			return nil, st
		}
	}
	scores := make([]framework.NodeScore, 0, len(nodes))
	for _, ni := range snap.List() {
		s, st := plugin.Score(ctx, state, pod, ni)
		if !st.IsSuccess() {
			return nil, st
		}
		scores = append(scores, framework.NodeScore{Name: ni.Node().Name, Score: s})
	}
	if ext := plugin.ScoreExtensions(); ext != nil {
		if st := ext.NormalizeScore(ctx, state, pod, scores); !st.IsSuccess() {
			return nil, st
		}
	}
	out := map[string]int64{}
	for _, s := range scores {
		out[s.Name] = s.Score
	}
	return out, nil
}

// Verdict renders a status for comparisons: "" for success, else "Code: reasons".
func Verdict(s *framework.Status) string {
	if s.IsSuccess() {
		return ""
	}
	return s.String()
}

// Verdicts renders every node's status with Verdict.
func Verdicts(m map[string]*framework.Status) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = Verdict(v)
	}
	return out
}
