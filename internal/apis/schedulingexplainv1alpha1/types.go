package schedulingexplainv1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group of skiff's scheduling reviews.
const GroupName = "scheduling.skiff.sh"

// SchemeGroupVersion is scheduling.skiff.sh/v1alpha1.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1alpha1"}

// Kind and resource names.
const (
	Kind     = "PodSchedulingExplanation"
	ListKind = "PodSchedulingExplanationList"
	Resource = "podschedulingexplanations"
	Singular = "podschedulingexplanation"
)

// AddToScheme registers the types of scheduling.skiff.sh/v1alpha1 and the group's meta types.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(SchemeGroupVersion, &PodSchedulingExplanation{}, &PodSchedulingExplanationList{})
	metav1.AddToGroupVersion(s, SchemeGroupVersion)
	return nil
}

// PodSchedulingExplanation asks the API server why a pod does or does not fit the cluster's nodes.
// Like SubjectAccessReview it is create-only: a POST returns it with its status computed and
// nothing is stored.
type PodSchedulingExplanation struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              PodSchedulingExplanationSpec   `json:"spec"`
	Status            PodSchedulingExplanationStatus `json:"status,omitempty"`
}

// PodSchedulingExplanationList exists for the scheme; nothing is ever listed.
type PodSchedulingExplanationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PodSchedulingExplanation `json:"items"`
}

// PodSchedulingExplanationSpec names the pod (in the explanation's namespace) and the nodes.
type PodSchedulingExplanationSpec struct {
	// PodName is the pod to explain. Required.
	PodName string `json:"podName"`
	// NodeNames limits the answer to these nodes; empty means every node. Named nodes get every
	// plugin's verdict and per-plugin scores; an all-nodes answer keeps only the rejections.
	NodeNames []string `json:"nodeNames,omitempty"`
}

// PodSchedulingExplanationStatus is the scheduler's answer, computed against the API server's view.
type PodSchedulingExplanationStatus struct {
	// SchedulerName is the profile evaluated (the pod's spec.schedulerName when the configuration
	// has that profile, the first profile otherwise).
	SchedulerName string `json:"schedulerName,omitempty"`
	// BoundTo is the pod's node when it is already bound (it is evaluated as if pending).
	BoundTo string `json:"boundTo,omitempty"`
	// TotalNodes and FeasibleNodes count the whole cluster, whatever spec.nodeNames says.
	TotalNodes    int32 `json:"totalNodes"`
	FeasibleNodes int32 `json:"feasibleNodes"`
	// PreFilter holds the verdicts that apply to every node (PreFilter plugins).
	PreFilter []PluginVerdict `json:"preFilter,omitempty"`
	// Summary counts, over the whole cluster, the nodes rejected for each reason, most frequent
	// first (a node rejected for two reasons counts under both).
	Summary []ReasonCount `json:"summary,omitempty"`
	// Message is the scheduler's FailedScheduling message when no node fits.
	Message string `json:"message,omitempty"`
	// Nodes are the per-node verdicts: the named nodes in the order named, or every node
	// (infeasible ones first, then feasible by rank).
	Nodes []NodeExplanation `json:"nodes,omitempty"`
}

// NodeExplanation is one node's verdict.
type NodeExplanation struct {
	Name     string `json:"name"`
	Feasible bool   `json:"feasible"`
	// Reasons are the rejection reasons of every plugin that rejected the node.
	Reasons []string `json:"reasons,omitempty"`
	// Verdicts are the Filter plugins' verdicts (every plugin's for named nodes, the rejections only
	// otherwise).
	Verdicts []PluginVerdict `json:"verdicts,omitempty"`
	// TotalScore and Rank (1-based among feasible nodes) are set when the node is feasible.
	TotalScore int64 `json:"totalScore,omitempty"`
	Rank       int32 `json:"rank,omitempty"`
	// Scores are the weighted per-plugin scores (named nodes only).
	Scores []PluginScore `json:"scores,omitempty"`
}

// PluginVerdict is one plugin's answer at one extension point.
type PluginVerdict struct {
	Plugin         string   `json:"plugin"`
	ExtensionPoint string   `json:"extensionPoint"`
	Code           string   `json:"code"`
	Reasons        []string `json:"reasons,omitempty"`
}

// PluginScore is one Score plugin's weighted score of a node.
type PluginScore struct {
	Plugin string `json:"plugin"`
	Score  int64  `json:"score"`
}

// ReasonCount is how many nodes a reason rejected.
type ReasonCount struct {
	Reason string `json:"reason"`
	Count  int32  `json:"count"`
}

// OpenAPIModelName is the name of the type's published OpenAPI definition.
func (PodSchedulingExplanation) OpenAPIModelName() string {
	return "sh.skiff.scheduling.v1alpha1.PodSchedulingExplanation"
}

// OpenAPIModelName is the name of the type's published OpenAPI definition.
func (PodSchedulingExplanationList) OpenAPIModelName() string {
	return "sh.skiff.scheduling.v1alpha1.PodSchedulingExplanationList"
}
