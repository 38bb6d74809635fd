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

// PrepareResize keeps everything of the stored pod but the containers' and init containers'
// resources and resizePolicy, taken by position as Kubernetes does. A request whose containers were
// added, removed, renamed or reordered keeps its container lists as sent, so that validation refuses
// it ("containers may not be renamed or reordered on resize") instead of the change being applied to
// other containers than the client meant.
func PrepareResize(pod, old *corev1.Pod) {
	next := old.DeepCopy()
	next.Name, next.Namespace, next.ResourceVersion, next.UID = pod.Name, pod.Namespace, pod.ResourceVersion, pod.UID
	next.Spec.Containers = takeResizable(pod.Spec.Containers, next.Spec.Containers)
	next.Spec.InitContainers = takeResizable(pod.Spec.InitContainers, next.Spec.InitContainers)
	*pod = *next
}

// takeResizable returns stored with the resources and resizePolicy of requested, container by
// container, or requested itself when the two do not list the same containers in the same order.
func takeResizable(requested, stored []corev1.Container) []corev1.Container {
	if len(requested) != len(stored) {
		return requested
	}
	for i := range requested {
		if requested[i].Name != stored[i].Name {
			return requested
		}
	}
	for i := range stored {
		stored[i].Resources = *requested[i].Resources.DeepCopy()
		stored[i].ResizePolicy = slices.Clone(requested[i].ResizePolicy)
	}
	return stored
}

// ValidatePodResize checks a write through pods/resize as Kubernetes v1.33 does: the pod stays
// valid; pods with pod-level resources, static pods and Windows pods cannot be resized; the QoS class
// stays; a running pod must be on a node that reports its containers' resources (one that resizes);
// containers keep their order; no request or limit is removed, a memory limit is neither lowered nor
// added unless the container restarts for memory; only cpu and memory change, and only on containers
// and sidecars (restartable init containers).
func ValidatePodResize(pod, old *corev1.Pod) field.ErrorList {
	errs := validateObjectMetaUpdate(&pod.ObjectMeta, &old.ObjectMeta)
	errs = append(errs, validatePodSpec(&pod.Spec, specPath)...)
	if hasPodLevelResources(old) || hasPodLevelResources(pod) {
		return field.ErrorList{field.Forbidden(field.NewPath(""), "pods with pod-level resources cannot be resized")}
	}
	if _, static := old.Annotations[corev1.MirrorPodAnnotationKey]; static {
		return field.ErrorList{field.Forbidden(field.NewPath(""), "static pods cannot be resized")}
	}
	if old.Spec.OS != nil && old.Spec.OS.Name == corev1.Windows {
		return field.ErrorList{field.Forbidden(field.NewPath(""), "windows pods cannot be resized")}
	}
	oldQOS := old.Status.QOSClass
	if oldQOS == "" {
		oldQOS = PodQOSClass(&old.Spec)
	}
	if oldQOS != PodQOSClass(&pod.Spec) {
		errs = append(errs, field.Invalid(specPath, pod.Status.QOSClass, "Pod QOS Class may not change as a result of resizing"))
	}
	if !nodeSupportsResize(old) {
		errs = append(errs, field.Forbidden(specPath, "Pod running on node without support for resize"))
	}
	if orderErrs := validateResizeOrder(pod, old); len(orderErrs) > 0 {
		return append(errs, orderErrs...)
	}
	for i := range old.Spec.InitContainers {
		if isSidecar(&old.Spec.InitContainers[i]) {
			c := &pod.Spec.InitContainers[i]
			errs = append(errs, validateContainerResize(&c.Resources, &old.Spec.InitContainers[i].Resources, c.ResizePolicy, specPath.Child("initContainers").Index(i).Child("resources"))...)
		}
	}
	for i := range old.Spec.Containers {
		c := &pod.Spec.Containers[i]
		errs = append(errs, validateContainerResize(&c.Resources, &old.Spec.Containers[i].Resources, c.ResizePolicy, specPath.Child("containers").Index(i).Child("resources"))...)
	}
	munged := pod.Spec.DeepCopy()
	for i := range munged.Containers {
		undoCPUMemoryChanges(&munged.Containers[i], &old.Spec.Containers[i])
		if !apiequality.Semantic.DeepEqual(munged.Containers[i], old.Spec.Containers[i]) {
			errs = append(errs, field.Forbidden(specPath, "only cpu and memory resources are mutable"))
		}
	}
	for i := range munged.InitContainers {
		switch {
		case isSidecar(&old.Spec.InitContainers[i]):
			undoCPUMemoryChanges(&munged.InitContainers[i], &old.Spec.InitContainers[i])
			if !apiequality.Semantic.DeepEqual(munged.InitContainers[i], old.Spec.InitContainers[i]) {
				errs = append(errs, field.Forbidden(specPath, "only cpu and memory resources for sidecar containers are mutable"))
			}
		case !apiequality.Semantic.DeepEqual(munged.InitContainers[i], old.Spec.InitContainers[i]):
			errs = append(errs, field.Forbidden(specPath, "resources for non-sidecar init containers are immutable"))
		}
	}
	if len(errs) > 0 {
		return errs
	}
	if !apiequality.Semantic.DeepEqual(*munged, old.Spec) {
		errs = append(errs, field.Forbidden(specPath, "only cpu and memory resources are mutable"))
	}
	return errs
}

func hasPodLevelResources(pod *corev1.Pod) bool {
	r := pod.Spec.Resources
	return r != nil && len(r.Requests)+len(r.Limits) > 0
}

// nodeSupportsResize is Kubernetes' version-skew guard: a kubelet that resizes reports the resources
// of its running containers (status.containerStatuses[].resources); a pod whose running container has
// none is on a node that would ignore the resize. A pod with nothing running yet may be resized.
func nodeSupportsResize(pod *corev1.Pod) bool {
	for _, c := range pod.Status.ContainerStatuses {
		if c.State.Running != nil {
			return c.Resources != nil
		}
	}
	return true
}

func validateResizeOrder(pod, old *corev1.Pod) field.ErrorList {
	check := func(cur, prev []corev1.Container, p *field.Path, what string) field.ErrorList {
		if len(cur) != len(prev) {
			return field.ErrorList{field.Forbidden(p, what+" may not be added or removed on resize")}
		}
		var errs field.ErrorList
		for i := range cur {
			if cur[i].Name != prev[i].Name {
				errs = append(errs, field.Forbidden(p.Index(i).Child("name"), what+" may not be renamed or reordered on resize"))
			}
		}
		return errs
	}
	errs := check(pod.Spec.Containers, old.Spec.Containers, specPath.Child("containers"), "containers")
	return append(errs, check(pod.Spec.InitContainers, old.Spec.InitContainers, specPath.Child("initContainers"), "initContainers")...)
}

// validateContainerResize refuses removing any request or limit a container had, and (unless the
// container's memory resizePolicy is RestartContainer) lowering or adding a memory limit: the kernel
// cannot take memory back from a running process that uses it, so only a restart makes such a limit
// safe to apply.
func validateContainerResize(cur, prev *corev1.ResourceRequirements, policies []corev1.ContainerResizePolicy, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if resourcesRemoved(cur.Requests, prev.Requests) {
		errs = append(errs, field.Forbidden(fldPath.Child("requests"), "resource requests cannot be removed"))
	}
	if resourcesRemoved(cur.Limits, prev.Limits) {
		errs = append(errs, field.Forbidden(fldPath.Child("limits"), "resource limits cannot be removed"))
	}
	if memoryResizePolicy(policies) == corev1.RestartContainer {
		return errs
	}
	newLimit, hasNew := cur.Limits[corev1.ResourceMemory]
	oldLimit, hasOld := prev.Limits[corev1.ResourceMemory]
	switch {
	case hasNew && hasOld && newLimit.Cmp(oldLimit) < 0:
		errs = append(errs, field.Forbidden(fldPath.Child("limits").Key(string(corev1.ResourceMemory)),
			"memory limits cannot be decreased unless resizePolicy is "+string(corev1.RestartContainer)))
	case hasNew && !hasOld:
		// A new limit lowers it from unlimited.
		errs = append(errs, field.Forbidden(fldPath.Child("limits").Key(string(corev1.ResourceMemory)),
			"memory limits cannot be added unless resizePolicy is "+string(corev1.RestartContainer)))
	}
	return errs
}

// memoryResizePolicy is a container's restart policy for memory resizes (NotRequired when unset).
func memoryResizePolicy(policies []corev1.ContainerResizePolicy) corev1.ResourceResizeRestartPolicy {
	for _, p := range policies {
		if p.ResourceName == corev1.ResourceMemory && p.RestartPolicy != "" {
			return p.RestartPolicy
		}
	}
	return corev1.NotRequired
}

// resourcesRemoved reports whether a resource of prev is missing from cur.
func resourcesRemoved(cur, prev corev1.ResourceList) bool {
	for name := range prev {
		if _, ok := cur[name]; !ok {
			return true
		}
	}
	return false
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
