package ctrlutil

import (
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/labels"
)

// OnNodeUpdate is an informer UpdateFunc that calls kick with the new object only when changed
// says the node update matters to the controller (anything that is not a pair of Nodes always
// does): controllers that recompute a whole table per node skip the heartbeats every node writes.
func OnNodeUpdate(changed func(old, cur *corev1.Node) bool, kick func(any)) func(o, n any) {
	return func(o, n any) {
		oldNode, ok1 := o.(*corev1.Node)
		newNode, ok2 := n.(*corev1.Node)
		if !ok1 || !ok2 || changed(oldNode, newNode) {
			kick(n)
		}
	}
}

// NodeHeartbeatOnly reports whether a node update changed nothing but its resourceVersion and its
// conditions' times (a kubelet's heartbeat): every condition keeps its status, everything else is
// equal. Controllers that place or count on nodes ignore such updates, which every node sends
// every few seconds.
func NodeHeartbeatOnly(old, cur *corev1.Node) bool {
	if len(old.Status.Conditions) != len(cur.Status.Conditions) {
		return false
	}
	for i := range old.Status.Conditions {
		o, c := &old.Status.Conditions[i], &cur.Status.Conditions[i]
		if o.Type != c.Type || o.Status != c.Status || o.Reason != c.Reason || o.Message != c.Message {
			return false
		}
	}
	o := *old
	o.ResourceVersion = cur.ResourceVersion
	o.ManagedFields = cur.ManagedFields
	o.Status.Conditions = cur.Status.Conditions
	return apiequality.Semantic.DeepEqual(&o, cur)
}

// Tolerates reports whether toleration t tolerates taint.
func Tolerates(t *corev1.Toleration, taint *corev1.Taint) bool {
	if t.Effect != "" && t.Effect != taint.Effect {
		return false
	}
	if t.Key == "" {
		return t.Operator == corev1.TolerationOpExists
	}
	if t.Key != taint.Key {
		return false
	}
	switch t.Operator {
	case corev1.TolerationOpExists:
		return true
	case "", corev1.TolerationOpEqual:
		return t.Value == taint.Value
	}
	return false
}

// ToleratesNode reports whether tolerations tolerate every NoSchedule and
// NoExecute taint of node (PreferNoSchedule never keeps a pod off a node).
func ToleratesNode(tolerations []corev1.Toleration, node *corev1.Node) bool {
	for i := range node.Spec.Taints {
		taint := &node.Spec.Taints[i]
		if taint.Effect == corev1.TaintEffectPreferNoSchedule {
			continue
		}
		if !slices.ContainsFunc(tolerations, func(t corev1.Toleration) bool { return Tolerates(&t, taint) }) {
			return false
		}
	}
	return true
}

// MatchesNodeSelectorAndAffinity reports whether a pod spec's nodeSelector
// and required node affinity admit node.
func MatchesNodeSelectorAndAffinity(spec *corev1.PodSpec, node *corev1.Node) bool {
	if len(spec.NodeSelector) > 0 && !labels.SelectorFromSet(spec.NodeSelector).Matches(labels.Set(node.Labels)) {
		return false
	}
	if spec.Affinity == nil || spec.Affinity.NodeAffinity == nil || spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return true
	}
	terms := spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	for i := range terms {
		if termMatches(&terms[i], node) {
			return true
		}
	}
	return false
}

// termMatches: all expressions and fields of one term hold (an empty term matches nothing).
func termMatches(term *corev1.NodeSelectorTerm, node *corev1.Node) bool {
	if len(term.MatchExpressions) == 0 && len(term.MatchFields) == 0 {
		return false
	}
	for _, r := range term.MatchExpressions {
		v, has := node.Labels[r.Key]
		if !requirementHolds(r, v, has) {
			return false
		}
	}
	for _, r := range term.MatchFields {
		if r.Key != "metadata.name" || !requirementHolds(r, node.Name, true) {
			return false
		}
	}
	return true
}

func requirementHolds(r corev1.NodeSelectorRequirement, value string, has bool) bool {
	switch r.Operator {
	case corev1.NodeSelectorOpIn:
		return has && slices.Contains(r.Values, value)
	case corev1.NodeSelectorOpNotIn:
		return !has || !slices.Contains(r.Values, value)
	case corev1.NodeSelectorOpExists:
		return has
	case corev1.NodeSelectorOpDoesNotExist:
		return !has
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
		if !has || len(r.Values) != 1 {
			return false
		}
		got, err1 := strconv.ParseInt(value, 10, 64)
		want, err2 := strconv.ParseInt(r.Values[0], 10, 64)
		if err1 != nil || err2 != nil {
			return false
		}
		if r.Operator == corev1.NodeSelectorOpGt {
			return got > want
		}
		return got < want
	}
	return false
}

// IsNodeReady reports whether the node's Ready condition is True (no condition: not ready).
func IsNodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
