package scheduler

import (
	"context"
	"fmt"
	"sort"
	"sync"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	toolscache "k8s.io/client-go/tools/cache"

	explainv1 "github.com/skiff-sh/skiff/internal/apis/schedulingexplainv1alpha1"
	schedcache "github.com/skiff-sh/skiff/internal/scheduler/cache"
	"github.com/skiff-sh/skiff/internal/scheduler/framework"
	"github.com/skiff-sh/skiff/internal/scheduler/plugins"
)

// Explainer answers PodSchedulingExplanations: it evaluates a pod with the scheduler's plugins
// against the nodes and pods of informer caches (in the API server, its own watch cache). Like the
// scheduler it keeps a node cache fed by the informers' events and one snapshot it brings up to date
// incrementally before each answer, so an answer costs the evaluation, not a rebuild of every
// node. It changes nothing and binds nothing.
type Explainer struct {
	pods  corelisters.PodLister
	cache *schedcache.Cache
	// mu serialises evaluations: snap is updated in place, and one framework per profile is
	// shared while no plugin promises to be reentrant.
	mu       sync.Mutex
	snap     *schedcache.Snapshot
	profiles []*framework.Framework
	// synced are the event handlers' registrations: the node cache is complete once both have
	// seen their informer's initial list.
	synced []toolscache.ResourceEventHandlerRegistration
}

// HasSynced reports whether the node cache holds the informers' initial lists (the informers'
// own WaitForCacheSync does not wait for their event handlers).
func (e *Explainer) HasSynced() bool {
	for _, r := range e.synced {
		if !r.HasSynced() {
			return false
		}
	}
	return true
}

// NewExplainer builds one framework per profile of cfg (nil = defaults) over factory, which the
// caller starts and syncs before the first Explain. client is what plugins that need one get (the
// explainer never binds).
func NewExplainer(client kubernetes.Interface, factory informers.SharedInformerFactory, cfg *framework.Configuration) (*Explainer, error) {
	if cfg == nil {
		cfg = framework.DefaultConfiguration()
	}
	e := &Explainer{pods: factory.Core().V1().Pods().Lister(), cache: schedcache.New(), snap: schedcache.NewEmptySnapshot()}
	for _, p := range cfg.Profiles {
		fwk, err := framework.NewFramework(plugins.NewInTreeRegistry(), plugins.DefaultPlugins(), p, framework.Options{
			Client: client, InformerFactory: factory, Parallelism: int(*cfg.Parallelism),
		})
		if err != nil {
			return nil, fmt.Errorf("explainer: profile %q: %w", p.SchedulerName, err)
		}
		e.profiles = append(e.profiles, fwk)
	}
	if len(e.profiles) == 0 {
		return nil, fmt.Errorf("explainer: the scheduler configuration has no profile")
	}
	// Namespace labels (namespaceSelector) come from an informer the plugins read.
	factory.Core().V1().Namespaces().Informer()
	if err := e.follow(factory); err != nil {
		return nil, err
	}
	return e, nil
}

// follow keeps the node cache current from the pod and node informers: nodes, and the pods bound
// to them that still hold resources.
func (e *Explainer) follow(factory informers.SharedInformerFactory) error {
	setPod := func(pod *v1.Pod) {
		switch {
		case pod.Spec.NodeName != "" && !terminal(pod):
			e.cache.AddPod(pod)
		case e.cache.Has(pod):
			e.cache.RemovePod(pod)
		}
	}
	pods, err := factory.Core().V1().Pods().Informer().AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if pod, ok := asPod(obj); ok {
				setPod(pod)
			}
		},
		UpdateFunc: func(_, obj any) {
			if pod, ok := asPod(obj); ok {
				setPod(pod)
			}
		},
		DeleteFunc: func(obj any) {
			if pod, ok := asPod(obj); ok && e.cache.Has(pod) {
				e.cache.RemovePod(pod)
			}
		},
	})
	if err != nil {
		return fmt.Errorf("explainer: pod event handler: %w", err)
	}
	nodes, err := factory.Core().V1().Nodes().Informer().AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if node, ok := asNode(obj); ok {
				e.cache.AddNode(node)
			}
		},
		UpdateFunc: func(oldObj, obj any) {
			oldNode, ok1 := asNode(oldObj)
			node, ok2 := asNode(obj)
			if ok1 && ok2 {
				e.cache.UpdateNode(oldNode, node)
			}
		},
		DeleteFunc: func(obj any) {
			if node, ok := asNode(obj); ok {
				e.cache.RemoveNode(node)
			}
		},
	})
	if err != nil {
		return fmt.Errorf("explainer: node event handler: %w", err)
	}
	e.synced = []toolscache.ResourceEventHandlerRegistration{pods, nodes}
	return nil
}

// profileFor is the profile named by the pod's schedulerName, the first one otherwise.
func (e *Explainer) profileFor(pod *v1.Pod) *framework.Framework {
	for _, f := range e.profiles {
		if f.ProfileName() == pod.Spec.SchedulerName {
			return f
		}
	}
	return e.profiles[0]
}

// Explain evaluates the pod namespace/name against nodeNames (every node when empty). A missing
// pod or node is a NotFound API error.
func (e *Explainer) Explain(ctx context.Context, namespace, name string, nodeNames []string) (explainv1.PodSchedulingExplanationStatus, error) {
	pod, err := e.pods.Pods(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		// The lister names the resource "pod"; the API names it "pods".
		return explainv1.PodSchedulingExplanationStatus{}, apierrors.NewNotFound(v1.Resource("pods"), name)
	}
	if err != nil {
		return explainv1.PodSchedulingExplanationStatus{}, fmt.Errorf("explain %s/%s: %w", namespace, name, err)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.cache.UpdateSnapshot(e.snap)
	return ExplainSnapshot(ctx, e.profileFor(pod), pod, withoutPod(e.snap, pod), nodeNames)
}

// withoutPod is snap with a bound pod taken off its node, so that it is evaluated as if pending
// (its own requests and ports do not count against it). snap itself is not changed.
func withoutPod(snap *schedcache.Snapshot, pod *v1.Pod) *schedcache.Snapshot {
	if pod.Spec.NodeName == "" {
		return snap
	}
	ni, err := snap.Get(pod.Spec.NodeName)
	if err != nil {
		return snap
	}
	clone := ni.Clone()
	if err := clone.RemovePod(pod); err != nil {
		return snap // not on the node (terminal, or not seen yet): nothing to take off
	}
	return snap.WithNodeInfo(clone)
}

// nodeResult is one node's evaluation before it is shaped for the answer.
type nodeResult struct {
	verdicts []framework.PluginVerdict
	feasible bool
}

// ExplainSnapshot evaluates every PreFilter and Filter plugin of fwk for pod (as if pending)
// against every node of snap, not stopping at the first rejection, and scores the feasible nodes.
// nodeNames limits (and orders) the nodes answered for; they get every verdict and per-plugin
// scores. Counts, summary and message always cover the whole snapshot.
func ExplainSnapshot(ctx context.Context, fwk *framework.Framework, pod *v1.Pod, snap *schedcache.Snapshot, nodeNames []string) (explainv1.PodSchedulingExplanationStatus, error) {
	for _, n := range nodeNames {
		if _, err := snap.Get(n); err != nil {
			return explainv1.PodSchedulingExplanationStatus{}, apierrors.NewNotFound(v1.Resource("nodes"), n)
		}
	}
	pending := pod.DeepCopy()
	pending.Spec.NodeName = ""
	out := explainv1.PodSchedulingExplanationStatus{SchedulerName: fwk.ProfileName(), BoundTo: pod.Spec.NodeName, TotalNodes: int32(snap.NumNodes())}
	state := framework.NewCycleState()
	prefilterOK := true
	var prefilterReasons []string
	for _, v := range fwk.RunPreFilterPluginsEach(ctx, state, pending, snap) {
		out.PreFilter = append(out.PreFilter, toVerdict(v))
		if rejected(v) {
			prefilterOK = false
			prefilterReasons = append(prefilterReasons, reasonsOf(v)...)
		}
	}
	list := snap.List()
	results := make([]nodeResult, len(list))
	fwk.Parallelizer().Until(ctx, len(list), func(i int) {
		verdicts := fwk.RunFilterPluginsAll(ctx, state, pending, list[i])
		ok := prefilterOK
		for _, v := range verdicts {
			if rejected(v) {
				ok = false
			}
		}
		results[i] = nodeResult{verdicts: verdicts, feasible: ok}
	})
	if err := ctx.Err(); err != nil {
		return out, fmt.Errorf("explain %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	var feasible []*framework.NodeInfo
	statuses := framework.NodeToStatus{}
	perNodeReasons := make([][]string, len(list))
	for i, r := range results {
		if r.feasible {
			feasible = append(feasible, list[i])
			continue
		}
		reasons := nodeReasons(r.verdicts, prefilterOK, prefilterReasons)
		perNodeReasons[i] = reasons
		statuses[list[i].Node().Name] = firstRejection(r.verdicts, out.PreFilter)
	}
	out.FeasibleNodes = int32(len(feasible))
	out.Summary = Summarize(perNodeReasons)
	if len(feasible) == 0 && len(list) > 0 {
		out.Message = (&framework.FitError{Pod: pending, NumAllNodes: snap.NumNodes(), Diagnosis: framework.Diagnosis{NodeToStatus: statuses}}).Error()
	}

	// Scores of the feasible nodes, and their ranks.
	scoreOf := map[string]int{}
	var scores *framework.PluginScores
	if len(feasible) > 0 {
		if st := fwk.RunPreScorePlugins(ctx, state, pending, feasible, snap); !st.IsSuccess() {
			return out, fmt.Errorf("explain %s/%s: prescore: %w", pod.Namespace, pod.Name, st.AsError())
		}
		var st *framework.Status
		if scores, st = fwk.RunScorePlugins(ctx, state, pending, feasible); !st.IsSuccess() {
			return out, fmt.Errorf("explain %s/%s: score: %w", pod.Namespace, pod.Name, st.AsError())
		}
		for i, ni := range feasible {
			scoreOf[ni.Node().Name] = i
		}
	}
	ranks := Ranks(totalsOf(scores))

	detail := len(nodeNames) > 0
	byName := make(map[string]int, len(list))
	for i, ni := range list {
		byName[ni.Node().Name] = i
	}
	order := nodeNames
	if !detail {
		order = make([]string, 0, len(list))
		for _, ni := range list {
			order = append(order, ni.Node().Name)
		}
	}
	out.Nodes = make([]explainv1.NodeExplanation, 0, len(order))
	for _, name := range order {
		i := byName[name]
		r := results[i]
		ne := explainv1.NodeExplanation{Name: name, Feasible: r.feasible, Reasons: perNodeReasons[i]}
		for _, v := range r.verdicts {
			if detail || rejected(v) {
				ne.Verdicts = append(ne.Verdicts, toVerdict(v))
			}
		}
		if j, ok := scoreOf[name]; ok {
			ne.TotalScore = scores.Totals[j]
			ne.Rank = int32(ranks[j])
			if detail {
				for k, plugin := range scores.Plugins {
					ne.Scores = append(ne.Scores, explainv1.PluginScore{Plugin: plugin, Score: scores.Scores[j][k]})
				}
			}
		}
		out.Nodes = append(out.Nodes, ne)
	}
	if !detail {
		SortNodes(out.Nodes)
	}
	return out, nil
}

func totalsOf(s *framework.PluginScores) []int64 {
	if s == nil {
		return nil
	}
	return s.Totals
}

// rejected is a verdict that keeps the pod off (anything but Success and Skip).
func rejected(v framework.PluginVerdict) bool {
	return !v.Status.IsSuccess() && !v.Status.IsSkip()
}

// reasonsOf a rejection: its reasons, or its code when it gives none.
func reasonsOf(v framework.PluginVerdict) []string {
	if r := v.Status.Reasons(); len(r) > 0 {
		return r
	}
	return []string{v.Plugin + ": " + v.Status.Code().String()}
}

// nodeReasons are a rejected node's distinct reasons: the PreFilter ones (every node shares them)
// and its Filter rejections.
func nodeReasons(verdicts []framework.PluginVerdict, prefilterOK bool, prefilterReasons []string) []string {
	var out []string
	seen := map[string]bool{}
	add := func(rs []string) {
		for _, r := range rs {
			if !seen[r] {
				seen[r] = true
				out = append(out, r)
			}
		}
	}
	if !prefilterOK {
		add(prefilterReasons)
	}
	for _, v := range verdicts {
		if rejected(v) {
			add(reasonsOf(v))
		}
	}
	return out
}

// firstRejection is the status the scheduler would record for a rejected node (its first
// rejecting plugin), for the FailedScheduling message.
func firstRejection(verdicts []framework.PluginVerdict, prefilter []explainv1.PluginVerdict) *framework.Status {
	for _, v := range verdicts {
		if rejected(v) {
			return v.Status
		}
	}
	for _, v := range prefilter {
		if v.Code != framework.Success.String() && v.Code != framework.Skip.String() {
			return framework.NewStatus(framework.UnschedulableAndUnresolvable, v.Reasons...).WithPlugin(v.Plugin)
		}
	}
	return framework.NewStatus(framework.Unschedulable)
}

// Summarize counts the nodes rejected for each reason (each node's reasons are distinct), most
// frequent first, ties by reason.
func Summarize(perNode [][]string) []explainv1.ReasonCount {
	counts := map[string]int32{}
	for _, reasons := range perNode {
		for _, r := range reasons {
			counts[r]++
		}
	}
	out := make([]explainv1.ReasonCount, 0, len(counts))
	for r, c := range counts {
		out = append(out, explainv1.ReasonCount{Reason: r, Count: c})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].Reason < out[j].Reason
	})
	if len(out) == 0 {
		return nil
	}
	return out
}

// Ranks gives each total its 1-based rank, highest first; equal totals share a rank.
func Ranks(totals []int64) []int {
	sorted := append([]int64(nil), totals...)
	sort.Slice(sorted, func(a, b int) bool { return sorted[a] > sorted[b] })
	out := make([]int, len(totals))
	for i, t := range totals {
		out[i] = sort.Search(len(sorted), func(k int) bool { return sorted[k] <= t }) + 1
	}
	return out
}

// SortNodes orders an all-nodes answer: rejected nodes first by name, then feasible ones by rank
// and name.
func SortNodes(nodes []explainv1.NodeExplanation) {
	sort.SliceStable(nodes, func(i, j int) bool {
		a, b := nodes[i], nodes[j]
		if a.Feasible != b.Feasible {
			return !a.Feasible
		}
		if a.Feasible && a.Rank != b.Rank {
			return a.Rank < b.Rank
		}
		return a.Name < b.Name
	})
}

func toVerdict(v framework.PluginVerdict) explainv1.PluginVerdict {
	return explainv1.PluginVerdict{Plugin: v.Plugin, ExtensionPoint: v.Point, Code: v.Status.Code().String(), Reasons: v.Status.Reasons()}
}

// terminal pods hold no resources: Kubernetes' scheduler ignores them.
func terminal(p *v1.Pod) bool {
	return p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed
}
