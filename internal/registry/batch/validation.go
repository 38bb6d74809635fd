package batch

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	vu "github.com/skiff-sh/skiff/internal/registry/validationutil"
)

// Labels Kubernetes puts on a Job's pods when it generates the selector; the unprefixed pair is
// kept for compatibility with older clients.
const (
	legacyControllerUIDLabel = "controller-uid"
	legacyJobNameLabel       = "job-name"

	// Indexed jobs are capped so the controller's per-index bookkeeping (and the length of
	// status.completedIndexes and failedIndexes) stays bounded. Past completionsSoftLimit, a Job
	// with backoffLimitPerIndex must bound its failed indexes and parallelism more tightly.
	maxIndexedParallelism                   = 100_000
	maxFailedIndexes                        = 100_000
	completionsSoftLimit                    = 100_000
	parallelismLimitForHighCompletions      = 10_000
	maxFailedIndexesLimitForHighCompletions = 10_000

	// Limits of podFailurePolicy and successPolicy, as in Kubernetes.
	maxPodFailurePolicyRules      = 20
	maxOnExitCodesValues          = 255
	maxOnPodConditionsPatterns    = 20
	maxSuccessPolicyRules         = 20
	maxSuccessPolicyIndexesLength = 64 * 1024

	// The CronJob controller appends "-<11 digits>" to the name of each Job it creates.
	maxCronJobNameLength = validation.DNS1035LabelMaxLength - 11
)

var (
	specPath = field.NewPath("spec")
	// A time zone path component, following the IANA naming rules (digits and '+' are tolerated
	// for legacy names).
	timeZoneComponent = regexp.MustCompile(`^[A-Za-z.\-_0-9+]{1,14}$`)
)

// GenerateSelector gives a Job without manualSelector the selector batch.kubernetes.io/controller-uid=<uid>
// and adds the controller-uid and job-name labels (prefixed and legacy) to its template. metadata.uid
// must already be set. Labels the user set to other values are left alone, so validation reports them.
func GenerateSelector(j *batchv1.Job) {
	if j.Spec.ManualSelector != nil && *j.Spec.ManualSelector {
		return
	}
	uid := string(j.UID)
	if j.Spec.Template.Labels == nil {
		j.Spec.Template.Labels = map[string]string{}
	}
	for k, v := range map[string]string{
		legacyControllerUIDLabel:   uid,
		batchv1.ControllerUidLabel: uid,
		legacyJobNameLabel:         j.Name,
		batchv1.JobNameLabel:       j.Name,
	} {
		if _, set := j.Spec.Template.Labels[k]; !set {
			j.Spec.Template.Labels[k] = v
		}
	}
	if j.Spec.Selector == nil {
		j.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{batchv1.ControllerUidLabel: uid}}
	}
}

// prepareJobForCreate generates the selector, and, as Kubernetes shows on a created Job, gives the
// Job its template's labels when it has none of its own.
func prepareJobForCreate(_ context.Context, j *batchv1.Job) {
	j.Status = batchv1.JobStatus{}
	GenerateSelector(j)
	if len(j.Labels) == 0 && len(j.Spec.Template.Labels) > 0 {
		j.Labels = make(map[string]string, len(j.Spec.Template.Labels))
		for k, v := range j.Spec.Template.Labels {
			j.Labels[k] = v
		}
	}
}

// ValidateJob checks a Job: the generated selector, the spec and the indexed pod hostnames.
func ValidateJob(j *batchv1.Job, pod vu.PodTemplate) field.ErrorList {
	errs := validateGeneratedSelector(j)
	errs = append(errs, validateJobSpec(&j.Spec, specPath, pod)...)
	if j.Spec.Selector == nil {
		errs = append(errs, field.Required(specPath.Child("selector"), ""))
	} else {
		errs = append(errs, metav1validation.ValidateLabelSelector(j.Spec.Selector, metav1validation.LabelSelectorValidationOptions{}, specPath.Child("selector"))...)
		if sel, err := metav1.LabelSelectorAsSelector(j.Spec.Selector); err == nil && !sel.Matches(labels.Set(j.Spec.Template.Labels)) {
			errs = append(errs, field.Invalid(specPath.Child("template", "metadata", "labels"), j.Spec.Template.Labels, vu.SelectorMismatchMsg))
		}
	}
	if isIndexed(&j.Spec) && j.Spec.Completions != nil && *j.Spec.Completions > 0 {
		// The controller names pods' hostnames <job>-<index>; the largest index must still be a DNS label.
		host := fmt.Sprintf("%s-%d", j.Name, *j.Spec.Completions-1)
		if len(validation.IsDNS1123Label(host)) > 0 {
			errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), j.Name, fmt.Sprintf("will not able to create pod with invalid DNS label: %s", host)))
		}
	}
	return errs
}

func isIndexed(spec *batchv1.JobSpec) bool {
	return spec.CompletionMode != nil && *spec.CompletionMode == batchv1.IndexedCompletion
}

func validateGeneratedSelector(j *batchv1.Job) field.ErrorList {
	if (j.Spec.ManualSelector != nil && *j.Spec.ManualSelector) || j.Spec.Selector == nil {
		return nil
	}
	var errs field.ErrorList
	if j.UID == "" {
		errs = append(errs, field.Required(field.NewPath("metadata", "uid"), ""))
	}
	tmplLabels := specPath.Child("template", "metadata", "labels")
	for _, l := range []struct{ key, value string }{{legacyControllerUIDLabel, string(j.UID)}, {legacyJobNameLabel, j.Name}} {
		got, ok := j.Spec.Template.Labels[l.key]
		switch {
		case !ok:
			errs = append(errs, field.Required(tmplLabels.Key(l.key), fmt.Sprintf("must be '%s'", l.value)))
		case got != l.value:
			errs = append(errs, field.Invalid(tmplLabels.Key(l.key), got, fmt.Sprintf("must be '%s'", l.value)))
		}
	}
	sel, err := metav1.LabelSelectorAsSelector(j.Spec.Selector)
	if err != nil {
		return append(errs, field.Invalid(specPath.Child("selector"), j.Spec.Selector, "invalid label selector"))
	}
	if !sel.Matches(labels.Set{batchv1.ControllerUidLabel: string(j.UID)}) {
		errs = append(errs, field.Invalid(specPath.Child("selector"), j.Spec.Selector, "`selector` not auto-generated"))
	}
	return errs
}

// validateJobSpec holds the rules a Job and a CronJob's job template share.
// maxManagedByLength bounds spec.managedBy, as Kubernetes does.
const maxManagedByLength = 63

func validateJobSpec(spec *batchv1.JobSpec, fldPath *field.Path, pod vu.PodTemplate) field.ErrorList {
	var errs field.ErrorList
	optionalNonNegative := func(name string, v *int32) {
		if v != nil {
			errs = append(errs, vu.NonNegative(*v, fldPath.Child(name))...)
		}
	}
	optionalNonNegative("parallelism", spec.Parallelism)
	optionalNonNegative("completions", spec.Completions)
	optionalNonNegative("backoffLimit", spec.BackoffLimit)
	optionalNonNegative("ttlSecondsAfterFinished", spec.TTLSecondsAfterFinished)
	optionalNonNegative("backoffLimitPerIndex", spec.BackoffLimitPerIndex)
	optionalNonNegative("maxFailedIndexes", spec.MaxFailedIndexes)
	if spec.ActiveDeadlineSeconds != nil {
		errs = append(errs, vu.NonNegative(*spec.ActiveDeadlineSeconds, fldPath.Child("activeDeadlineSeconds"))...)
	}
	if spec.ManagedBy != nil {
		p := fldPath.Child("managedBy")
		errs = append(errs, validation.IsDomainPrefixedPath(p, *spec.ManagedBy)...)
		if len(*spec.ManagedBy) > maxManagedByLength {
			errs = append(errs, field.TooLong(p, "", maxManagedByLength))
		}
	}
	if spec.MaxFailedIndexes != nil && spec.BackoffLimitPerIndex == nil {
		errs = append(errs, field.Required(fldPath.Child("backoffLimitPerIndex"), "when maxFailedIndexes is specified"))
	}
	if spec.CompletionMode != nil {
		switch *spec.CompletionMode {
		case batchv1.NonIndexedCompletion:
		case batchv1.IndexedCompletion:
			errs = append(errs, validateIndexedLimits(spec, fldPath)...)
		default:
			errs = append(errs, field.NotSupported(fldPath.Child("completionMode"), *spec.CompletionMode, []batchv1.CompletionMode{batchv1.NonIndexedCompletion, batchv1.IndexedCompletion}))
		}
	}
	if !isIndexed(spec) {
		if spec.BackoffLimitPerIndex != nil {
			errs = append(errs, field.Invalid(fldPath.Child("backoffLimitPerIndex"), *spec.BackoffLimitPerIndex, "requires indexed completion mode"))
		}
		if spec.MaxFailedIndexes != nil {
			errs = append(errs, field.Invalid(fldPath.Child("maxFailedIndexes"), *spec.MaxFailedIndexes, "requires indexed completion mode"))
		}
	}
	if spec.PodFailurePolicy != nil {
		errs = append(errs, validatePodFailurePolicy(spec, fldPath.Child("podFailurePolicy"))...)
	}
	if spec.SuccessPolicy != nil {
		if !isIndexed(spec) {
			errs = append(errs, field.Invalid(fldPath.Child("successPolicy"), *spec.SuccessPolicy, "requires indexed completion mode"))
		} else {
			errs = append(errs, validateSuccessPolicy(spec, fldPath.Child("successPolicy"))...)
		}
	}
	if spec.PodReplacementPolicy != nil {
		p := fldPath.Child("podReplacementPolicy")
		switch *spec.PodReplacementPolicy {
		case batchv1.Failed:
		case batchv1.TerminatingOrFailed:
			if spec.PodFailurePolicy != nil {
				errs = append(errs, field.NotSupported(p, *spec.PodReplacementPolicy, []batchv1.PodReplacementPolicy{batchv1.Failed}))
			}
		default:
			errs = append(errs, field.NotSupported(p, *spec.PodReplacementPolicy, []batchv1.PodReplacementPolicy{batchv1.TerminatingOrFailed, batchv1.Failed}))
		}
	}
	tmplPath := fldPath.Child("template")
	errs = append(errs, pod.ValidateTemplate(&spec.Template, tmplPath)...)
	rp := spec.Template.Spec.RestartPolicy
	if rp != corev1.RestartPolicyOnFailure && rp != corev1.RestartPolicyNever {
		errs = append(errs, field.NotSupported(tmplPath.Child("spec", "restartPolicy"), rp, []corev1.RestartPolicy{corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever}))
	} else if spec.PodFailurePolicy != nil && rp != corev1.RestartPolicyNever {
		errs = append(errs, field.Invalid(tmplPath.Child("spec", "restartPolicy"), rp, fmt.Sprintf("only %q is supported when podFailurePolicy is specified", corev1.RestartPolicyNever)))
	}
	return errs
}

// validateJobChange holds what may not change after a Job is created. The pod template may change
// only while the Job is suspended (Kubernetes narrows this further to scheduling directives of a
// Job that never started).
func validateJobChange(j, old *batchv1.Job) field.ErrorList {
	errs := vu.Immutable(j.Spec.Selector, old.Spec.Selector, specPath.Child("selector"))
	errs = append(errs, vu.Immutable(j.Spec.ManualSelector, old.Spec.ManualSelector, specPath.Child("manualSelector"))...)
	errs = append(errs, vu.Immutable(j.Spec.CompletionMode, old.Spec.CompletionMode, specPath.Child("completionMode"))...)
	errs = append(errs, vu.Immutable(j.Spec.PodFailurePolicy, old.Spec.PodFailurePolicy, specPath.Child("podFailurePolicy"))...)
	errs = append(errs, vu.Immutable(j.Spec.BackoffLimitPerIndex, old.Spec.BackoffLimitPerIndex, specPath.Child("backoffLimitPerIndex"))...)
	errs = append(errs, vu.Immutable(j.Spec.SuccessPolicy, old.Spec.SuccessPolicy, specPath.Child("successPolicy"))...)
	errs = append(errs, vu.Immutable(j.Spec.ManagedBy, old.Spec.ManagedBy, specPath.Child("managedBy"))...)
	// Indexed jobs may scale elastically: completions follow parallelism.
	elastic := isIndexed(&j.Spec) && j.Spec.Completions != nil && j.Spec.Parallelism != nil && *j.Spec.Completions == *j.Spec.Parallelism
	if !elastic {
		errs = append(errs, vu.Immutable(j.Spec.Completions, old.Spec.Completions, specPath.Child("completions"))...)
	}
	if old.Spec.Suspend == nil || !*old.Spec.Suspend {
		errs = append(errs, vu.Immutable(j.Spec.Template, old.Spec.Template, specPath.Child("template"))...)
	}
	return errs
}

// ValidateJobStatus checks a Job's status counters.
func ValidateJobStatus(s *batchv1.JobStatus) field.ErrorList {
	p := field.NewPath("status")
	errs := vu.NonNegative(s.Active, p.Child("active"))
	errs = append(errs, vu.NonNegative(s.Succeeded, p.Child("succeeded"))...)
	errs = append(errs, vu.NonNegative(s.Failed, p.Child("failed"))...)
	if s.Ready != nil {
		errs = append(errs, vu.NonNegative(*s.Ready, p.Child("ready"))...)
	}
	if s.Terminating != nil {
		errs = append(errs, vu.NonNegative(*s.Terminating, p.Child("terminating"))...)
	}
	if s.StartTime != nil && s.CompletionTime != nil && s.CompletionTime.Before(s.StartTime) {
		errs = append(errs, field.Invalid(p.Child("completionTime"), s.CompletionTime, "completionTime cannot be set before startTime"))
	}
	return errs
}

// ValidateCronJob checks a CronJob; old is nil on create. A TZ or CRON_TZ prefix in the schedule is
// refused, except on an update of a CronJob that already had one (kept for old objects).
func ValidateCronJob(cj, old *batchv1.CronJob, pod vu.PodTemplate) field.ErrorList {
	var errs field.ErrorList
	if old == nil && len(cj.Name) > maxCronJobNameLength {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), cj.Name, fmt.Sprintf("must be no more than %d characters", maxCronJobNameLength)))
	}
	spec := &cj.Spec
	if spec.Schedule == "" {
		errs = append(errs, field.Required(specPath.Child("schedule"), ""))
	} else {
		allowTZ := old != nil && strings.Contains(old.Spec.Schedule, "TZ")
		errs = append(errs, validateSchedule(spec.Schedule, allowTZ, spec.TimeZone, specPath.Child("schedule"))...)
	}
	if spec.StartingDeadlineSeconds != nil {
		errs = append(errs, vu.NonNegative(*spec.StartingDeadlineSeconds, specPath.Child("startingDeadlineSeconds"))...)
	}
	if old == nil || !equalStringPtr(old.Spec.TimeZone, spec.TimeZone) {
		errs = append(errs, validateTimeZone(spec.TimeZone, specPath.Child("timeZone"))...)
	}
	switch spec.ConcurrencyPolicy {
	case batchv1.AllowConcurrent, batchv1.ForbidConcurrent, batchv1.ReplaceConcurrent:
	case "":
		errs = append(errs, field.Required(specPath.Child("concurrencyPolicy"), ""))
	default:
		errs = append(errs, field.NotSupported(specPath.Child("concurrencyPolicy"), spec.ConcurrencyPolicy,
			[]batchv1.ConcurrencyPolicy{batchv1.AllowConcurrent, batchv1.ForbidConcurrent, batchv1.ReplaceConcurrent}))
	}
	jt := specPath.Child("jobTemplate")
	errs = append(errs, metav1validation.ValidateLabels(spec.JobTemplate.Labels, jt.Child("metadata", "labels"))...)
	errs = append(errs, validateJobSpec(&spec.JobTemplate.Spec, jt.Child("spec"), pod)...)
	// The Job controller generates each Job's selector.
	if spec.JobTemplate.Spec.Selector != nil {
		errs = append(errs, field.Invalid(jt.Child("spec", "selector"), spec.JobTemplate.Spec.Selector, "`selector` will be auto-generated"))
	}
	if ms := spec.JobTemplate.Spec.ManualSelector; ms != nil && *ms {
		errs = append(errs, field.NotSupported(jt.Child("spec", "manualSelector"), *ms, []string{"nil", "false"}))
	}
	if spec.SuccessfulJobsHistoryLimit != nil {
		errs = append(errs, vu.NonNegative(*spec.SuccessfulJobsHistoryLimit, specPath.Child("successfulJobsHistoryLimit"))...)
	}
	if spec.FailedJobsHistoryLimit != nil {
		errs = append(errs, vu.NonNegative(*spec.FailedJobsHistoryLimit, specPath.Child("failedJobsHistoryLimit"))...)
	}
	return errs
}

func equalStringPtr(a, b *string) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func validateSchedule(schedule string, allowTZ bool, timeZone *string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if _, err := cron.ParseStandard(schedule); err != nil {
		errs = append(errs, field.Invalid(fldPath, schedule, err.Error()))
	}
	hasTZ := strings.Contains(schedule, "TZ")
	switch {
	case allowTZ && hasTZ && timeZone != nil:
		errs = append(errs, field.Invalid(fldPath, schedule, "cannot use both timeZone field and TZ or CRON_TZ in schedule"))
	case !allowTZ && hasTZ:
		errs = append(errs, field.Invalid(fldPath, schedule, "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"))
	}
	return errs
}

func validateTimeZone(tz *string, fldPath *field.Path) field.ErrorList {
	if tz == nil {
		return nil
	}
	if *tz == "" {
		return field.ErrorList{field.Invalid(fldPath, tz, "timeZone must be nil or non-empty string")}
	}
	for _, part := range strings.Split(*tz, "/") {
		if part == "." || part == ".." || strings.HasPrefix(part, "-") || !timeZoneComponent.MatchString(part) {
			return field.ErrorList{field.Invalid(fldPath, tz, fmt.Sprintf("unknown time zone %s", *tz))}
		}
	}
	var errs field.ErrorList
	if strings.EqualFold(*tz, "Local") {
		errs = append(errs, field.Invalid(fldPath, tz, "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones"))
	}
	if _, err := time.LoadLocation(*tz); err != nil {
		errs = append(errs, field.Invalid(fldPath, tz, err.Error()))
	}
	return errs
}
