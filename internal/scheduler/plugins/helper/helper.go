package helper

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
)

var selectorOps = map[v1.NodeSelectorOperator]selection.Operator{
	v1.NodeSelectorOpIn:           selection.In,
	v1.NodeSelectorOpNotIn:        selection.NotIn,
	v1.NodeSelectorOpExists:       selection.Exists,
	v1.NodeSelectorOpDoesNotExist: selection.DoesNotExist,
	v1.NodeSelectorOpGt:           selection.GreaterThan,
	v1.NodeSelectorOpLt:           selection.LessThan,
}

// NodeSelectorRequirementsAsSelector converts match expressions to a label selector.
func NodeSelectorRequirementsAsSelector(reqs []v1.NodeSelectorRequirement) (labels.Selector, error) {
	if len(reqs) == 0 {
		return labels.Nothing(), nil
	}
	sel := labels.NewSelector()
	for _, r := range reqs {
		op, ok := selectorOps[r.Operator]
		if !ok {
			return nil, fmt.Errorf("%q is not a valid node selector operator", r.Operator)
		}
		req, err := labels.NewRequirement(r.Key, op, r.Values)
		if err != nil {
			return nil, err
		}
		sel = sel.Add(*req)
	}
	return sel, nil
}

// NodeSelectorTermMatches reports whether node satisfies one term: all
// matchExpressions on labels and all matchFields (only metadata.name exists).
// A term with no requirements matches nothing, as in Kubernetes.
func NodeSelectorTermMatches(term *v1.NodeSelectorTerm, node *v1.Node) bool {
	if len(term.MatchExpressions) == 0 && len(term.MatchFields) == 0 {
		return false
	}
	if len(term.MatchExpressions) > 0 {
		sel, err := NodeSelectorRequirementsAsSelector(term.MatchExpressions)
		if err != nil || !sel.Matches(labels.Set(node.Labels)) {
			return false
		}
	}
	for _, f := range term.MatchFields {
		if f.Key != "metadata.name" {
			return false
		}
		var sel fields.Selector
		switch {
		case f.Operator == v1.NodeSelectorOpIn && len(f.Values) == 1:
			sel = fields.OneTermEqualSelector("metadata.name", f.Values[0])
		case f.Operator == v1.NodeSelectorOpNotIn && len(f.Values) == 1:
			sel = fields.OneTermNotEqualSelector("metadata.name", f.Values[0])
		default:
			return false
		}
		if !sel.Matches(fields.Set{"metadata.name": node.Name}) {
			return false
		}
	}
	return true
}

// NodeSelectorMatches ORs the terms of a NodeSelector.
func NodeSelectorMatches(ns *v1.NodeSelector, node *v1.Node) bool {
	for i := range ns.NodeSelectorTerms {
		if NodeSelectorTermMatches(&ns.NodeSelectorTerms[i], node) {
			return true
		}
	}
	return false
}

// PodMatchesNodeSelectorAndAffinity checks spec.nodeSelector and the required node affinity.
func PodMatchesNodeSelectorAndAffinity(pod *v1.Pod, node *v1.Node) bool {
	if len(pod.Spec.NodeSelector) > 0 && !labels.SelectorFromSet(pod.Spec.NodeSelector).Matches(labels.Set(node.Labels)) {
		return false
	}
	if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		return NodeSelectorMatches(a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution, node)
	}
	return true
}

// Tolerates reports whether toleration t tolerates taint.
func Tolerates(t *v1.Toleration, taint *v1.Taint) bool {
	if t.Effect != "" && t.Effect != taint.Effect {
		return false
	}
	if t.Key != "" && t.Key != taint.Key {
		return false
	}
	switch t.Operator {
	case "", v1.TolerationOpEqual:
		return t.Value == taint.Value
	case v1.TolerationOpExists:
		return true
	}
	return false
}

// FindUntoleratedTaint returns the first taint passing filter that no toleration tolerates.
func FindUntoleratedTaint(taints []v1.Taint, tolerations []v1.Toleration, filter func(*v1.Taint) bool) (*v1.Taint, bool) {
	for i := range taints {
		taint := &taints[i]
		if filter != nil && !filter(taint) {
			continue
		}
		if !TolerationsTolerateTaint(tolerations, taint) {
			return taint, true
		}
	}
	return nil, false
}

// TolerationsTolerateTaint reports whether any toleration tolerates taint.
func TolerationsTolerateTaint(tolerations []v1.Toleration, taint *v1.Taint) bool {
	for i := range tolerations {
		if Tolerates(&tolerations[i], taint) {
			return true
		}
	}
	return false
}

// DoNotScheduleTaints keeps NoSchedule and NoExecute taints: the ones that block scheduling.
func DoNotScheduleTaints(t *v1.Taint) bool {
	return t.Effect == v1.TaintEffectNoSchedule || t.Effect == v1.TaintEffectNoExecute
}
