package policy

import (
	"fmt"

	policyv1 "k8s.io/api/policy/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/skiff-sh/skiff/internal/registry"
	vu "github.com/skiff-sh/skiff/internal/registry/validationutil"
)

var unhealthyPodEvictionPolicies = []policyv1.UnhealthyPodEvictionPolicyType{policyv1.AlwaysAllow, policyv1.IfHealthyBudget}

// Resources returns the policy/v1 resources.
func Resources() []*registry.Resource {
	return []*registry.Resource{{
		GroupVersion: policyv1.SchemeGroupVersion, Kind: "PodDisruptionBudget", ListKind: "PodDisruptionBudgetList",
		Plural: "poddisruptionbudgets", Singular: "poddisruptionbudget", ShortNames: []string{"pdb"}, Namespaced: true,
		New:     func() runtime.Object { return &policyv1.PodDisruptionBudget{} },
		NewList: func() runtime.Object { return &policyv1.PodDisruptionBudgetList{} },
		Strategy: &vu.Strategy[*policyv1.PodDisruptionBudget]{
			APIVersion:  policyv1.SchemeGroupVersion.String(),
			Namespaced:  true,
			ClearStatus: func(p *policyv1.PodDisruptionBudget) { p.Status = policyv1.PodDisruptionBudgetStatus{} },
			KeepStatus:  func(p, old *policyv1.PodDisruptionBudget) { p.Status = old.Status },
			SpecEqual: func(p, old *policyv1.PodDisruptionBudget) bool {
				return apiequality.Semantic.DeepEqual(p.Spec, old.Spec)
			},
			ValidateObject: func(p *policyv1.PodDisruptionBudget) field.ErrorList {
				return ValidatePodDisruptionBudgetSpec(&p.Spec, field.NewPath("spec"))
			},
			UnconditionalUpdate: true,
		},
		Status: &vu.StatusStrategy[*policyv1.PodDisruptionBudget]{
			APIVersion: policyv1.SchemeGroupVersion.String(),
			KeepSpec:   func(p, old *policyv1.PodDisruptionBudget) { p.Spec = old.Spec },
			ValidateStatus: func(p, _ *policyv1.PodDisruptionBudget) field.ErrorList {
				return ValidatePodDisruptionBudgetStatus(&p.Status, field.NewPath("status"))
			},
		},
	}}
}

// RegisterDefaults exists for symmetry with the other groups: policy/v1 sets no defaults.
func RegisterDefaults(s *runtime.Scheme) error {
	if s == nil {
		return fmt.Errorf("register policy/v1 defaults: nil scheme")
	}
	return nil
}

// ValidatePodDisruptionBudgetSpec checks that at most one of minAvailable and maxUnavailable is set,
// each a non-negative integer or a percentage up to 100%, the selector and the eviction policy.
func ValidatePodDisruptionBudgetSpec(spec *policyv1.PodDisruptionBudgetSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if spec.MinAvailable != nil && spec.MaxUnavailable != nil {
		errs = append(errs, field.Invalid(fldPath, spec, "minAvailable and maxUnavailable cannot be both set"))
	}
	if spec.MinAvailable != nil {
		errs = append(errs, vu.NonNegativeIntOrPercent(*spec.MinAvailable, fldPath.Child("minAvailable"))...)
		errs = append(errs, vu.NotMoreThan100Percent(*spec.MinAvailable, fldPath.Child("minAvailable"))...)
	}
	if spec.MaxUnavailable != nil {
		errs = append(errs, vu.NonNegativeIntOrPercent(*spec.MaxUnavailable, fldPath.Child("maxUnavailable"))...)
		errs = append(errs, vu.NotMoreThan100Percent(*spec.MaxUnavailable, fldPath.Child("maxUnavailable"))...)
	}
	errs = append(errs, metav1validation.ValidateLabelSelector(spec.Selector, metav1validation.LabelSelectorValidationOptions{}, fldPath.Child("selector"))...)
	if p := spec.UnhealthyPodEvictionPolicy; p != nil && *p != policyv1.AlwaysAllow && *p != policyv1.IfHealthyBudget {
		errs = append(errs, field.NotSupported(fldPath.Child("unhealthyPodEvictionPolicy"), *p, unhealthyPodEvictionPolicies))
	}
	return errs
}

// ValidatePodDisruptionBudgetStatus checks the conditions and the non-negative counters.
func ValidatePodDisruptionBudgetStatus(s *policyv1.PodDisruptionBudgetStatus, fldPath *field.Path) field.ErrorList {
	errs := metav1validation.ValidateConditions(s.Conditions, fldPath.Child("conditions"))
	errs = append(errs, vu.NonNegative(s.DisruptionsAllowed, fldPath.Child("disruptionsAllowed"))...)
	errs = append(errs, vu.NonNegative(s.CurrentHealthy, fldPath.Child("currentHealthy"))...)
	errs = append(errs, vu.NonNegative(s.DesiredHealthy, fldPath.Child("desiredHealthy"))...)
	return append(errs, vu.NonNegative(s.ExpectedPods, fldPath.Child("expectedPods"))...)
}
