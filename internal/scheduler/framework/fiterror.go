package framework

import (
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// Diagnosis records why each node was rejected in a cycle.
type Diagnosis struct {
	NodeToStatus NodeToStatus
	// PreFilterMsg is set when a PreFilter plugin rejected the pod outright.
	PreFilterMsg string
	// PostFilterMsg is the preemption outcome.
	PostFilterMsg string
	// UnschedulablePlugins are the plugins that rejected the pod, used to
	// decide which cluster events should retry it.
	UnschedulablePlugins map[string]bool
}

// FitError is returned when a pod fits no node; Error() is Kubernetes' message.
type FitError struct {
	Pod         *v1.Pod
	NumAllNodes int
	Diagnosis   Diagnosis
}

// Error formats "0/N nodes are available: <count> <reason>, .... preemption: ...".
// Reasons are counted over nodes and sorted as strings, as Kubernetes does.
func (f *FitError) Error() string {
	msg := fmt.Sprintf("0/%d nodes are available:", f.NumAllNodes)
	if f.Diagnosis.PreFilterMsg != "" {
		msg += " " + f.Diagnosis.PreFilterMsg + "."
	} else {
		msg += histogram(f.Diagnosis.NodeToStatus)
	}
	if pm := f.Diagnosis.PostFilterMsg; pm != "" {
		msg += " " + pm
		if !strings.HasSuffix(pm, ".") {
			msg += "."
		}
	}
	return msg
}

// histogram renders " 3 reason-a, 2 reason-b." or "" when there are no reasons.
func histogram(statuses NodeToStatus) string {
	counts := map[string]int{}
	for _, s := range statuses {
		for _, r := range s.Reasons() {
			counts[r]++
		}
	}
	if len(counts) == 0 {
		return ""
	}
	parts := make([]string, 0, len(counts))
	for r, n := range counts {
		parts = append(parts, fmt.Sprintf("%d %s", n, r))
	}
	sort.Strings(parts)
	return " " + strings.Join(parts, ", ") + "."
}

// NodesAvailableMessage formats a preemption-style summary, e.g.
// "0/3 nodes are available: 3 Preemption is not helpful for scheduling."
func NodesAvailableMessage(numAllNodes int, statuses NodeToStatus) string {
	return fmt.Sprintf("0/%d nodes are available:", numAllNodes) + histogram(statuses)
}
