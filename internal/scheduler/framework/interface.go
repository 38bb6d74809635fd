package framework

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
)

// Score bounds: every plugin's normalized score lies in [MinNodeScore, MaxNodeScore].
const (
	MinNodeScore int64 = 0
	MaxNodeScore int64 = 100
)

// Plugin is anything registered by name.
type Plugin interface {
	Name() string
}

// PreFilterPlugin computes per-pod state once per cycle. nodes is the
// snapshot of every node. Returning Skip skips the plugin's Filter too.
type PreFilterPlugin interface {
	Plugin
	PreFilter(ctx context.Context, state *CycleState, pod *v1.Pod, nodes NodeInfoLister) *Status
}

// PreFilterExtensions update a PreFilter plugin's cycle state for a pod added to or removed
// from a node, so that preemption can simulate evictions without running PreFilter again.
type PreFilterExtensions interface {
	AddPod(ctx context.Context, state *CycleState, podToSchedule *v1.Pod, podToAdd *PodInfo, nodeInfo *NodeInfo) *Status
	RemovePod(ctx context.Context, state *CycleState, podToSchedule *v1.Pod, podToRemove *PodInfo, nodeInfo *NodeInfo) *Status
}

// PreFilterExtender is a PreFilter plugin whose state depends on other pods.
type PreFilterExtender interface {
	PreFilterExtensions() PreFilterExtensions
}

// FilterPlugin decides whether pod fits on one node. It runs in parallel over
// nodes, so it must only read state and nodeInfo.
type FilterPlugin interface {
	Plugin
	Filter(ctx context.Context, state *CycleState, pod *v1.Pod, nodeInfo *NodeInfo) *Status
}

// PostFilterResult is what a PostFilter plugin achieved.
type PostFilterResult struct {
	NominatedNodeName string
}

// NodeToStatus maps node names to their Filter verdicts.
type NodeToStatus map[string]*Status

// PostFilterPlugin runs when no node fits (preemption).
type PostFilterPlugin interface {
	Plugin
	PostFilter(ctx context.Context, state *CycleState, pod *v1.Pod, filtered NodeToStatus, nodes NodeInfoLister) (*PostFilterResult, *Status)
}

// PreScorePlugin prepares scoring over the feasible nodes; all is every node.
type PreScorePlugin interface {
	Plugin
	PreScore(ctx context.Context, state *CycleState, pod *v1.Pod, feasible []*NodeInfo, all NodeInfoLister) *Status
}

// NodeScore is a node's score from one plugin.
type NodeScore struct {
	Name  string
	Score int64
}

// ScoreExtensions normalizes a plugin's raw scores to [0, MaxNodeScore].
type ScoreExtensions interface {
	NormalizeScore(ctx context.Context, state *CycleState, pod *v1.Pod, scores []NodeScore) *Status
}

// ScorePlugin ranks feasible nodes; runs in parallel over nodes.
type ScorePlugin interface {
	Plugin
	Score(ctx context.Context, state *CycleState, pod *v1.Pod, nodeInfo *NodeInfo) (int64, *Status)
	// ScoreExtensions returns nil when scores need no normalization.
	ScoreExtensions() ScoreExtensions
}

// ReservePlugin is told when a pod is assumed onto a node and, on a later
// failure, to undo it.
type ReservePlugin interface {
	Plugin
	Reserve(ctx context.Context, state *CycleState, pod *v1.Pod, nodeName string) *Status
	Unreserve(ctx context.Context, state *CycleState, pod *v1.Pod, nodeName string)
}

// PreBindPlugin prepares what the pod needs on its node before it is bound (volumes, for
// VolumeBinding). It runs in the binding goroutine, off the scheduling cycle, so it may write to
// the API server and wait; a failure unreserves the pod and retries it.
type PreBindPlugin interface {
	Plugin
	PreBind(ctx context.Context, state *CycleState, pod *v1.Pod, nodeName string) *Status
}

// BindPlugin writes the decision to the API server. Skip passes to the next binder.
type BindPlugin interface {
	Plugin
	Bind(ctx context.Context, state *CycleState, pod *v1.Pod, nodeName string) *Status
}

// ActionType is a bit set of object changes.
type ActionType int

// Actions on cluster objects that can make an unschedulable pod schedulable.
const (
	Add ActionType = 1 << iota
	Delete
	Update
	All = Add | Delete | Update
)

// Kinds of objects whose events move unschedulable pods.
const (
	KindPod                   = "Pod"
	KindAssignedPod           = "AssignedPod"
	KindNode                  = "Node"
	KindNamespace             = "Namespace"
	KindPodDisruptionBudget   = "PodDisruptionBudget"
	KindPersistentVolumeClaim = "PersistentVolumeClaim"
	KindPersistentVolume      = "PersistentVolume"
	KindStorageClass          = "StorageClass"
	KindCSINode               = "CSINode"
	KindCSIDriver             = "CSIDriver"
	KindCSIStorageCapacity    = "CSIStorageCapacity"
	KindVolumeAttachment      = "VolumeAttachment"
	// KindWildcard matches every event (used for the periodic flush).
	KindWildcard = "*"
)

// ClusterEvent is a change that may make pods schedulable.
type ClusterEvent struct {
	Resource   string
	ActionType ActionType
	Label      string
}

// Match reports whether a registered interest e covers the event o.
func (e ClusterEvent) Match(o ClusterEvent) bool {
	if e.Resource == KindWildcard || o.Resource == KindWildcard {
		return true
	}
	return e.Resource == o.Resource && e.ActionType&o.ActionType != 0
}

// EnqueueExtensions names the events after which a pod this plugin rejected
// should be retried.
type EnqueueExtensions interface {
	Plugin
	EventsToRegister() []ClusterEvent
}

// Handle gives plugins what they need from the scheduler.
type Handle interface {
	ClientSet() kubernetes.Interface
	SharedInformerFactory() informers.SharedInformerFactory
	EventRecorder() record.EventRecorder
	Parallelizer() Parallelizer
	ProfileName() string
	// RunPreFilterPlugins and RunFilterPlugins let PostFilter simulate.
	RunPreFilterPlugins(ctx context.Context, state *CycleState, pod *v1.Pod, nodes NodeInfoLister) *Status
	RunFilterPlugins(ctx context.Context, state *CycleState, pod *v1.Pod, nodeInfo *NodeInfo) *Status
	// RunPreFilterExtensionAddPod and RunPreFilterExtensionRemovePod update a state PreFilter
	// filled for a pod added to or removed from a node (preemption's simulations).
	RunPreFilterExtensionAddPod(ctx context.Context, state *CycleState, podToSchedule *v1.Pod, podToAdd *PodInfo, nodeInfo *NodeInfo) *Status
	RunPreFilterExtensionRemovePod(ctx context.Context, state *CycleState, podToSchedule *v1.Pod, podToRemove *PodInfo, nodeInfo *NodeInfo) *Status
}
