package scheduler

import (
	"context"
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"

	schedcache "github.com/skiff-sh/skiff/internal/scheduler/cache"
	"github.com/skiff-sh/skiff/internal/scheduler/framework"
	"github.com/skiff-sh/skiff/internal/scheduler/plugins"
)

// Verdict is one plugin's answer at one extension point.
type Verdict struct {
	Plugin         string   `json:"plugin"`
	ExtensionPoint string   `json:"extensionPoint"`
	Code           string   `json:"code"`
	Reasons        []string `json:"reasons,omitempty"`
}

// PluginScore is one score plugin's weighted score of the node.
type PluginScore struct {
	Plugin string `json:"plugin"`
	Score  int64  `json:"score"`
}

// Report explains whether and why a pod fits a node.
type Report struct {
	Pod           string        `json:"pod"`
	Node          string        `json:"node"`
	SchedulerName string        `json:"schedulerName"`
	BoundTo       string        `json:"boundTo,omitempty"`
	Fits          bool          `json:"fits"`
	Verdicts      []Verdict     `json:"verdicts"`
	Scores        []PluginScore `json:"scores,omitempty"`
	TotalScore    int64         `json:"totalScore,omitempty"`
	// Rank is the node's 1-based place among feasible nodes by score (0 if it does not fit).
	Rank          int `json:"rank,omitempty"`
	FeasibleNodes int `json:"feasibleNodes"`
	TotalNodes    int `json:"totalNodes"`
	// ClusterMessage is the FailedScheduling-style summary when no node fits.
	ClusterMessage string `json:"clusterMessage,omitempty"`
}

// String renders the report for an operator.
func (r Report) String() string {
	var b strings.Builder
	verdict := "does NOT fit"
	if r.Fits {
		verdict = "fits"
	}
	fmt.Fprintf(&b, "Pod %s %s node %s (profile %s).\n", r.Pod, verdict, r.Node, r.SchedulerName)
	if r.BoundTo != "" {
		fmt.Fprintf(&b, "The pod is already bound to %s (evaluated as if it were pending).\n", r.BoundTo)
	}
	fmt.Fprintf(&b, "%-32s %-10s %-30s %s\n", "PLUGIN", "POINT", "RESULT", "REASONS")
	for _, v := range r.Verdicts {
		fmt.Fprintf(&b, "%-32s %-10s %-30s %s\n", v.Plugin, v.ExtensionPoint, v.Code, strings.Join(v.Reasons, "; "))
	}
	if r.Fits {
		fmt.Fprintf(&b, "Score %d, rank %d of %d feasible nodes (%d nodes in total):\n", r.TotalScore, r.Rank, r.FeasibleNodes, r.TotalNodes)
		for _, s := range r.Scores {
			fmt.Fprintf(&b, "  %-32s %d\n", s.Plugin, s.Score)
		}
	} else {
		fmt.Fprintf(&b, "%d of %d nodes are feasible for this pod.\n", r.FeasibleNodes, r.TotalNodes)
	}
	if r.ClusterMessage != "" {
		fmt.Fprintf(&b, "Cluster-wide: %s\n", r.ClusterMessage)
	}
	return b.String()
}

// Explain evaluates, with the default profile configuration, every PreFilter
// and Filter plugin for the pod against the node (not stopping at the first
// rejection) and, if it fits, its scores and rank among feasible nodes. It
// reads the cluster through client and changes nothing.
func Explain(ctx context.Context, client kubernetes.Interface, namespace, podName, nodeName string) (Report, error) {
	return ExplainWithConfig(ctx, client, nil, namespace, podName, nodeName)
}

// ExplainWithConfig is Explain with a scheduler configuration (nil = defaults).
func ExplainWithConfig(ctx context.Context, client kubernetes.Interface, cfg *framework.Configuration, namespace, podName, nodeName string) (Report, error) {
	if cfg == nil {
		cfg = framework.DefaultConfiguration()
	}
	pod, err := client.CoreV1().Pods(namespace).Get(ctx, podName, metav1.GetOptions{})
	if err != nil {
		return Report{}, fmt.Errorf("explain: get pod %s/%s: %w", namespace, podName, err)
	}
	if _, err := client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{}); err != nil {
		return Report{}, fmt.Errorf("explain: get node %s: %w", nodeName, err)
	}
	nodeList, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return Report{}, fmt.Errorf("explain: list nodes: %w", err)
	}
	podList, err := client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return Report{}, fmt.Errorf("explain: list pods: %w", err)
	}
	nodes := make([]*v1.Node, 0, len(nodeList.Items))
	for i := range nodeList.Items {
		nodes = append(nodes, &nodeList.Items[i])
	}
	var assigned []*v1.Pod
	for i := range podList.Items {
		p := &podList.Items[i]
		if p.Spec.NodeName != "" && p.UID != pod.UID && !terminal(p) {
			assigned = append(assigned, p)
		}
	}
	snap := schedcache.NewSnapshot(assigned, nodes)

	profile := cfg.Profiles[0]
	for _, p := range cfg.Profiles {
		if p.SchedulerName == pod.Spec.SchedulerName {
			profile = p
		}
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	fwk, err := framework.NewFramework(plugins.NewInTreeRegistry(), plugins.DefaultPlugins(), profile, framework.Options{
		Client: client, InformerFactory: factory, Parallelism: int(*cfg.Parallelism),
	})
	if err != nil {
		return Report{}, fmt.Errorf("explain: %w", err)
	}
	// Namespace labels (namespaceSelector) come from an informer the plugins registered.
	factory.Core().V1().Namespaces().Informer()
	informerCtx, stopInformers := context.WithCancel(ctx)
	defer factory.Shutdown()
	defer stopInformers()
	factory.Start(informerCtx.Done())
	factory.WaitForCacheSync(informerCtx.Done())

	pending := pod.DeepCopy()
	pending.Spec.NodeName = ""
	report := Report{Pod: namespace + "/" + podName, Node: nodeName, SchedulerName: profile.SchedulerName, BoundTo: pod.Spec.NodeName, TotalNodes: snap.NumNodes()}
	state := framework.NewCycleState()
	prefilterOK := true
	for _, v := range fwk.RunPreFilterPluginsEach(ctx, state, pending, snap) {
		report.Verdicts = append(report.Verdicts, toVerdict(v))
		if !v.Status.IsSuccess() && !v.Status.IsSkip() {
			prefilterOK = false
		}
	}
	target, err := snap.Get(nodeName)
	if err != nil {
		return Report{}, fmt.Errorf("explain: %w", err)
	}
	report.Fits = prefilterOK
	for _, v := range fwk.RunFilterPluginsAll(ctx, state, pending, target) {
		report.Verdicts = append(report.Verdicts, toVerdict(v))
		if !v.Status.IsSuccess() && !v.Status.IsSkip() {
			report.Fits = false
		}
	}
	if !prefilterOK {
		return report, nil
	}
	var feasible []*framework.NodeInfo
	statuses := framework.NodeToStatus{}
	for _, ni := range snap.List() {
		if st := fwk.RunFilterPlugins(ctx, state, pending, ni); st.IsSuccess() {
			feasible = append(feasible, ni)
		} else {
			statuses[ni.Node().Name] = st
		}
	}
	report.FeasibleNodes = len(feasible)
	if len(feasible) == 0 {
		report.ClusterMessage = (&framework.FitError{Pod: pending, NumAllNodes: snap.NumNodes(), Diagnosis: framework.Diagnosis{NodeToStatus: statuses}}).Error()
	}
	if !report.Fits {
		return report, nil
	}
	if st := fwk.RunPreScorePlugins(ctx, state, pending, feasible, snap); !st.IsSuccess() {
		return report, fmt.Errorf("explain: %w", st.AsError())
	}
	scores, st := fwk.RunScorePlugins(ctx, state, pending, feasible)
	if !st.IsSuccess() {
		return report, fmt.Errorf("explain: %w", st.AsError())
	}
	idx := -1
	for i, ni := range feasible {
		if ni.Node().Name == nodeName {
			idx = i
		}
	}
	if idx < 0 {
		return report, fmt.Errorf("explain: node %s passed filters but is missing from the feasible list", nodeName)
	}
	for j, name := range scores.Plugins {
		report.Scores = append(report.Scores, PluginScore{Plugin: name, Score: scores.Scores[idx][j]})
	}
	report.TotalScore = scores.Totals[idx]
	totals := append([]int64(nil), scores.Totals...)
	sort.Slice(totals, func(a, b int) bool { return totals[a] > totals[b] })
	report.Rank = sort.Search(len(totals), func(i int) bool { return totals[i] <= report.TotalScore }) + 1
	return report, nil
}

func toVerdict(v framework.PluginVerdict) Verdict {
	return Verdict{Plugin: v.Plugin, ExtensionPoint: v.Point, Code: v.Status.Code().String(), Reasons: v.Status.Reasons()}
}

// terminal pods hold no resources: Kubernetes' scheduler ignores them.
func terminal(p *v1.Pod) bool {
	return p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed
}
