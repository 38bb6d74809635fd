package admissionregistration

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/skiff-sh/skiff/internal/registry"
	vu "github.com/skiff-sh/skiff/internal/registry/validationutil"
)

// category is what kubectl get api-extensions lists.
var category = []string{"api-extensions"}

// Resources returns the admissionregistration.k8s.io/v1 resources, all cluster-scoped.
func Resources() []*registry.Resource {
	gv := admissionregistrationv1.SchemeGroupVersion
	apiVersion := gv.String()
	type vap = *admissionregistrationv1.ValidatingAdmissionPolicy
	cel := mustCompiler()
	return []*registry.Resource{
		{
			GroupVersion: gv, Kind: "MutatingWebhookConfiguration", ListKind: "MutatingWebhookConfigurationList",
			Plural: "mutatingwebhookconfigurations", Singular: "mutatingwebhookconfiguration", Categories: category,
			New:     func() runtime.Object { return &admissionregistrationv1.MutatingWebhookConfiguration{} },
			NewList: func() runtime.Object { return &admissionregistrationv1.MutatingWebhookConfigurationList{} },
			Strategy: &vu.Strategy[*admissionregistrationv1.MutatingWebhookConfiguration]{
				// Kubernetes counts changes of the webhooks in metadata.generation.
				SpecEqual: func(c, old *admissionregistrationv1.MutatingWebhookConfiguration) bool {
					return apiequality.Semantic.DeepEqual(c.Webhooks, old.Webhooks)
				},
				ValidateObject: func(c *admissionregistrationv1.MutatingWebhookConfiguration) field.ErrorList {
					errs := ValidateMutatingWebhookConfiguration(c)
					for i, w := range c.Webhooks {
						errs = append(errs, cel.MatchConditions(w.MatchConditions, field.NewPath("webhooks").Index(i).Child("matchConditions"))...)
					}
					return errs
				},
				UnconditionalUpdate: true,
			},
		},
		{
			GroupVersion: gv, Kind: "ValidatingWebhookConfiguration", ListKind: "ValidatingWebhookConfigurationList",
			Plural: "validatingwebhookconfigurations", Singular: "validatingwebhookconfiguration", Categories: category,
			New:     func() runtime.Object { return &admissionregistrationv1.ValidatingWebhookConfiguration{} },
			NewList: func() runtime.Object { return &admissionregistrationv1.ValidatingWebhookConfigurationList{} },
			Strategy: &vu.Strategy[*admissionregistrationv1.ValidatingWebhookConfiguration]{
				SpecEqual: func(c, old *admissionregistrationv1.ValidatingWebhookConfiguration) bool {
					return apiequality.Semantic.DeepEqual(c.Webhooks, old.Webhooks)
				},
				ValidateObject: func(c *admissionregistrationv1.ValidatingWebhookConfiguration) field.ErrorList {
					errs := ValidateValidatingWebhookConfiguration(c)
					for i, w := range c.Webhooks {
						errs = append(errs, cel.MatchConditions(w.MatchConditions, field.NewPath("webhooks").Index(i).Child("matchConditions"))...)
					}
					return errs
				},
				UnconditionalUpdate: true,
			},
		},
		{
			GroupVersion: gv, Kind: "ValidatingAdmissionPolicy", ListKind: "ValidatingAdmissionPolicyList",
			Plural: "validatingadmissionpolicies", Singular: "validatingadmissionpolicy", Categories: category,
			New:     func() runtime.Object { return &admissionregistrationv1.ValidatingAdmissionPolicy{} },
			NewList: func() runtime.Object { return &admissionregistrationv1.ValidatingAdmissionPolicyList{} },
			Strategy: &vu.Strategy[vap]{
				APIVersion:  apiVersion,
				ClearStatus: func(p vap) { p.Status = admissionregistrationv1.ValidatingAdmissionPolicyStatus{} },
				KeepStatus:  func(p, old vap) { p.Status = old.Status },
				SpecEqual: func(p, old vap) bool {
					return apiequality.Semantic.DeepEqual(p.Spec, old.Spec)
				},
				ValidateObject: func(p vap) field.ErrorList {
					return append(ValidateValidatingAdmissionPolicy(p), cel.Policy(p)...)
				},
				UnconditionalUpdate: true,
			},
			Status: &vu.StatusStrategy[vap]{
				APIVersion: apiVersion,
				Metadata:   vu.StatusResetsMetadata,
				KeepSpec:   func(p, old vap) { p.Spec = old.Spec },
				ValidateStatus: func(p, _ vap) field.ErrorList {
					return validatePolicyStatus(&p.Status)
				},
			},
		},
		{
			GroupVersion: gv, Kind: "ValidatingAdmissionPolicyBinding", ListKind: "ValidatingAdmissionPolicyBindingList",
			Plural: "validatingadmissionpolicybindings", Singular: "validatingadmissionpolicybinding", Categories: category,
			New:     func() runtime.Object { return &admissionregistrationv1.ValidatingAdmissionPolicyBinding{} },
			NewList: func() runtime.Object { return &admissionregistrationv1.ValidatingAdmissionPolicyBindingList{} },
			Strategy: &vu.Strategy[*admissionregistrationv1.ValidatingAdmissionPolicyBinding]{
				SpecEqual: func(b, old *admissionregistrationv1.ValidatingAdmissionPolicyBinding) bool {
					return apiequality.Semantic.DeepEqual(b.Spec, old.Spec)
				},
				ValidateObject:      ValidateValidatingAdmissionPolicyBinding,
				UnconditionalUpdate: true,
			},
		},
	}
}

// validatePolicyStatus checks the type-checking warnings' field references are present.
func validatePolicyStatus(s *admissionregistrationv1.ValidatingAdmissionPolicyStatus) field.ErrorList {
	var errs field.ErrorList
	if s.TypeChecking == nil {
		return nil
	}
	for i, w := range s.TypeChecking.ExpressionWarnings {
		p := field.NewPath("status", "typeChecking", "expressionWarnings").Index(i)
		if w.FieldRef == "" {
			errs = append(errs, field.Required(p.Child("fieldRef"), ""))
		}
		if w.Warning == "" {
			errs = append(errs, field.Required(p.Child("warning"), ""))
		}
	}
	return errs
}
