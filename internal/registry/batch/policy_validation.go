package batch

import (
	"fmt"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	vu "github.com/skiff-sh/skiff/internal/registry/validationutil"
)

var (
	podFailurePolicyActions = sets.New(batchv1.PodFailurePolicyActionCount, batchv1.PodFailurePolicyActionFailIndex,
		batchv1.PodFailurePolicyActionFailJob, batchv1.PodFailurePolicyActionIgnore)
	onExitCodesOperators    = sets.New(batchv1.PodFailurePolicyOnExitCodesOpIn, batchv1.PodFailurePolicyOnExitCodesOpNotIn)
	onPodConditionsStatuses = sets.New(corev1.ConditionFalse, corev1.ConditionTrue, corev1.ConditionUnknown)
)

// validateIndexedLimits holds the bounds of an Indexed Job: completions are required, and
// parallelism and maxFailedIndexes are capped (more tightly with backoffLimitPerIndex past
// completionsSoftLimit completions).
func validateIndexedLimits(spec *batchv1.JobSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	mode := batchv1.IndexedCompletion
	if spec.Completions == nil {
		errs = append(errs, field.Required(fldPath.Child("completions"), fmt.Sprintf("when completion mode is %s", mode)))
	}
	if spec.Parallelism != nil && *spec.Parallelism > maxIndexedParallelism {
		errs = append(errs, field.Invalid(fldPath.Child("parallelism"), *spec.Parallelism, fmt.Sprintf("must be less than or equal to %d when completion mode is %s", maxIndexedParallelism, mode)))
	}
	if spec.Completions != nil && spec.MaxFailedIndexes != nil && *spec.MaxFailedIndexes > *spec.Completions {
		errs = append(errs, field.Invalid(fldPath.Child("maxFailedIndexes"), *spec.MaxFailedIndexes, "must be less than or equal to completions"))
	}
	if spec.MaxFailedIndexes != nil && *spec.MaxFailedIndexes > maxFailedIndexes {
		errs = append(errs, field.Invalid(fldPath.Child("maxFailedIndexes"), *spec.MaxFailedIndexes, fmt.Sprintf("must be less than or equal to %d", maxFailedIndexes)))
	}
	if spec.Completions != nil && *spec.Completions > completionsSoftLimit && spec.BackoffLimitPerIndex != nil {
		if spec.MaxFailedIndexes == nil {
			errs = append(errs, field.Required(fldPath.Child("maxFailedIndexes"), fmt.Sprintf("must be specified when completions is above %d", completionsSoftLimit)))
		}
		if spec.Parallelism != nil && *spec.Parallelism > parallelismLimitForHighCompletions {
			errs = append(errs, field.Invalid(fldPath.Child("parallelism"), *spec.Parallelism, fmt.Sprintf("must be less than or equal to %d when completions are above %d and used with backoff limit per index", parallelismLimitForHighCompletions, completionsSoftLimit)))
		}
		if spec.MaxFailedIndexes != nil && *spec.MaxFailedIndexes > maxFailedIndexesLimitForHighCompletions {
			errs = append(errs, field.Invalid(fldPath.Child("maxFailedIndexes"), *spec.MaxFailedIndexes, fmt.Sprintf("must be less than or equal to %d when completions are above %d and used with backoff limit per index", maxFailedIndexesLimitForHighCompletions, completionsSoftLimit)))
		}
	}
	return errs
}

func validatePodFailurePolicy(spec *batchv1.JobSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	rulesPath := fldPath.Child("rules")
	rules := spec.PodFailurePolicy.Rules
	if len(rules) > maxPodFailurePolicyRules {
		errs = append(errs, field.TooMany(rulesPath, len(rules), maxPodFailurePolicyRules))
	}
	containers := sets.New[string]()
	for _, c := range spec.Template.Spec.Containers {
		containers.Insert(c.Name)
	}
	for _, c := range spec.Template.Spec.InitContainers {
		containers.Insert(c.Name)
	}
	for i := range rules {
		errs = append(errs, validatePodFailurePolicyRule(spec, &rules[i], rulesPath.Index(i), containers)...)
	}
	return errs
}

func validatePodFailurePolicyRule(spec *batchv1.JobSpec, rule *batchv1.PodFailurePolicyRule, rulePath *field.Path, containers sets.Set[string]) field.ErrorList {
	var errs field.ErrorList
	actionPath := rulePath.Child("action")
	switch {
	case rule.Action == "":
		errs = append(errs, field.Required(actionPath, fmt.Sprintf("valid values: %q", sets.List(podFailurePolicyActions))))
	case rule.Action == batchv1.PodFailurePolicyActionFailIndex:
		// An index can only fail on its own when indexes have their own backoff limit.
		if spec.BackoffLimitPerIndex == nil {
			errs = append(errs, field.Invalid(actionPath, rule.Action, "requires the backoffLimitPerIndex to be set"))
		}
	case !podFailurePolicyActions.Has(rule.Action):
		errs = append(errs, field.NotSupported(actionPath, rule.Action, sets.List(podFailurePolicyActions)))
	}
	if rule.OnExitCodes != nil {
		errs = append(errs, validateOnExitCodes(rule.OnExitCodes, rulePath.Child("onExitCodes"), containers)...)
	}
	if len(rule.OnPodConditions) > 0 {
		errs = append(errs, validateOnPodConditions(rule.OnPodConditions, rulePath.Child("onPodConditions"))...)
	}
	if rule.OnExitCodes != nil && len(rule.OnPodConditions) > 0 {
		errs = append(errs, field.Invalid(rulePath, field.OmitValueType{}, "specifying both OnExitCodes and OnPodConditions is not supported"))
	}
	if rule.OnExitCodes == nil && len(rule.OnPodConditions) == 0 {
		errs = append(errs, field.Invalid(rulePath, field.OmitValueType{}, "specifying one of OnExitCodes and OnPodConditions is required"))
	}
	return errs
}

func validateOnExitCodes(req *batchv1.PodFailurePolicyOnExitCodesRequirement, fldPath *field.Path, containers sets.Set[string]) field.ErrorList {
	var errs field.ErrorList
	opPath := fldPath.Child("operator")
	if req.Operator == "" {
		errs = append(errs, field.Required(opPath, fmt.Sprintf("valid values: %q", sets.List(onExitCodesOperators))))
	} else if !onExitCodesOperators.Has(req.Operator) {
		errs = append(errs, field.NotSupported(opPath, req.Operator, sets.List(onExitCodesOperators)))
	}
	if req.ContainerName != nil && !containers.Has(*req.ContainerName) {
		errs = append(errs, field.Invalid(fldPath.Child("containerName"), *req.ContainerName, "must be one of the container or initContainer names in the pod template"))
	}
	valuesPath := fldPath.Child("values")
	if len(req.Values) == 0 {
		errs = append(errs, field.Invalid(valuesPath, req.Values, "at least one value is required"))
	} else if len(req.Values) > maxOnExitCodesValues {
		errs = append(errs, field.TooMany(valuesPath, len(req.Values), maxOnExitCodesValues))
	}
	ordered := true
	seen := sets.New[int32]()
	for i, v := range req.Values {
		if req.Operator == batchv1.PodFailurePolicyOnExitCodesOpIn && v == 0 {
			errs = append(errs, field.Invalid(valuesPath.Index(i), v, "must not be 0 for the In operator"))
		}
		if seen.Has(v) {
			errs = append(errs, field.Duplicate(valuesPath.Index(i), v))
		}
		seen.Insert(v)
		if i > 0 && req.Values[i-1] > v {
			ordered = false
		}
	}
	if !ordered {
		errs = append(errs, field.Invalid(valuesPath, req.Values, "must be ordered"))
	}
	return errs
}

func validateOnPodConditions(patterns []batchv1.PodFailurePolicyOnPodConditionsPattern, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(patterns) > maxOnPodConditionsPatterns {
		errs = append(errs, field.TooMany(fldPath, len(patterns), maxOnPodConditionsPatterns))
	}
	for i, p := range patterns {
		pPath := fldPath.Index(i)
		errs = append(errs, vu.QualifiedName(string(p.Type), pPath.Child("type"))...)
		statusPath := pPath.Child("status")
		if p.Status == "" {
			errs = append(errs, field.Required(statusPath, fmt.Sprintf("valid values: %q", sets.List(onPodConditionsStatuses))))
		} else if !onPodConditionsStatuses.Has(p.Status) {
			errs = append(errs, field.NotSupported(statusPath, p.Status, sets.List(onPodConditionsStatuses)))
		}
	}
	return errs
}

func validateSuccessPolicy(spec *batchv1.JobSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	rulesPath := fldPath.Child("rules")
	rules := spec.SuccessPolicy.Rules
	if len(rules) == 0 {
		errs = append(errs, field.Required(rulesPath, "at least one rules must be specified when the successPolicy is specified"))
	}
	if len(rules) > maxSuccessPolicyRules {
		errs = append(errs, field.TooMany(rulesPath, len(rules), maxSuccessPolicyRules))
	}
	if spec.Completions == nil {
		// Reported as required by validateIndexedLimits; the rules cannot be checked without it.
		return errs
	}
	completions := *spec.Completions
	for i, rule := range rules {
		rulePath := rulesPath.Index(i)
		if rule.SucceededCount == nil && rule.SucceededIndexes == nil {
			errs = append(errs, field.Required(rulePath, "at least one of succeededCount or succeededIndexes must be specified"))
		}
		var total int32
		if rule.SucceededIndexes != nil {
			idxPath := rulePath.Child("succeededIndexes")
			if len(*rule.SucceededIndexes) > maxSuccessPolicyIndexesLength {
				errs = append(errs, field.TooLong(idxPath, *rule.SucceededIndexes, maxSuccessPolicyIndexesLength))
			}
			var err error
			if total, err = countIndexes(*rule.SucceededIndexes, completions); err != nil {
				errs = append(errs, field.Invalid(idxPath, *rule.SucceededIndexes, fmt.Sprintf("error parsing succeededIndexes: %s", err.Error())))
			}
		}
		if rule.SucceededCount != nil {
			countPath := rulePath.Child("succeededCount")
			errs = append(errs, vu.NonNegative(*rule.SucceededCount, countPath)...)
			if *rule.SucceededCount > completions {
				errs = append(errs, field.Invalid(countPath, *rule.SucceededCount, fmt.Sprintf("must be less than or equal to %d (the number of specified completions)", completions)))
			}
			if rule.SucceededIndexes != nil && *rule.SucceededCount > total {
				errs = append(errs, field.Invalid(countPath, *rule.SucceededCount, fmt.Sprintf("must be less than or equal to %d (the number of indexes in the specified succeededIndexes field)", total)))
			}
		}
	}
	return errs
}

// countIndexes checks an index list ("1,3-5,7": increasing, each below completions, a range
// strictly increasing) and returns how many indexes it holds.
func countIndexes(s string, completions int32) (int32, error) {
	if s == "" {
		return 0, nil
	}
	var total int32
	last := int32(-1)
	for _, part := range strings.Split(s, ",") {
		bounds := strings.Split(part, "-")
		if len(bounds) > 2 {
			return 0, fmt.Errorf("the fragment %q violates the requirement that an index interval can have at most two parts separated by '-'", part)
		}
		var vals [2]int32
		for i, b := range bounds {
			v, err := strconv.Atoi(b)
			if err != nil {
				return 0, fmt.Errorf("cannot convert string to integer for index: %q", b)
			}
			if v >= int(completions) {
				return 0, fmt.Errorf("too large index: %q", b)
			}
			vals[i] = int32(v)
		}
		first, end := vals[0], vals[0]
		if len(bounds) == 2 {
			if vals[0] >= vals[1] {
				return 0, fmt.Errorf("non-increasing order, previous: %d, current: %d", vals[0], vals[1])
			}
			end = vals[1]
		}
		if last >= first {
			return 0, fmt.Errorf("non-increasing order, previous: %d, current: %d", last, first)
		}
		total += end - first + 1
		last = end
	}
	return total, nil
}
