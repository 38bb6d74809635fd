package core

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateResizePolicy checks a container's resizePolicy: cpu and memory at most once each, with
// NotRequired or RestartContainer, and only NotRequired in a pod that never restarts.
func validateResizePolicy(policies []corev1.ContainerResizePolicy, podRestart corev1.RestartPolicy, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[corev1.ResourceName]bool{}
	for i, p := range policies {
		if seen[p.ResourceName] {
			errs = append(errs, field.Duplicate(fldPath.Index(i), p.ResourceName))
		}
		seen[p.ResourceName] = true
		switch p.ResourceName {
		case corev1.ResourceCPU, corev1.ResourceMemory:
		case "":
			errs = append(errs, field.Required(fldPath, ""))
		default:
			errs = append(errs, field.NotSupported(fldPath, p.ResourceName, []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory}))
		}
		switch p.RestartPolicy {
		case corev1.NotRequired, corev1.RestartContainer:
		case "":
			errs = append(errs, field.Required(fldPath, ""))
		default:
			errs = append(errs, field.NotSupported(fldPath, p.RestartPolicy, []corev1.ResourceResizeRestartPolicy{corev1.NotRequired, corev1.RestartContainer}))
		}
		if podRestart == corev1.RestartPolicyNever && p.RestartPolicy != corev1.NotRequired {
			errs = append(errs, field.Invalid(fldPath, p.RestartPolicy, "must be 'NotRequired' when `restartPolicy` is 'Never'"))
		}
	}
	return errs
}

// isSidecar reports whether an init container runs beside the pod's containers (restartPolicy
// Always): its resources may be resized too.
func isSidecar(c *corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

// PrepareResize keeps everything of the stored pod but the containers' (and sidecars') resources
// and resizePolicy, matched by name so that a reordering is caught by validation, not applied.
func PrepareResize(pod, old *corev1.Pod) {
	next := old.DeepCopy()
	next.Name, next.Namespace, next.ResourceVersion, next.UID = pod.Name, pod.Namespace, pod.ResourceVersion, pod.UID
	take := func(dst []corev1.Container, src []corev1.Container, only func(*corev1.Container) bool) {
		for i := range dst {
			if only != nil && !only(&dst[i]) {
				continue
			}
			for _, c := range src {
				if c.Name == dst[i].Name {
					dst[i].Resources = *c.Resources.DeepCopy()
					dst[i].ResizePolicy = slices.Clone(c.ResizePolicy)
				}
			}
		}
	}
	take(next.Spec.Containers, pod.Spec.Containers, nil)
	take(next.Spec.InitContainers, pod.Spec.InitContainers, isSidecar)
	*pod = *next
}

// ValidatePodResize checks a write through pods/resize: the pod stays valid; static pods, pods with
// pod-level resources and Windows pods cannot be resized; containers keep their order; cpu and
// memory requests and limits may change but not be removed, nothing else may change, and the QoS
// class stays.
func ValidatePodResize(pod, old *corev1.Pod) field.ErrorList {
	errs := validateObjectMetaUpdate(&pod.ObjectMeta, &old.ObjectMeta)
	errs = append(errs, validatePodSpec(&pod.Spec, specPath)...)
	if _, static := old.Annotations[corev1.MirrorPodAnnotationKey]; static {
		return field.ErrorList{field.Forbidden(field.NewPath(""), "static pods cannot be resized")}
	}
	if pod.Spec.Resources != nil {
		errs = append(errs, field.Forbidden(specPath.Child("resources"), "pods with pod-level resources cannot be resized"))
	}
	if old.Spec.OS != nil && old.Spec.OS.Name == corev1.Windows {
		errs = append(errs, field.Forbidden(specPath, "windows pods cannot be resized"))
	}
	if PodQOSClass(&old.Spec) != PodQOSClass(&pod.Spec) {
		errs = append(errs, field.Invalid(specPath, pod.Status.QOSClass, "Pod QOS Class may not change as a result of resizing"))
	}
	if orderErrs := validateResizeOrder(pod, old); len(orderErrs) > 0 {
		return append(errs, orderErrs...)
	}
	munged := pod.Spec.DeepCopy()
	for i := range old.Spec.Containers {
		errs = append(errs, validateNoResourceRemoval(&pod.Spec.Containers[i].Resources, &old.Spec.Containers[i].Resources, specPath.Child("containers").Index(i).Child("resources"))...)
		undoCPUMemoryChanges(&munged.Containers[i], &old.Spec.Containers[i])
	}
	for i := range old.Spec.InitContainers {
		if !isSidecar(&old.Spec.InitContainers[i]) {
			continue
		}
		errs = append(errs, validateNoResourceRemoval(&pod.Spec.InitContainers[i].Resources, &old.Spec.InitContainers[i].Resources, specPath.Child("initContainers").Index(i).Child("resources"))...)
		undoCPUMemoryChanges(&munged.InitContainers[i], &old.Spec.InitContainers[i])
	}
	if !apiequality.Semantic.DeepEqual(*munged, old.Spec) {
		errs = append(errs, field.Forbidden(specPath, "only cpu and memory resources are mutable"))
	}
	return errs
}

func validateResizeOrder(pod, old *corev1.Pod) field.ErrorList {
	check := func(cur, prev []corev1.Container, p *field.Path) field.ErrorList {
		if len(cur) != len(prev) {
			return field.ErrorList{field.Forbidden(p, "containers may not be added or removed on resize")}
		}
		var errs field.ErrorList
		for i := range cur {
			if cur[i].Name != prev[i].Name {
				errs = append(errs, field.Forbidden(p.Index(i).Child("name"), "containers may not be renamed or reordered on resize"))
			}
		}
		return errs
	}
	errs := check(pod.Spec.Containers, old.Spec.Containers, specPath.Child("containers"))
	return append(errs, check(pod.Spec.InitContainers, old.Spec.InitContainers, specPath.Child("initContainers"))...)
}

// validateNoResourceRemoval refuses dropping a cpu or memory request or limit a container had.
func validateNoResourceRemoval(cur, prev *corev1.ResourceRequirements, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if q, ok := prev.Limits[name]; ok && !q.IsZero() {
			if n, ok := cur.Limits[name]; !ok || n.IsZero() {
				errs = append(errs, field.Forbidden(fldPath.Child("limits").Key(string(name)), "resource limits cannot be removed"))
			}
		}
		if q, ok := prev.Requests[name]; ok && !q.IsZero() {
			if n, ok := cur.Requests[name]; !ok || n.IsZero() {
				errs = append(errs, field.Forbidden(fldPath.Child("requests").Key(string(name)), "resource requests cannot be removed"))
			}
		}
	}
	return errs
}

// undoCPUMemoryChanges puts back prev's cpu and memory requests and limits and resizePolicy, so
// that whatever differs afterwards is a change a resize may not make.
func undoCPUMemoryChanges(c, prev *corev1.Container) {
	undo := func(cur, old corev1.ResourceList) corev1.ResourceList {
		if old == nil {
			// Kubernetes lets a list be added where there was none.
			return nil
		}
		out := corev1.ResourceList{}
		for k, v := range cur {
			out[k] = v.DeepCopy()
		}
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			delete(out, name)
			if q, ok := old[name]; ok {
				out[name] = q.DeepCopy()
			}
		}
		return out
	}
	c.Resources = corev1.ResourceRequirements{Limits: undo(c.Resources.Limits, prev.Resources.Limits), Requests: undo(c.Resources.Requests, prev.Resources.Requests), Claims: c.Resources.Claims}
	c.ResizePolicy = prev.ResizePolicy
}
