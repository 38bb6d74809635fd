package core

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// msgEphemeralForbidden is Kubernetes' wording for a field an ephemeral container may not have.
const msgEphemeralForbidden = "cannot be set for an Ephemeral Container"

// validateEphemeralContainers checks a pod's ephemeral containers: names unique among all the pod's
// containers, a target container that exists, the container rules, and none of the fields that
// would make the pod depend on them (ports, probes, lifecycle, resources), as Kubernetes allows
// only a debugging shell's fields.
func validateEphemeralContainers(containers []corev1.EphemeralContainer, volumes map[string]corev1.VolumeSource, names sets.Set[string], spec *corev1.PodSpec, fldPath *field.Path) field.ErrorList {
	// Target containers are the pod's regular and init containers, whose names are known before
	// the ephemeral ones are added to names.
	targets := sets.New[string]()
	for _, c := range spec.Containers {
		targets.Insert(c.Name)
	}
	for _, c := range spec.InitContainers {
		targets.Insert(c.Name)
	}
	var errs field.ErrorList
	for i := range containers {
		ec := &containers[i]
		p := fldPath.Index(i)
		errs = append(errs, validateContainerName(ec.Name, names, p.Child("name"))...)
		if ec.TargetContainerName != "" && !targets.Has(ec.TargetContainerName) {
			errs = append(errs, field.NotFound(p.Child("targetContainerName"), ec.TargetContainerName))
		}
		// EphemeralContainerCommon has exactly Container's fields, so the container rules apply as
		// they are.
		c := (*corev1.Container)(&ec.EphemeralContainerCommon)
		errs = append(errs, validateContainerCommon(c, volumes, spec, p)...)
		for _, forbidden := range []struct {
			name string
			set  bool
		}{
			{"lifecycle", c.Lifecycle != nil},
			{"livenessProbe", c.LivenessProbe != nil},
			{"ports", len(c.Ports) > 0},
			{"readinessProbe", c.ReadinessProbe != nil},
			{"resizePolicy", len(c.ResizePolicy) > 0},
			{"resources", !apiequality.Semantic.DeepEqual(c.Resources, corev1.ResourceRequirements{})},
			{"startupProbe", c.StartupProbe != nil},
			{"restartPolicy", c.RestartPolicy != nil},
			{"restartPolicyRules", len(c.RestartPolicyRules) > 0},
		} {
			if forbidden.set {
				errs = append(errs, field.Forbidden(p.Child(forbidden.name), msgEphemeralForbidden))
			}
		}
		for j, m := range c.VolumeMounts {
			if m.SubPath != "" {
				errs = append(errs, field.Forbidden(p.Child("volumeMounts").Index(j).Child("subPath"), msgEphemeralForbidden))
			}
			if m.SubPathExpr != "" {
				errs = append(errs, field.Forbidden(p.Child("volumeMounts").Index(j).Child("subPathExpr"), msgEphemeralForbidden))
			}
		}
	}
	return errs
}

// ValidatePodEphemeralContainersUpdate checks a write through pods/ephemeralcontainers: the pod stays
// valid, static pods get none, and ephemeral containers may only be added, never changed or
// removed (order aside: a patch does not keep it).
func ValidatePodEphemeralContainersUpdate(pod, old *corev1.Pod) field.ErrorList {
	errs := validateObjectMetaUpdate(&pod.ObjectMeta, &old.ObjectMeta)
	errs = append(errs, validatePodSpec(&pod.Spec, specPath)...)
	if _, static := old.Annotations[corev1.MirrorPodAnnotationKey]; static {
		return field.ErrorList{field.Forbidden(field.NewPath(""), "static pods do not support ephemeral containers")}
	}
	byName := make(map[string]*corev1.EphemeralContainer, len(pod.Spec.EphemeralContainers))
	for i := range pod.Spec.EphemeralContainers {
		byName[pod.Spec.EphemeralContainers[i].Name] = &pod.Spec.EphemeralContainers[i]
	}
	ecPath := specPath.Child("ephemeralContainers")
	for _, prev := range old.Spec.EphemeralContainers {
		cur, ok := byName[prev.Name]
		switch {
		case !ok:
			errs = append(errs, field.Forbidden(ecPath, fmt.Sprintf("existing ephemeral containers %q may not be removed\n", prev.Name)))
		case !apiequality.Semantic.DeepEqual(prev, *cur):
			errs = append(errs, field.Forbidden(ecPath, fmt.Sprintf("existing ephemeral containers %q may not be changed\n%v", prev.Name, cmpDiff(prev, *cur))))
		}
	}
	return errs
}
