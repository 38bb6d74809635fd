package schedulingexplainv1alpha1

import "k8s.io/apimachinery/pkg/runtime"

// DeepCopyInto copies every field of in into out.
func (in *PodSchedulingExplanation) DeepCopyInto(out *PodSchedulingExplanation) {
	*out = *in
	out.TypeMeta = in.TypeMeta
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Spec.NodeNames = cloneStrings(in.Spec.NodeNames)
	in.Status.DeepCopyInto(&out.Status)
}

// DeepCopy returns a deep copy.
func (in *PodSchedulingExplanation) DeepCopy() *PodSchedulingExplanation {
	if in == nil {
		return nil
	}
	out := new(PodSchedulingExplanation)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (in *PodSchedulingExplanation) DeepCopyObject() runtime.Object {
	if c := in.DeepCopy(); c != nil {
		return c
	}
	return nil
}

// DeepCopyInto copies every field of in into out.
func (in *PodSchedulingExplanationList) DeepCopyInto(out *PodSchedulingExplanationList) {
	*out = *in
	in.ListMeta.DeepCopyInto(&out.ListMeta)
	if in.Items != nil {
		out.Items = make([]PodSchedulingExplanation, len(in.Items))
		for i := range in.Items {
			in.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
}

// DeepCopy returns a deep copy.
func (in *PodSchedulingExplanationList) DeepCopy() *PodSchedulingExplanationList {
	if in == nil {
		return nil
	}
	out := new(PodSchedulingExplanationList)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (in *PodSchedulingExplanationList) DeepCopyObject() runtime.Object {
	if c := in.DeepCopy(); c != nil {
		return c
	}
	return nil
}

// DeepCopyInto copies every field of in into out.
func (in *PodSchedulingExplanationStatus) DeepCopyInto(out *PodSchedulingExplanationStatus) {
	*out = *in
	out.PreFilter = cloneVerdicts(in.PreFilter)
	if in.Summary != nil {
		out.Summary = append([]ReasonCount(nil), in.Summary...)
	}
	if in.Nodes != nil {
		out.Nodes = make([]NodeExplanation, len(in.Nodes))
		for i, n := range in.Nodes {
			n.Reasons = cloneStrings(n.Reasons)
			n.Verdicts = cloneVerdicts(n.Verdicts)
			if n.Scores != nil {
				n.Scores = append([]PluginScore(nil), n.Scores...)
			}
			out.Nodes[i] = n
		}
	}
}

func cloneStrings(in []string) []string {
	if in == nil {
		return nil
	}
	return append([]string(nil), in...)
}

func cloneVerdicts(in []PluginVerdict) []PluginVerdict {
	if in == nil {
		return nil
	}
	out := make([]PluginVerdict, len(in))
	for i, v := range in {
		v.Reasons = cloneStrings(v.Reasons)
		out[i] = v
	}
	return out
}
