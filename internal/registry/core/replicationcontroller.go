package core

import (
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/internal/registry"
	vu "github.com/skiff-sh/skiff/internal/registry/validationutil"
)

// DefaultReplicationController applies Kubernetes' v1 defaults: an empty selector and empty labels
// are taken from the template's labels, replicas is 1, then the pod-template defaults.
func DefaultReplicationController(rc *corev1.ReplicationController) {
	if rc.Spec.Template != nil {
		if len(rc.Spec.Selector) == 0 {
			rc.Spec.Selector = copyLabels(rc.Spec.Template.Labels)
		}
		if len(rc.Labels) == 0 {
			rc.Labels = copyLabels(rc.Spec.Template.Labels)
		}
		DefaultPodTemplateSpec(rc.Spec.Template)
	}
	if rc.Spec.Replicas == nil {
		rc.Spec.Replicas = ptr.To[int32](1)
	}
}

func copyLabels(in map[string]string) map[string]string {
	if in == nil {
		return nil
	}
	out := make(map[string]string, len(in))
	for k, v := range in {
		out[k] = v
	}
	return out
}

// ValidateReplicationController checks a ReplicationController for create.
func ValidateReplicationController(rc *corev1.ReplicationController) field.ErrorList {
	errs := validateObjectMeta(&rc.ObjectMeta, true, apivalidation.NameIsDNSSubdomain)
	return append(errs, validateReplicationControllerSpec(&rc.Spec, specPath)...)
}

// ValidateReplicationControllerUpdate checks an update of the main resource (whose status is the
// stored one). Unlike a ReplicaSet's, an RC's selector may change.
func ValidateReplicationControllerUpdate(rc, old *corev1.ReplicationController) field.ErrorList {
	errs := validateObjectMetaUpdate(&rc.ObjectMeta, &old.ObjectMeta)
	return append(errs, validateReplicationControllerSpec(&rc.Spec, specPath)...)
}

// ValidateReplicationControllerStatusUpdate checks an update through /status.
func ValidateReplicationControllerStatusUpdate(rc, old *corev1.ReplicationController) field.ErrorList {
	errs := validateObjectMetaUpdate(&rc.ObjectMeta, &old.ObjectMeta)
	return append(errs, ValidateReplicationControllerStatus(&rc.Status)...)
}

func validateReplicationControllerSpec(spec *corev1.ReplicationControllerSpec, fldPath *field.Path) field.ErrorList {
	errs := vu.NonNegative(spec.MinReadySeconds, fldPath.Child("minReadySeconds"))
	selPath := fldPath.Child("selector")
	if len(spec.Selector) == 0 {
		errs = append(errs, field.Required(selPath, ""))
	} else {
		errs = append(errs, metav1validation.ValidateLabels(spec.Selector, selPath)...)
	}
	errs = append(errs, vu.NonNegative(ptr.Deref(spec.Replicas, 0), fldPath.Child("replicas"))...)
	return append(errs, validatePodTemplateSpecForRC(spec.Template, spec.Selector, fldPath.Child("template"))...)
}

// validatePodTemplateSpecForRC holds the template rules of a replicated pod: the selector selects
// the template, the pod rules hold, restartPolicy is Always and activeDeadlineSeconds is unset.
func validatePodTemplateSpecForRC(tmpl *corev1.PodTemplateSpec, selector map[string]string, fldPath *field.Path) field.ErrorList {
	if tmpl == nil {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	var errs field.ErrorList
	if sel := labels.Set(selector).AsSelector(); !sel.Empty() && !sel.Matches(labels.Set(tmpl.Labels)) {
		errs = append(errs, field.Invalid(fldPath.Child("metadata", "labels"), tmpl.Labels, "`selector` does not match template `labels`"))
	}
	errs = append(errs, ValidatePodTemplateSpec(tmpl, fldPath)...)
	if tmpl.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		errs = append(errs, field.NotSupported(fldPath.Child("spec", "restartPolicy"), tmpl.Spec.RestartPolicy, []corev1.RestartPolicy{corev1.RestartPolicyAlways}))
	}
	if tmpl.Spec.ActiveDeadlineSeconds != nil {
		errs = append(errs, field.Forbidden(fldPath.Child("spec", "activeDeadlineSeconds"), "activeDeadlineSeconds in ReplicationController is not Supported"))
	}
	return errs
}

// ValidateReplicationControllerStatus checks the status counters against each other.
func ValidateReplicationControllerStatus(s *corev1.ReplicationControllerStatus) field.ErrorList {
	errs := vu.NonNegative(s.Replicas, statusPath.Child("replicas"))
	errs = append(errs, vu.NonNegative(s.FullyLabeledReplicas, statusPath.Child("fullyLabeledReplicas"))...)
	errs = append(errs, vu.NonNegative(s.ReadyReplicas, statusPath.Child("readyReplicas"))...)
	errs = append(errs, vu.NonNegative(s.AvailableReplicas, statusPath.Child("availableReplicas"))...)
	errs = append(errs, vu.NonNegative(s.ObservedGeneration, statusPath.Child("observedGeneration"))...)
	const moreThanReplicas = "cannot be greater than the number of replicas"
	if s.FullyLabeledReplicas > s.Replicas {
		errs = append(errs, field.Invalid(statusPath.Child("fullyLabeledReplicas"), s.FullyLabeledReplicas, moreThanReplicas))
	}
	if s.ReadyReplicas > s.Replicas {
		errs = append(errs, field.Invalid(statusPath.Child("readyReplicas"), s.ReadyReplicas, moreThanReplicas))
	}
	if s.AvailableReplicas > s.Replicas {
		errs = append(errs, field.Invalid(statusPath.Child("availableReplicas"), s.AvailableReplicas, moreThanReplicas))
	}
	if s.AvailableReplicas > s.ReadyReplicas {
		errs = append(errs, field.Invalid(statusPath.Child("availableReplicas"), s.AvailableReplicas, "cannot be greater than readyReplicas"))
	}
	return errs
}

// newReplicationControllerStrategy keeps the status on main-resource writes and tracks generation
// over the spec, as Kubernetes does.
func newReplicationControllerStrategy() *typedStrategy[*corev1.ReplicationController] {
	return &typedStrategy[*corev1.ReplicationController]{
		prepareCreate: func(rc *corev1.ReplicationController) {
			rc.Status = corev1.ReplicationControllerStatus{}
			rc.Generation = 1
		},
		prepareUpdate: func(rc, old *corev1.ReplicationController) {
			rc.Status = old.Status
			bumpGenerationOnSpecChange(rc, old, rc.Spec, old.Spec)
		},
		validate:       ValidateReplicationController,
		validateUpdate: ValidateReplicationControllerUpdate,
		unconditional:  true,
		// v1's default garbage collection policy, kept upstream for backwards compatibility: a
		// delete without propagation leaves the pods (upstream's "Garbage collector should orphan
		// pods created by rc if deleteOptions.OrphanDependents is nil").
		orphanByDefault: true,
		resetFields:     []string{"status"},
	}
}

func newReplicationControllerStatusStrategy() *typedStatusStrategy[*corev1.ReplicationController] {
	return &typedStatusStrategy[*corev1.ReplicationController]{
		prepareUpdate:  func(rc, old *corev1.ReplicationController) { rc.Spec = old.Spec },
		validateUpdate: ValidateReplicationControllerStatusUpdate,
		resetFields:    []string{"spec"},
	}
}

// replicationControllerScale reads and writes spec.replicas behind rc/scale; the Scale's selector is
// the RC's map selector in its string form.
func replicationControllerScale() *registry.ScaleAccessor {
	return vu.ScaleAccessor(vu.ScaleFuncs[*corev1.ReplicationController]{
		SpecReplicas:   func(rc *corev1.ReplicationController) int32 { return ptr.Deref(rc.Spec.Replicas, 0) },
		StatusReplicas: func(rc *corev1.ReplicationController) int32 { return rc.Status.Replicas },
		Selector: func(rc *corev1.ReplicationController) *metav1.LabelSelector {
			return &metav1.LabelSelector{MatchLabels: rc.Spec.Selector}
		},
		SetReplicas: func(rc *corev1.ReplicationController, n int32) { rc.Spec.Replicas = &n },
	})
}
