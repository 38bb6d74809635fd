package runtimeclass

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/skiff-sh/skiff/internal/apiserver/admission"
)

// Name is Kubernetes' name of the plugin.
const Name = "RuntimeClass"

// Plugin resolves a new pod's runtimeClassName, as Kubernetes' admission plugin of that name: a
// missing RuntimeClass refuses the pod; the class's overhead becomes spec.overhead (a
// different one given in the pod is refused) and its scheduling node selector and tolerations
// are merged into the pod's.
type Plugin struct{}

func (Plugin) Name() string { return Name }

func (Plugin) Admit(ctx context.Context, a *admission.Attributes, lookup admission.Lookup) error {
	pod, ok := a.PodCreate()
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

func (Plugin) Validate(context.Context, *admission.Attributes, admission.Lookup) error { return nil }

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
