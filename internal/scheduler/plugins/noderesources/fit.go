package noderesources

import (
	"context"
	"encoding/json"
	"fmt"
	"math"

	v1 "k8s.io/api/core/v1"

	"github.com/skiff-sh/skiff/internal/scheduler/framework"
)

// Plugin names.
const (
	FitName                = "NodeResourcesFit"
	BalancedAllocationName = "NodeResourcesBalancedAllocation"
)

// Scoring strategies.
const (
	LeastAllocated = "LeastAllocated"
	MostAllocated  = "MostAllocated"
)

// ErrReasonTooManyPods is Kubernetes' message when the node's pod count is full.
const ErrReasonTooManyPods = "Too many pods"

// ResourceSpec is a resource and its weight in scoring.
type ResourceSpec struct {
	Name   v1.ResourceName `json:"name"`
	Weight int64           `json:"weight,omitempty"`
}

// ScoringStrategy picks how NodeResourcesFit scores.
type ScoringStrategy struct {
	Type      string         `json:"type,omitempty"`
	Resources []ResourceSpec `json:"resources,omitempty"`
}

// FitArgs are NodeResourcesFit's pluginConfig args.
type FitArgs struct {
	IgnoredResources []string         `json:"ignoredResources,omitempty"`
	ScoringStrategy  *ScoringStrategy `json:"scoringStrategy,omitempty"`
}

var defaultResources = []ResourceSpec{{Name: v1.ResourceCPU, Weight: 1}, {Name: v1.ResourceMemory, Weight: 1}}

const preFilterStateKey framework.StateKey = "PreFilter" + FitName

type preFilterState struct{ requests, nonZero *framework.Resource }

func (s *preFilterState) Clone() framework.StateData { return s }

// Fit is NodeResourcesFit.
type Fit struct {
	ignored   map[v1.ResourceName]bool
	strategy  string
	resources []ResourceSpec
}

var (
	_ framework.PreFilterPlugin   = &Fit{}
	_ framework.FilterPlugin      = &Fit{}
	_ framework.ScorePlugin       = &Fit{}
	_ framework.EnqueueExtensions = &Fit{}
)

// NewFit builds NodeResourcesFit from its args.
func NewFit(raw json.RawMessage, _ framework.Handle) (framework.Plugin, error) {
	args := FitArgs{}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &args); err != nil {
			return nil, fmt.Errorf("decode %s args: %w", FitName, err)
		}
	}
	f := &Fit{ignored: map[v1.ResourceName]bool{}, strategy: LeastAllocated, resources: defaultResources}
	for _, r := range args.IgnoredResources {
		f.ignored[v1.ResourceName(r)] = true
	}
	if s := args.ScoringStrategy; s != nil {
		if s.Type != "" {
			f.strategy = s.Type
		}
		if len(s.Resources) > 0 {
			f.resources = s.Resources
		}
	}
	if f.strategy != LeastAllocated && f.strategy != MostAllocated {
		return nil, fmt.Errorf("%s: scoringStrategy.type: unsupported value %q (supported: %s, %s)", FitName, f.strategy, LeastAllocated, MostAllocated)
	}
	if err := validateResources(f.resources); err != nil {
		return nil, fmt.Errorf("%s: %w", FitName, err)
	}
	return f, nil
}

func validateResources(rs []ResourceSpec) error {
	for i, r := range rs {
		if r.Weight <= 0 || r.Weight > 100 {
			return fmt.Errorf("resources[%d].weight: must be in (0, 100], got %d", i, r.Weight)
		}
	}
	return nil
}

// Name returns the plugin name.
func (*Fit) Name() string { return FitName }

// PreFilter computes the pod's requests once.
func (*Fit) PreFilter(_ context.Context, state *framework.CycleState, pod *v1.Pod, _ framework.NodeInfoLister) *framework.Status {
	state.Write(preFilterStateKey, &preFilterState{requests: framework.PodRequests(pod, false), nonZero: framework.PodRequests(pod, true)})
	return nil
}

func podRequests(state *framework.CycleState, pod *v1.Pod) *framework.Resource {
	if d, err := state.Read(preFilterStateKey); err == nil {
		return d.(*preFilterState).requests
	}
	return framework.PodRequests(pod, false)
}

// Filter reports every resource the node lacks, as Kubernetes does.
func (f *Fit) Filter(_ context.Context, state *framework.CycleState, pod *v1.Pod, ni *framework.NodeInfo) *framework.Status {
	if reasons := InsufficientResources(podRequests(state, pod), ni, f.ignored); len(reasons) > 0 {
		return framework.NewStatus(framework.Unschedulable, reasons...)
	}
	return nil
}

// InsufficientResources lists the reasons pod requests req do not fit ni.
func InsufficientResources(req *framework.Resource, ni *framework.NodeInfo, ignored map[v1.ResourceName]bool) []string {
	var reasons []string
	if int64(len(ni.Pods))+1 > ni.Allocatable.AllowedPodNumber {
		reasons = append(reasons, ErrReasonTooManyPods)
	}
	if req.MilliCPU == 0 && req.Memory == 0 && req.EphemeralStorage == 0 && len(req.ScalarResources) == 0 {
		return reasons
	}
	check := func(name v1.ResourceName, want, alloc, used int64) {
		if want > 0 && want > alloc-used {
			reasons = append(reasons, fmt.Sprintf("Insufficient %s", name))
		}
	}
	check(v1.ResourceCPU, req.MilliCPU, ni.Allocatable.MilliCPU, ni.Requested.MilliCPU)
	check(v1.ResourceMemory, req.Memory, ni.Allocatable.Memory, ni.Requested.Memory)
	check(v1.ResourceEphemeralStorage, req.EphemeralStorage, ni.Allocatable.EphemeralStorage, ni.Requested.EphemeralStorage)
	for name, want := range req.ScalarResources {
		if ignored[name] {
			continue
		}
		check(name, want, ni.Allocatable.ScalarResources[name], ni.Requested.ScalarResources[name])
	}
	return reasons
}

// Score applies the configured strategy to requested/allocatable.
func (f *Fit) Score(_ context.Context, state *framework.CycleState, pod *v1.Pod, ni *framework.NodeInfo) (int64, *framework.Status) {
	var podNonZero *framework.Resource
	if d, err := state.Read(preFilterStateKey); err == nil {
		podNonZero = d.(*preFilterState).nonZero
	} else {
		podNonZero = framework.PodRequests(pod, true)
	}
	var total, weights int64
	for _, r := range f.resources {
		alloc, requested := allocatableAndRequested(ni, podNonZero, r.Name, true)
		var s int64
		switch {
		case alloc == 0:
			if !framework.IsScalarResourceName(r.Name) {
				weights += r.Weight
			}
			continue
		case f.strategy == MostAllocated:
			s = min(requested, alloc) * framework.MaxNodeScore / alloc
		default:
			if requested <= alloc {
				s = (alloc - requested) * framework.MaxNodeScore / alloc
			}
		}
		total += s * r.Weight
		weights += r.Weight
	}
	if weights == 0 {
		return 0, nil
	}
	return total / weights, nil
}

// allocatableAndRequested returns the node's allocatable and what it would
// have requested with the pod; nonZero uses scoring defaults for cpu/memory.
func allocatableAndRequested(ni *framework.NodeInfo, pod *framework.Resource, name v1.ResourceName, nonZero bool) (int64, int64) {
	used := &ni.Requested
	if nonZero && (name == v1.ResourceCPU || name == v1.ResourceMemory) {
		used = &ni.NonZeroRequested
	}
	return ni.Allocatable.Get(name), used.Get(name) + pod.Get(name)
}

// ScoreExtensions: scores are already in range.
func (*Fit) ScoreExtensions() framework.ScoreExtensions { return nil }

// EventsToRegister: room appears when pods go or nodes grow.
func (*Fit) EventsToRegister() []framework.ClusterEvent {
	return []framework.ClusterEvent{
		{Resource: framework.KindAssignedPod, ActionType: framework.Delete | framework.Update},
		{Resource: framework.KindNode, ActionType: framework.Add | framework.Update},
	}
}

// BalancedAllocation is NodeResourcesBalancedAllocation.
type BalancedAllocation struct{ resources []ResourceSpec }

var (
	_ framework.PreScorePlugin = &BalancedAllocation{}
	_ framework.ScorePlugin    = &BalancedAllocation{}
)

// BalancedAllocationArgs are the plugin's args.
type BalancedAllocationArgs struct {
	Resources []ResourceSpec `json:"resources,omitempty"`
}

// NewBalancedAllocation builds the plugin.
func NewBalancedAllocation(raw json.RawMessage, _ framework.Handle) (framework.Plugin, error) {
	args := BalancedAllocationArgs{}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &args); err != nil {
			return nil, fmt.Errorf("decode %s args: %w", BalancedAllocationName, err)
		}
	}
	if len(args.Resources) == 0 {
		args.Resources = defaultResources
	}
	if err := validateResources(args.Resources); err != nil {
		return nil, fmt.Errorf("%s: %w", BalancedAllocationName, err)
	}
	return &BalancedAllocation{resources: args.Resources}, nil
}

// Name returns the plugin name.
func (*BalancedAllocation) Name() string { return BalancedAllocationName }

const balancedStateKey framework.StateKey = "PreScore" + BalancedAllocationName

type balancedState struct{ requests *framework.Resource }

func (s *balancedState) Clone() framework.StateData { return s }

// PreScore skips pods that request none of the balanced resources.
func (b *BalancedAllocation) PreScore(_ context.Context, state *framework.CycleState, pod *v1.Pod, _ []*framework.NodeInfo, _ framework.NodeInfoLister) *framework.Status {
	req := framework.PodRequests(pod, false)
	for _, r := range b.resources {
		if req.Get(r.Name) > 0 {
			state.Write(balancedStateKey, &balancedState{requests: req})
			return nil
		}
	}
	return framework.NewStatus(framework.Skip)
}

// Score is 100 * (1 - standard deviation of the per-resource utilization fractions).
func (b *BalancedAllocation) Score(_ context.Context, state *framework.CycleState, pod *v1.Pod, ni *framework.NodeInfo) (int64, *framework.Status) {
	var req *framework.Resource
	if d, err := state.Read(balancedStateKey); err == nil {
		req = d.(*balancedState).requests
	} else {
		req = framework.PodRequests(pod, false)
	}
	fractions := make([]float64, 0, len(b.resources))
	for _, r := range b.resources {
		alloc, requested := allocatableAndRequested(ni, req, r.Name, false)
		if alloc == 0 {
			continue
		}
		fractions = append(fractions, math.Min(float64(requested)/float64(alloc), 1))
	}
	if len(fractions) < 2 {
		return framework.MaxNodeScore, nil
	}
	var mean float64
	for _, f := range fractions {
		mean += f
	}
	mean /= float64(len(fractions))
	var variance float64
	for _, f := range fractions {
		variance += (f - mean) * (f - mean)
	}
	std := math.Sqrt(variance / float64(len(fractions)))
	return int64((1 - std) * float64(framework.MaxNodeScore)), nil
}

// ScoreExtensions: scores are already in range.
func (*BalancedAllocation) ScoreExtensions() framework.ScoreExtensions { return nil }
