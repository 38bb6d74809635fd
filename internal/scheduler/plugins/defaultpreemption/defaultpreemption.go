// Package defaultpreemption implements DefaultPreemption (PostFilter): when a
// pod fits nowhere, find a node where evicting lower-priority pods makes it
// fit, preferring victims whose eviction violates no PodDisruptionBudget and
// evicting as little and as low priority as possible; nominate that node and
// delete the victims with their graceful termination period.
package defaultpreemption

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"sync"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	policylisters "k8s.io/client-go/listers/policy/v1"

	"github.com/skiff-sh/skiff/internal/scheduler/framework"
)

// Name is the plugin name.
const Name = "DefaultPreemption"

// Kubernetes' messages.
const (
	MsgNotHelpful  = "Preemption is not helpful for scheduling"
	MsgNoVictims   = "No preemption victims found for incoming pod"
	MsgPolicyNever = "not eligible due to preemptionPolicy=Never."
	MsgTerminating = "not eligible due to a terminating pod on the nominated node."
)

// Args are the plugin's pluginConfig args (Kubernetes' names and defaults).
type Args struct {
	MinCandidateNodesPercentage *int32 `json:"minCandidateNodesPercentage,omitempty"`
	MinCandidateNodesAbsolute   *int32 `json:"minCandidateNodesAbsolute,omitempty"`
}

// DefaultPreemption is the plugin.
type DefaultPreemption struct {
	h          framework.Handle
	pdbs       policylisters.PodDisruptionBudgetLister
	minPercent int32
	minAbs     int32
}

var (
	_ framework.PostFilterPlugin  = &DefaultPreemption{}
	_ framework.EnqueueExtensions = &DefaultPreemption{}
)

// New builds the plugin.
func New(raw json.RawMessage, h framework.Handle) (framework.Plugin, error) {
	args := Args{}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &args); err != nil {
			return nil, fmt.Errorf("decode %s args: %w", Name, err)
		}
	}
	pl := &DefaultPreemption{h: h, minPercent: 10, minAbs: 100}
	if args.MinCandidateNodesPercentage != nil {
		pl.minPercent = *args.MinCandidateNodesPercentage
	}
	if args.MinCandidateNodesAbsolute != nil {
		pl.minAbs = *args.MinCandidateNodesAbsolute
	}
	if pl.minPercent < 0 || pl.minPercent > 100 || pl.minAbs < 0 || pl.minPercent == 0 && pl.minAbs == 0 {
		return nil, fmt.Errorf("%s: minCandidateNodesPercentage must be in [0, 100], minCandidateNodesAbsolute >= 0, not both 0", Name)
	}
	if h != nil && h.SharedInformerFactory() != nil {
		pl.pdbs = h.SharedInformerFactory().Policy().V1().PodDisruptionBudgets().Lister()
	}
	return pl, nil
}

// Name returns the plugin name.
func (*DefaultPreemption) Name() string { return Name }

// EventsToRegister: a victim's deletion is what lets the preemptor in.
func (*DefaultPreemption) EventsToRegister() []framework.ClusterEvent {
	return []framework.ClusterEvent{{Resource: framework.KindAssignedPod, ActionType: framework.Delete}}
}

// Candidate is a node and the pods to evict there.
type Candidate struct {
	Node          string
	Victims       []*v1.Pod
	PDBViolations int
}

// PostFilter preempts and returns the nominated node.
func (pl *DefaultPreemption) PostFilter(ctx context.Context, state *framework.CycleState, pod *v1.Pod, filtered framework.NodeToStatus, nodes framework.NodeInfoLister) (*framework.PostFilterResult, *framework.Status) {
	if msg, ok := pl.eligible(pod, filtered, nodes); !ok {
		return nil, framework.NewStatus(framework.Unschedulable, "preemption: "+msg)
	}
	candidates, statuses, err := pl.FindCandidates(ctx, pod, filtered, nodes)
	if err != nil {
		return nil, framework.AsStatus(err)
	}
	if len(candidates) == 0 {
		return &framework.PostFilterResult{}, framework.NewStatus(framework.Unschedulable, "preemption: "+framework.NodesAvailableMessage(len(nodes.List()), statuses))
	}
	best := PickOne(candidates, nodes)
	if err := pl.evict(ctx, pod, best); err != nil {
		return nil, framework.AsStatus(err)
	}
	return &framework.PostFilterResult{NominatedNodeName: best.Node}, nil
}

func (pl *DefaultPreemption) eligible(pod *v1.Pod, filtered framework.NodeToStatus, nodes framework.NodeInfoLister) (string, bool) {
	if pod.Spec.PreemptionPolicy != nil && *pod.Spec.PreemptionPolicy == v1.PreemptNever {
		return MsgPolicyNever, false
	}
	// A pod that already preempted waits for its victims instead of preempting again.
	if nn := pod.Status.NominatedNodeName; nn != "" {
		if st, ok := filtered[nn]; ok && st.Code() == framework.UnschedulableAndUnresolvable {
			return "", true
		}
		if ni, err := nodes.Get(nn); err == nil {
			prio := framework.PodPriority(pod)
			for _, p := range ni.Pods {
				if p.Pod.DeletionTimestamp != nil && framework.PodPriority(p.Pod) < prio {
					return MsgTerminating, false
				}
			}
		}
	}
	return "", true
}

// FindCandidates simulates evictions on every node where preemption might help.
func (pl *DefaultPreemption) FindCandidates(ctx context.Context, pod *v1.Pod, filtered framework.NodeToStatus, nodes framework.NodeInfoLister) ([]Candidate, framework.NodeToStatus, error) {
	all := nodes.List()
	statuses := framework.NodeToStatus{}
	var potential []*framework.NodeInfo
	for _, ni := range all {
		st, ok := filtered[ni.Node().Name]
		if ok && st.Code() == framework.UnschedulableAndUnresolvable {
			statuses[ni.Node().Name] = framework.NewStatus(framework.UnschedulableAndUnresolvable, MsgNotHelpful)
			continue
		}
		potential = append(potential, ni)
	}
	if len(potential) == 0 {
		return nil, statuses, nil
	}
	pdbs, err := pl.listPDBs()
	if err != nil {
		return nil, nil, err
	}
	want := max(int(int64(len(potential))*int64(pl.minPercent)/100), int(pl.minAbs))
	var (
		mu         sync.Mutex
		candidates []Candidate
		found      atomic.Int64
	)
	parallel := framework.NewParallelizer(1)
	if pl.h != nil {
		parallel = pl.h.Parallelizer()
	}
	// PreFilter runs once on the whole snapshot; each simulation updates a copy of its state
	// through PreFilterExtensions as it removes and gives back pods.
	var base *framework.CycleState
	if pl.h != nil {
		base = framework.NewCycleState()
		if st := pl.h.RunPreFilterPlugins(ctx, base, pod, nodes); !st.IsSuccess() {
			base = nil
		}
	}
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	parallel.Until(pctx, len(potential), func(i int) {
		if int(found.Load()) >= want {
			return
		}
		ni := potential[i]
		c, ok := pl.selectVictims(pctx, pod, ni, base, pdbs)
		mu.Lock()
		defer mu.Unlock()
		if !ok {
			statuses[ni.Node().Name] = framework.NewStatus(framework.Unschedulable, MsgNoVictims)
			return
		}
		candidates = append(candidates, c)
		if int(found.Add(1)) >= want {
			cancel()
		}
	})
	sort.Slice(candidates, func(i, j int) bool { return candidates[i].Node < candidates[j].Node })
	return candidates, statuses, ctx.Err()
}

func (pl *DefaultPreemption) listPDBs() ([]*policyv1.PodDisruptionBudget, error) {
	if pl.pdbs == nil {
		return nil, nil
	}
	list, err := pl.pdbs.List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("list PodDisruptionBudgets: %w", err)
	}
	return list, nil
}

// selectVictims removes every lower-priority pod, checks the pod fits, then
// gives back as many pods as still allow it, PDB-protected ones first, more
// important ones first. base is PreFilter's state on the unchanged snapshot
// (nil when PreFilter rejected the pod: nothing fits); the simulation updates
// a copy of it through PreFilterExtensions instead of rerunning PreFilter.
func (pl *DefaultPreemption) selectVictims(ctx context.Context, pod *v1.Pod, original *framework.NodeInfo, base *framework.CycleState, pdbs []*policyv1.PodDisruptionBudget) (Candidate, bool) {
	if base == nil || pl.h == nil {
		return Candidate{}, false
	}
	state := base.Clone()
	ni := original.Clone()
	prio := framework.PodPriority(pod)
	var potential []*framework.PodInfo
	for _, p := range original.Pods {
		if framework.PodPriority(p.Pod) < prio {
			potential = append(potential, p)
			if err := ni.RemovePod(p.Pod); err != nil {
				return Candidate{}, false
			}
			if st := pl.h.RunPreFilterExtensionRemovePod(ctx, state, pod, p, ni); !st.IsSuccess() {
				return Candidate{}, false
			}
		}
	}
	fits := func() bool { return pl.h.RunFilterPlugins(ctx, state, pod, ni).IsSuccess() }
	if len(potential) == 0 || !fits() {
		return Candidate{}, false
	}
	sort.SliceStable(potential, func(i, j int) bool { return moreImportant(potential[i].Pod, potential[j].Pod) })
	violating, safe := splitByPDB(potential, pdbs)
	c := Candidate{Node: original.Node().Name}
	reprieve := func(p *framework.PodInfo) bool {
		ni.AddPodInfo(p)
		added := pl.h.RunPreFilterExtensionAddPod(ctx, state, pod, p, ni).IsSuccess()
		if added && fits() {
			return true
		}
		_ = ni.RemovePod(p.Pod)
		if added {
			_ = pl.h.RunPreFilterExtensionRemovePod(ctx, state, pod, p, ni)
		}
		c.Victims = append(c.Victims, p.Pod)
		return false
	}
	for _, p := range violating {
		if !reprieve(p) {
			c.PDBViolations++
		}
	}
	for _, p := range safe {
		reprieve(p)
	}
	return c, true
}

// moreImportant orders by priority, then earlier start time.
func moreImportant(a, b *v1.Pod) bool {
	pa, pb := framework.PodPriority(a), framework.PodPriority(b)
	if pa != pb {
		return pa > pb
	}
	return startTime(a).Before(startTime(b))
}

func startTime(p *v1.Pod) *metav1.Time {
	if p.Status.StartTime != nil {
		return p.Status.StartTime
	}
	return &p.CreationTimestamp
}

// splitByPDB separates pods whose eviction would exceed a PDB's allowed disruptions.
func splitByPDB(pods []*framework.PodInfo, pdbs []*policyv1.PodDisruptionBudget) (violating, safe []*framework.PodInfo) {
	allowed := make([]int32, len(pdbs))
	for i, pdb := range pdbs {
		allowed[i] = pdb.Status.DisruptionsAllowed
	}
	for _, p := range pods {
		violates := false
		for i, pdb := range pdbs {
			if pdb.Namespace != p.Pod.Namespace || pdb.Spec.Selector == nil {
				continue
			}
			sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
			if err != nil || sel.Empty() || !sel.Matches(labels.Set(p.Pod.Labels)) {
				continue
			}
			if _, already := pdb.Status.DisruptedPods[p.Pod.Name]; already {
				continue
			}
			allowed[i]--
			if allowed[i] < 0 {
				violates = true
			}
		}
		if violates {
			violating = append(violating, p)
		} else {
			safe = append(safe, p)
		}
	}
	return violating, safe
}

// PickOne chooses, in order: fewest PDB violations, lowest highest victim
// priority, lowest priority sum, fewest victims, latest start of the most
// important victims, then the first by name.
func PickOne(cs []Candidate, _ framework.NodeInfoLister) Candidate {
	for _, c := range cs {
		if len(c.Victims) == 0 {
			return c
		}
	}
	type key struct {
		pdb      int
		highest  int32
		sum      int64
		count    int
		earliest int64
	}
	k := func(c Candidate) key {
		out := key{pdb: c.PDBViolations, highest: math.MinInt32, count: len(c.Victims), earliest: math.MaxInt64}
		for _, v := range c.Victims {
			p := framework.PodPriority(v)
			out.sum += int64(p) + math.MaxInt32 + 1
			if p > out.highest {
				out.highest = p
			}
		}
		for _, v := range c.Victims {
			if framework.PodPriority(v) == out.highest {
				out.earliest = min(out.earliest, startTime(v).UnixNano())
			}
		}
		return out
	}
	best, bestKey := cs[0], k(cs[0])
	for _, c := range cs[1:] {
		ck := k(c)
		better := false
		switch {
		case ck.pdb != bestKey.pdb:
			better = ck.pdb < bestKey.pdb
		case ck.highest != bestKey.highest:
			better = ck.highest < bestKey.highest
		case ck.sum != bestKey.sum:
			better = ck.sum < bestKey.sum
		case ck.count != bestKey.count:
			better = ck.count < bestKey.count
		case ck.earliest != bestKey.earliest:
			better = ck.earliest > bestKey.earliest
		}
		if better {
			best, bestKey = c, ck
		}
	}
	return best
}

// evict marks each victim with a DisruptionTarget condition and deletes it
// with its own grace period.
func (pl *DefaultPreemption) evict(ctx context.Context, preemptor *v1.Pod, c Candidate) error {
	client := pl.h.ClientSet()
	for _, victim := range c.Victims {
		cond := map[string]any{"status": map[string]any{"conditions": []map[string]any{{
			"type": string(v1.DisruptionTarget), "status": "True", "reason": v1.PodReasonPreemptionByScheduler,
			"message":            fmt.Sprintf("%s: preempting to accommodate a higher priority pod", pl.h.ProfileName()),
			"lastTransitionTime": metav1.Now().UTC().Format("2006-01-02T15:04:05Z"),
		}}}}
		patch, err := json.Marshal(cond)
		if err != nil {
			return fmt.Errorf("encode DisruptionTarget patch: %w", err)
		}
		if _, err := client.CoreV1().Pods(victim.Namespace).Patch(ctx, victim.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("mark victim %s/%s: %w", victim.Namespace, victim.Name, err)
		}
		if err := client.CoreV1().Pods(victim.Namespace).Delete(ctx, victim.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("preempt victim %s/%s: %w", victim.Namespace, victim.Name, err)
		}
		if r := pl.h.EventRecorder(); r != nil {
			r.Eventf(victim, v1.EventTypeNormal, "Preempted", "Preempted by pod %s on node %s", preemptor.UID, c.Node)
		}
	}
	return nil
}
