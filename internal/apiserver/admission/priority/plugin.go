package priority

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/skiff-sh/skiff/internal/apiserver/admission"
)

// Name is Kubernetes' name of the plugin.
const Name = "Priority"

// Plugin resolves a pod's priorityClassName into spec.priority and spec.preemptionPolicy.
type Plugin struct{}

func (Plugin) Name() string { return Name }

func (Plugin) Admit(ctx context.Context, a *admission.Attributes, lookup admission.Lookup) error {
	pod, ok := a.PodCreate()
	if !ok {
		return nil
	}
	forbidden := func(msg string) error {
		return apierrors.NewForbidden(a.Resource.GroupResource(), a.Name, fmt.Errorf("%s", msg))
	}
	var value int32
	var policy *corev1.PreemptionPolicy
	if pod.Spec.PriorityClassName == "" {
		list, err := lookup.List(ctx, "scheduling.k8s.io", "priorityclasses", "")
		if err == nil {
			if pcs, ok := list.(*schedulingv1.PriorityClassList); ok {
				for i := range pcs.Items {
					if pcs.Items[i].GlobalDefault {
						pod.Spec.PriorityClassName = pcs.Items[i].Name
						value, policy = pcs.Items[i].Value, pcs.Items[i].PreemptionPolicy
						break
					}
				}
			}
		}
	} else {
		obj, err := lookup.Get(ctx, "scheduling.k8s.io", "priorityclasses", "", pod.Spec.PriorityClassName)
		if apierrors.IsNotFound(err) {
			return forbidden(fmt.Sprintf("no PriorityClass with name %s was found", pod.Spec.PriorityClassName))
		}
		if err != nil {
			return err
		}
		pc := obj.(*schedulingv1.PriorityClass)
		value, policy = pc.Value, pc.PreemptionPolicy
	}
	if pod.Spec.Priority != nil && *pod.Spec.Priority != value {
		return forbidden(fmt.Sprintf("the integer value of priority (%d) must not be provided in pod spec; priority admission controller computed %d from the given PriorityClass name", *pod.Spec.Priority, value))
	}
	pod.Spec.Priority = &value
	if policy != nil {
		if pod.Spec.PreemptionPolicy != nil && *pod.Spec.PreemptionPolicy != *policy {
			return forbidden(fmt.Sprintf("the string value of PreemptionPolicy (%s) must not be provided in pod spec; priority admission controller computed %s from the given PriorityClass name", *pod.Spec.PreemptionPolicy, *policy))
		}
		pod.Spec.PreemptionPolicy = policy
	} else if pod.Spec.PreemptionPolicy == nil {
		p := corev1.PreemptLowerPriority
		pod.Spec.PreemptionPolicy = &p
	}
	return nil
}

func (Plugin) Validate(context.Context, *admission.Attributes, admission.Lookup) error { return nil }
