package validationutil

import (
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// PodTemplate connects the core group's pod-spec defaulting and validation to the pod templates
// embedded in workloads (Deployments, Jobs, CronJobs...). The core registry owns those rules; the
// workload groups receive them here instead of importing it, and the API server wires them.
type PodTemplate struct {
	// Default applies the pod defaults to a template (restartPolicy, dnsPolicy, container
	// terminationMessagePath, imagePullPolicy, port protocols, probes...). nil applies none.
	Default func(tmpl *corev1.PodTemplateSpec)
	// Validate checks a template's metadata and pod spec; fldPath is the template's own path
	// (for example spec.template). nil falls back to the minimal checks of ValidateTemplate.
	Validate func(tmpl *corev1.PodTemplateSpec, fldPath *field.Path) field.ErrorList
}

// ApplyDefaults runs the Default hook when one is connected.
func (p PodTemplate) ApplyDefaults(tmpl *corev1.PodTemplateSpec) {
	if p.Default != nil && tmpl != nil {
		p.Default(tmpl)
	}
}

// ValidateTemplate runs the Validate hook, or without one checks only the template's labels,
// annotations and that it has a container, so an unwired server is still not wide open.
func (p PodTemplate) ValidateTemplate(tmpl *corev1.PodTemplateSpec, fldPath *field.Path) field.ErrorList {
	if p.Validate != nil {
		return p.Validate(tmpl, fldPath)
	}
	// Kubernetes reports template metadata at <template>.labels, without "metadata".
	errs := metav1validation.ValidateLabels(tmpl.Labels, fldPath.Child("labels"))
	errs = append(errs, apivalidation.ValidateAnnotations(tmpl.Annotations, fldPath.Child("annotations"))...)
	if len(tmpl.Spec.Containers) == 0 {
		errs = append(errs, field.Required(fldPath.Child("spec", "containers"), ""))
	}
	return errs
}
