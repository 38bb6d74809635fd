package apps

import (
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"

	vu "github.com/skiff-sh/skiff/internal/registry/validationutil"
)

var (
	specPath     = field.NewPath("spec")
	statusPath   = field.NewPath("status")
	selectorPath = specPath.Child("selector")
	templatePath = specPath.Child("template")
)

// validateReplicatedTemplate holds the rules every replicated workload's template shares: the
// selector selects it, the core pod rules hold, restartPolicy is Always and activeDeadlineSeconds
// is unset. kind is the workload's name in messages ("Deployment").
func validateReplicatedTemplate(pod vu.PodTemplate, sel selectorAndTemplate, kind string) field.ErrorList {
	errs := vu.WorkloadSelector(sel.selector, sel.template.Labels, lower(kind), selectorPath, templatePath.Child("metadata", "labels"))
	errs = append(errs, pod.ValidateTemplate(sel.template, templatePath)...)
	if sel.template.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		errs = append(errs, field.NotSupported(templatePath.Child("spec", "restartPolicy"), sel.template.Spec.RestartPolicy, []corev1.RestartPolicy{corev1.RestartPolicyAlways}))
	}
	if sel.template.Spec.ActiveDeadlineSeconds != nil {
		errs = append(errs, field.Forbidden(templatePath.Child("spec", "activeDeadlineSeconds"), fmt.Sprintf("activeDeadlineSeconds in %s is not Supported", kind)))
	}
	return errs
}

type selectorAndTemplate struct {
	selector *metav1.LabelSelector
	template *corev1.PodTemplateSpec
}

func lower(kind string) string {
	b := []byte(kind)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

func replicas(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}

// ValidateDeployment checks a Deployment's spec.
func ValidateDeployment(d *appsv1.Deployment, pod vu.PodTemplate) field.ErrorList {
	spec := &d.Spec
	errs := vu.NonNegative(replicas(spec.Replicas), specPath.Child("replicas"))
	errs = append(errs, validateReplicatedTemplate(pod, selectorAndTemplate{spec.Selector, &spec.Template}, "Deployment")...)
	errs = append(errs, validateDeploymentStrategy(&spec.Strategy, specPath.Child("strategy"))...)
	errs = append(errs, vu.NonNegative(spec.MinReadySeconds, specPath.Child("minReadySeconds"))...)
	if spec.RevisionHistoryLimit != nil {
		errs = append(errs, vu.NonNegative(*spec.RevisionHistoryLimit, specPath.Child("revisionHistoryLimit"))...)
	}
	if spec.ProgressDeadlineSeconds != nil {
		p := specPath.Child("progressDeadlineSeconds")
		errs = append(errs, vu.NonNegative(*spec.ProgressDeadlineSeconds, p)...)
		if *spec.ProgressDeadlineSeconds <= spec.MinReadySeconds {
			errs = append(errs, field.Invalid(p, *spec.ProgressDeadlineSeconds, "must be greater than minReadySeconds"))
		}
	}
	return errs
}

func validateDeploymentStrategy(st *appsv1.DeploymentStrategy, fldPath *field.Path) field.ErrorList {
	switch st.Type {
	case appsv1.RecreateDeploymentStrategyType:
		if st.RollingUpdate != nil {
			return field.ErrorList{field.Forbidden(fldPath.Child("rollingUpdate"), fmt.Sprintf("may not be specified when strategy `type` is '%s'", appsv1.RecreateDeploymentStrategyType))}
		}
		return nil
	case appsv1.RollingUpdateDeploymentStrategyType:
		if st.RollingUpdate == nil {
			return field.ErrorList{field.Required(fldPath.Child("rollingUpdate"), "this should be defaulted and never be nil")}
		}
		p := fldPath.Child("rollingUpdate")
		maxUnavailable, maxSurge := intOrZero(st.RollingUpdate.MaxUnavailable), intOrZero(st.RollingUpdate.MaxSurge)
		errs := vu.NonNegativeIntOrPercent(maxUnavailable, p.Child("maxUnavailable"))
		errs = append(errs, vu.NonNegativeIntOrPercent(maxSurge, p.Child("maxSurge"))...)
		if vu.IntOrPercentValue(maxUnavailable) == 0 && vu.IntOrPercentValue(maxSurge) == 0 {
			errs = append(errs, field.Invalid(p.Child("maxUnavailable"), maxUnavailable, "may not be 0 when `maxSurge` is 0"))
		}
		return append(errs, vu.NotMoreThan100Percent(maxUnavailable, p.Child("maxUnavailable"))...)
	default:
		return field.ErrorList{field.NotSupported(fldPath.Child("type"), st.Type, []appsv1.DeploymentStrategyType{appsv1.RecreateDeploymentStrategyType, appsv1.RollingUpdateDeploymentStrategyType})}
	}
}

func intOrZero(v *intstr.IntOrString) intstr.IntOrString {
	if v == nil {
		return intstr.FromInt32(0)
	}
	return *v
}

// validateSelectorUnchanged is apps/v1's rule that a workload's selector never changes.
func validateSelectorUnchanged(sel, old *metav1.LabelSelector) field.ErrorList {
	return vu.Immutable(sel, old, selectorPath)
}

// ValidateDeploymentStatus checks a Deployment's status counters and their relations.
func ValidateDeploymentStatus(s, old *appsv1.DeploymentStatus) field.ErrorList {
	errs := vu.NonNegative(s.ObservedGeneration, statusPath.Child("observedGeneration"))
	errs = append(errs, replicaCounts([]counter{
		{"replicas", s.Replicas}, {"updatedReplicas", s.UpdatedReplicas}, {"readyReplicas", s.ReadyReplicas},
		{"availableReplicas", s.AvailableReplicas}, {"unavailableReplicas", s.UnavailableReplicas},
	})...)
	if s.TerminatingReplicas != nil {
		errs = append(errs, vu.NonNegative(*s.TerminatingReplicas, statusPath.Child("terminatingReplicas"))...)
	}
	const moreThanReplicas = "cannot be greater than status.replicas"
	if s.UpdatedReplicas > s.Replicas {
		errs = append(errs, field.Invalid(statusPath.Child("updatedReplicas"), s.UpdatedReplicas, moreThanReplicas))
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
	return append(errs, collisionCount(s.CollisionCount, old.CollisionCount)...)
}

// counter is one named status count; a slice of them keeps error order stable.
type counter struct {
	name  string
	value int32
}

func replicaCounts(counts []counter) field.ErrorList {
	var errs field.ErrorList
	for _, c := range counts {
		errs = append(errs, vu.NonNegative(c.value, statusPath.Child(c.name))...)
	}
	return errs
}

// collisionCount may only grow: controllers use it to make new revision hashes unique.
func collisionCount(now, old *int32) field.ErrorList {
	if now == nil {
		return nil
	}
	p := statusPath.Child("collisionCount")
	errs := vu.NonNegative(*now, p)
	if old != nil && *now < *old {
		errs = append(errs, field.Invalid(p, *now, "cannot be decremented"))
	}
	return errs
}

// ValidateReplicaSet checks a ReplicaSet's spec.
func ValidateReplicaSet(rs *appsv1.ReplicaSet, pod vu.PodTemplate) field.ErrorList {
	spec := &rs.Spec
	errs := vu.NonNegative(replicas(spec.Replicas), specPath.Child("replicas"))
	errs = append(errs, vu.NonNegative(spec.MinReadySeconds, specPath.Child("minReadySeconds"))...)
	return append(errs, validateReplicatedTemplate(pod, selectorAndTemplate{spec.Selector, &spec.Template}, "ReplicaSet")...)
}

// ValidateReplicaSetStatus checks a ReplicaSet's status counters.
func ValidateReplicaSetStatus(s *appsv1.ReplicaSetStatus) field.ErrorList {
	errs := vu.NonNegative(s.ObservedGeneration, statusPath.Child("observedGeneration"))
	errs = append(errs, replicaCounts([]counter{
		{"replicas", s.Replicas}, {"fullyLabeledReplicas", s.FullyLabeledReplicas},
		{"readyReplicas", s.ReadyReplicas}, {"availableReplicas", s.AvailableReplicas},
	})...)
	if s.TerminatingReplicas != nil {
		errs = append(errs, vu.NonNegative(*s.TerminatingReplicas, statusPath.Child("terminatingReplicas"))...)
	}
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

// ValidateStatefulSet checks a StatefulSet's spec.
func ValidateStatefulSet(ss *appsv1.StatefulSet, pod vu.PodTemplate) field.ErrorList {
	spec := &ss.Spec
	var errs field.ErrorList
	switch spec.PodManagementPolicy {
	case "":
		errs = append(errs, field.Required(specPath.Child("podManagementPolicy"), ""))
	case appsv1.OrderedReadyPodManagement, appsv1.ParallelPodManagement:
	default:
		errs = append(errs, field.Invalid(specPath.Child("podManagementPolicy"), spec.PodManagementPolicy,
			fmt.Sprintf("must be '%s' or '%s'", appsv1.OrderedReadyPodManagement, appsv1.ParallelPodManagement)))
	}
	us := spec.UpdateStrategy
	usPath := specPath.Child("updateStrategy")
	switch us.Type {
	case "":
		errs = append(errs, field.Required(usPath, ""))
	case appsv1.OnDeleteStatefulSetStrategyType:
		if us.RollingUpdate != nil {
			errs = append(errs, field.Invalid(usPath.Child("rollingUpdate"), us.RollingUpdate,
				fmt.Sprintf("only allowed for updateStrategy '%s'", appsv1.RollingUpdateStatefulSetStrategyType)))
		}
	case appsv1.RollingUpdateStatefulSetStrategyType:
		if ru := us.RollingUpdate; ru != nil {
			p := usPath.Child("rollingUpdate")
			if ru.Partition != nil {
				errs = append(errs, vu.NonNegative(*ru.Partition, p.Child("partition"))...)
			}
			if ru.MaxUnavailable != nil {
				mp := p.Child("maxUnavailable")
				errs = append(errs, vu.NonNegativeIntOrPercent(*ru.MaxUnavailable, mp)...)
				if vu.IntOrPercentValue(*ru.MaxUnavailable) == 0 {
					errs = append(errs, field.Invalid(mp, *ru.MaxUnavailable, "cannot be 0"))
				}
				errs = append(errs, vu.NotMoreThan100Percent(*ru.MaxUnavailable, mp)...)
			}
		}
	default:
		errs = append(errs, field.Invalid(usPath, us,
			fmt.Sprintf("must be '%s' or '%s'", appsv1.RollingUpdateStatefulSetStrategyType, appsv1.OnDeleteStatefulSetStrategyType)))
	}
	if rp := spec.PersistentVolumeClaimRetentionPolicy; rp != nil {
		p := specPath.Child("persistentVolumeClaimRetentionPolicy")
		allowed := []appsv1.PersistentVolumeClaimRetentionPolicyType{appsv1.RetainPersistentVolumeClaimRetentionPolicyType, appsv1.DeletePersistentVolumeClaimRetentionPolicyType}
		if rp.WhenDeleted != appsv1.RetainPersistentVolumeClaimRetentionPolicyType && rp.WhenDeleted != appsv1.DeletePersistentVolumeClaimRetentionPolicyType {
			errs = append(errs, field.NotSupported(p.Child("whenDeleted"), rp.WhenDeleted, allowed))
		}
		if rp.WhenScaled != appsv1.RetainPersistentVolumeClaimRetentionPolicyType && rp.WhenScaled != appsv1.DeletePersistentVolumeClaimRetentionPolicyType {
			errs = append(errs, field.NotSupported(p.Child("whenScaled"), rp.WhenScaled, allowed))
		}
	}
	errs = append(errs, vu.NonNegative(replicas(spec.Replicas), specPath.Child("replicas"))...)
	if spec.Ordinals != nil {
		errs = append(errs, vu.NonNegative(spec.Ordinals.Start, specPath.Child("ordinals.start"))...)
	}
	errs = append(errs, vu.NonNegative(spec.MinReadySeconds, specPath.Child("minReadySeconds"))...)
	if spec.RevisionHistoryLimit != nil {
		errs = append(errs, vu.NonNegative(*spec.RevisionHistoryLimit, specPath.Child("revisionHistoryLimit"))...)
	}
	return append(errs, validateReplicatedTemplate(pod, selectorAndTemplate{spec.Selector, withClaimVolumes(spec)}, "StatefulSet")...)
}

// withClaimVolumes is the template as the StatefulSet controller turns it into pods: every
// volumeClaimTemplate becomes a volume of the same name (unless the template already has one), so
// containers may mount claims the template itself does not list, as Kubernetes allows.
func withClaimVolumes(spec *appsv1.StatefulSetSpec) *corev1.PodTemplateSpec {
	if len(spec.VolumeClaimTemplates) == 0 {
		return &spec.Template
	}
	tmpl := spec.Template.DeepCopy()
	for _, claim := range spec.VolumeClaimTemplates {
		if slices.ContainsFunc(tmpl.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == claim.Name }) {
			continue
		}
		tmpl.Spec.Volumes = append(tmpl.Spec.Volumes, corev1.Volume{Name: claim.Name, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim.Name},
		}})
	}
	return tmpl
}

// validateStatefulSetChange allows only the fields Kubernetes lets change after creation.
func validateStatefulSetChange(ss, old *appsv1.StatefulSet) field.ErrorList {
	// Copy the mutable fields onto the old spec: anything else that differs is a forbidden change.
	mutable := old.Spec.DeepCopy()
	mutable.Replicas = ss.Spec.Replicas
	mutable.Template = ss.Spec.Template
	mutable.UpdateStrategy = ss.Spec.UpdateStrategy
	mutable.PersistentVolumeClaimRetentionPolicy = ss.Spec.PersistentVolumeClaimRetentionPolicy
	mutable.MinReadySeconds = ss.Spec.MinReadySeconds
	mutable.Ordinals = ss.Spec.Ordinals
	mutable.RevisionHistoryLimit = ss.Spec.RevisionHistoryLimit
	if !apiequality.Semantic.DeepEqual(*mutable, ss.Spec) {
		return field.ErrorList{field.Forbidden(specPath, "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden")}
	}
	return nil
}

// ValidateStatefulSetStatus checks a StatefulSet's status counters.
func ValidateStatefulSetStatus(s, old *appsv1.StatefulSetStatus) field.ErrorList {
	errs := vu.NonNegative(s.ObservedGeneration, statusPath.Child("observedGeneration"))
	errs = append(errs, replicaCounts([]counter{
		{"replicas", s.Replicas}, {"readyReplicas", s.ReadyReplicas}, {"currentReplicas", s.CurrentReplicas},
		{"updatedReplicas", s.UpdatedReplicas}, {"availableReplicas", s.AvailableReplicas},
	})...)
	const moreThanReplicas = "cannot be greater than status.replicas"
	for _, c := range []counter{{"readyReplicas", s.ReadyReplicas}, {"currentReplicas", s.CurrentReplicas}, {"updatedReplicas", s.UpdatedReplicas}, {"availableReplicas", s.AvailableReplicas}} {
		if c.value > s.Replicas {
			errs = append(errs, field.Invalid(statusPath.Child(c.name), c.value, moreThanReplicas))
		}
	}
	if s.AvailableReplicas > s.ReadyReplicas {
		errs = append(errs, field.Invalid(statusPath.Child("availableReplicas"), s.AvailableReplicas, "cannot be greater than status.readyReplicas"))
	}
	return append(errs, collisionCount(s.CollisionCount, old.CollisionCount)...)
}

// ValidateDaemonSet checks a DaemonSet's spec.
func ValidateDaemonSet(ds *appsv1.DaemonSet, pod vu.PodTemplate) field.ErrorList {
	spec := &ds.Spec
	errs := validateReplicatedTemplate(pod, selectorAndTemplate{spec.Selector, &spec.Template}, "DaemonSet")
	errs = append(errs, vu.NonNegative(spec.MinReadySeconds, specPath.Child("minReadySeconds"))...)
	if spec.RevisionHistoryLimit != nil {
		errs = append(errs, vu.NonNegative(*spec.RevisionHistoryLimit, specPath.Child("revisionHistoryLimit"))...)
	}
	us := spec.UpdateStrategy
	usPath := specPath.Child("updateStrategy")
	switch us.Type {
	case appsv1.OnDeleteDaemonSetStrategyType:
	case appsv1.RollingUpdateDaemonSetStrategyType:
		if us.RollingUpdate == nil {
			return append(errs, field.Required(usPath.Child("rollingUpdate"), ""))
		}
		p := usPath.Child("rollingUpdate")
		maxUnavailable, maxSurge := intOrZero(us.RollingUpdate.MaxUnavailable), intOrZero(us.RollingUpdate.MaxSurge)
		errs = append(errs, vu.NonNegativeIntOrPercent(maxUnavailable, p.Child("maxUnavailable"))...)
		errs = append(errs, vu.NonNegativeIntOrPercent(maxSurge, p.Child("maxSurge"))...)
		errs = append(errs, vu.NotMoreThan100Percent(maxUnavailable, p.Child("maxUnavailable"))...)
		errs = append(errs, vu.NotMoreThan100Percent(maxSurge, p.Child("maxSurge"))...)
		hasUnavailable, hasSurge := vu.IntOrPercentValue(maxUnavailable) != 0, vu.IntOrPercentValue(maxSurge) != 0
		switch {
		case hasUnavailable && hasSurge:
			errs = append(errs, field.Invalid(p.Child("maxSurge"), maxSurge, "may not be set when maxUnavailable is non-zero"))
		case !hasUnavailable && !hasSurge:
			errs = append(errs, field.Required(p.Child("maxUnavailable"), "cannot be 0 when maxSurge is 0"))
		}
	default:
		errs = append(errs, field.NotSupported(usPath.Child("type"), us.Type, []appsv1.DaemonSetUpdateStrategyType{appsv1.RollingUpdateDaemonSetStrategyType, appsv1.OnDeleteDaemonSetStrategyType}))
	}
	return errs
}

// ValidateDaemonSetStatus checks a DaemonSet's status counters.
func ValidateDaemonSetStatus(s, old *appsv1.DaemonSetStatus) field.ErrorList {
	errs := replicaCounts([]counter{
		{"currentNumberScheduled", s.CurrentNumberScheduled}, {"numberMisscheduled", s.NumberMisscheduled},
		{"desiredNumberScheduled", s.DesiredNumberScheduled}, {"numberReady", s.NumberReady},
		{"updatedNumberScheduled", s.UpdatedNumberScheduled}, {"numberAvailable", s.NumberAvailable},
		{"numberUnavailable", s.NumberUnavailable},
	})
	errs = append(errs, vu.NonNegative(s.ObservedGeneration, statusPath.Child("observedGeneration"))...)
	return append(errs, collisionCount(s.CollisionCount, old.CollisionCount)...)
}

// ValidateControllerRevision checks a ControllerRevision: data is required and revision >= 0.
func ValidateControllerRevision(cr *appsv1.ControllerRevision) field.ErrorList {
	var errs field.ErrorList
	if cr.Data.Raw == nil && cr.Data.Object == nil {
		errs = append(errs, field.Required(field.NewPath("data"), "data is mandatory"))
	}
	return append(errs, vu.NonNegative(cr.Revision, field.NewPath("revision"))...)
}
