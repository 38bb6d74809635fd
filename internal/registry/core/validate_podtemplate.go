package core

import (
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidatePodTemplate checks a PodTemplate object: its metadata and its template as a workload's
// template is checked, at the path "template".
func ValidatePodTemplate(pt *corev1.PodTemplate) field.ErrorList {
	errs := validateObjectMeta(&pt.ObjectMeta, true, apivalidation.NameIsDNSSubdomain)
	return append(errs, ValidatePodTemplateSpec(&pt.Template, field.NewPath("template"))...)
}

// ValidatePodTemplateUpdate checks the metadata change and the new template; the template may
// change freely (it is a template, not a running pod).
func ValidatePodTemplateUpdate(pt, old *corev1.PodTemplate) field.ErrorList {
	errs := validateObjectMetaUpdate(&pt.ObjectMeta, &old.ObjectMeta)
	return append(errs, ValidatePodTemplateSpec(&pt.Template, field.NewPath("template"))...)
}

// newPodTemplateStrategy tracks generation over the template, as Kubernetes does.
func newPodTemplateStrategy() *typedStrategy[*corev1.PodTemplate] {
	return &typedStrategy[*corev1.PodTemplate]{
		prepareCreate: func(pt *corev1.PodTemplate) { pt.Generation = 1 },
		prepareUpdate: func(pt, old *corev1.PodTemplate) {
			pt.Generation = old.Generation
			if !apiequality.Semantic.DeepEqual(pt.Template, old.Template) {
				pt.Generation = old.Generation + 1
			}
		},
		validate:       ValidatePodTemplate,
		validateUpdate: ValidatePodTemplateUpdate,
		unconditional:  true,
	}
}
