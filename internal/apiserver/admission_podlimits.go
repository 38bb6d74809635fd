package apiserver

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// LimitRanger applies a namespace's LimitRanges of type Container to new pods, as Kubernetes'
// admission plugin of that name: Admit fills missing limits from `default` and missing requests
// from `defaultRequest`; Validate refuses containers below `min` or above `max`. The ranges are
// read from storage, so a pod created right after its LimitRange sees it. Pod- and claim-level
// ranges and maxLimitRequestRatio are not enforced yet.
type LimitRanger struct{}

func (LimitRanger) Name() string { return "LimitRanger" }

func containerLimits(ctx context.Context, lookup Lookup, namespace string) ([]corev1.LimitRangeItem, error) {
	obj, err := lookup.List(ctx, "", "limitranges", namespace)
	if err != nil {
		return nil, fmt.Errorf("list limitranges of %s: %w", namespace, err)
	}
	list, ok := obj.(*corev1.LimitRangeList)
	if !ok {
		return nil, nil
	}
	var items []corev1.LimitRangeItem
	for _, lr := range list.Items {
		for _, item := range lr.Spec.Limits {
			if item.Type == corev1.LimitTypeContainer {
				items = append(items, item)
			}
		}
	}
	return items, nil
}

func (LimitRanger) Admit(ctx context.Context, a *AdmissionAttributes, lookup Lookup) error {
	pod, ok := isPodCreate(a)
	if !ok {
		return nil
	}
	items, err := containerLimits(ctx, lookup, a.Namespace)
	if err != nil || len(items) == 0 {
		return err
	}
	for i := range pod.Spec.InitContainers {
		applyContainerDefaults(&pod.Spec.InitContainers[i].Resources, items)
	}
	for i := range pod.Spec.Containers {
		applyContainerDefaults(&pod.Spec.Containers[i].Resources, items)
	}
	return nil
}

// applyContainerDefaults sets the limits and requests r lacks from the ranges' defaults.
func applyContainerDefaults(r *corev1.ResourceRequirements, items []corev1.LimitRangeItem) {
	for _, item := range items {
		for name, q := range item.Default {
			if _, ok := r.Limits[name]; !ok {
				if r.Limits == nil {
					r.Limits = corev1.ResourceList{}
				}
				r.Limits[name] = q.DeepCopy()
			}
		}
		for name, q := range item.DefaultRequest {
			if _, ok := r.Requests[name]; !ok {
				if r.Requests == nil {
					r.Requests = corev1.ResourceList{}
				}
				r.Requests[name] = q.DeepCopy()
			}
		}
	}
}

func (LimitRanger) Validate(ctx context.Context, a *AdmissionAttributes, lookup Lookup) error {
	pod, ok := isPodCreate(a)
	if !ok {
		return nil
	}
	items, err := containerLimits(ctx, lookup, a.Namespace)
	if err != nil || len(items) == 0 {
		return err
	}
	var problems []string
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range cs {
			problems = append(problems, containerLimitProblems(c.Resources, items)...)
		}
	}
	if len(problems) == 0 {
		return nil
	}
	return apierrors.NewForbidden(a.Resource.GroupResource(), a.Name, fmt.Errorf("%s", strings.Join(problems, ", ")))
}

// containerLimitProblems lists, in upstream's words, how r breaks the ranges' min and max.
func containerLimitProblems(r corev1.ResourceRequirements, items []corev1.LimitRangeItem) []string {
	var out []string
	for _, item := range items {
		for _, name := range sortedNames(item.Min) {
			min := item.Min[name]
			if req, ok := r.Requests[name]; !ok {
				out = append(out, fmt.Sprintf("minimum %s usage per Container is %s.  No request is specified", name, min.String()))
			} else if req.Cmp(min) < 0 {
				out = append(out, fmt.Sprintf("minimum %s usage per Container is %s, but request is %s", name, min.String(), req.String()))
			}
			if lim, ok := r.Limits[name]; ok && lim.Cmp(min) < 0 {
				out = append(out, fmt.Sprintf("minimum %s usage per Container is %s, but limit is %s", name, min.String(), lim.String()))
			}
		}
		for _, name := range sortedNames(item.Max) {
			max := item.Max[name]
			if lim, ok := r.Limits[name]; !ok {
				out = append(out, fmt.Sprintf("maximum %s usage per Container is %s.  No limit is specified", name, max.String()))
			} else if lim.Cmp(max) > 0 {
				out = append(out, fmt.Sprintf("maximum %s usage per Container is %s, but limit is %s", name, max.String(), lim.String()))
			}
			if req, ok := r.Requests[name]; ok && req.Cmp(max) > 0 {
				out = append(out, fmt.Sprintf("maximum %s usage per Container is %s, but request is %s", name, max.String(), req.String()))
			}
		}
	}
	return out
}

func sortedNames(l corev1.ResourceList) []corev1.ResourceName {
	names := make([]corev1.ResourceName, 0, len(l))
	for n := range l {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return names[i] < names[j] })
	return names
}

// RuntimeClass resolves a new pod's runtimeClassName, as Kubernetes' admission plugin of that
// name: a missing RuntimeClass refuses the pod; the class's overhead becomes spec.overhead (a
// different one given in the pod is refused) and its scheduling node selector and tolerations
// are merged into the pod's.
type RuntimeClass struct{}

func (RuntimeClass) Name() string { return "RuntimeClass" }

func (RuntimeClass) Admit(ctx context.Context, a *AdmissionAttributes, lookup Lookup) error {
	pod, ok := isPodCreate(a)
	if !ok || pod.Spec.RuntimeClassName == nil || *pod.Spec.RuntimeClassName == "" {
		return nil
	}
	name := *pod.Spec.RuntimeClassName
	obj, err := lookup.Get(ctx, "node.k8s.io", "runtimeclasses", "", name)
	if apierrors.IsNotFound(err) {
		return apierrors.NewForbidden(a.Resource.GroupResource(), a.Name, fmt.Errorf("pod rejected: RuntimeClass %q not found", name))
	}
	if err != nil {
		return fmt.Errorf("runtimeclass %s: %w", name, err)
	}
	rc, ok := obj.(*nodev1.RuntimeClass)
	if !ok {
		return nil
	}
	if msg := applyRuntimeClass(&pod.Spec, rc); msg != "" {
		return apierrors.NewForbidden(a.Resource.GroupResource(), a.Name, fmt.Errorf("pod rejected: %s", msg))
	}
	return nil
}

func (RuntimeClass) Validate(context.Context, *AdmissionAttributes, Lookup) error { return nil }

// applyRuntimeClass merges rc's overhead and scheduling into spec, or says why it cannot.
func applyRuntimeClass(spec *corev1.PodSpec, rc *nodev1.RuntimeClass) string {
	if rc.Overhead != nil && rc.Overhead.PodFixed != nil {
		if spec.Overhead != nil && !apiequality.Semantic.DeepEqual(spec.Overhead, rc.Overhead.PodFixed) {
			return "Pod's Overhead doesn't match RuntimeClass's defined Overhead"
		}
		spec.Overhead = rc.Overhead.PodFixed.DeepCopy()
	} else if spec.Overhead != nil {
		return "Pod Overhead set without corresponding RuntimeClass defined Overhead"
	}
	if rc.Scheduling == nil {
		return ""
	}
	for k, v := range rc.Scheduling.NodeSelector {
		if old, ok := spec.NodeSelector[k]; ok && old != v {
			return fmt.Sprintf("conflict: runtimeClass.scheduling.nodeSelector[%s] = %s; pod.spec.nodeSelector[%s] = %s", k, v, k, old)
		}
		if spec.NodeSelector == nil {
			spec.NodeSelector = map[string]string{}
		}
		spec.NodeSelector[k] = v
	}
	for _, t := range rc.Scheduling.Tolerations {
		dup := false
		for _, have := range spec.Tolerations {
			if apiequality.Semantic.DeepEqual(have, t) {
				dup = true
				break
			}
		}
		if !dup {
			spec.Tolerations = append(spec.Tolerations, t)
		}
	}
	return ""
}
