package node

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/skiff-sh/skiff/internal/registry"
	"github.com/skiff-sh/skiff/internal/registry/core"
	vu "github.com/skiff-sh/skiff/internal/registry/validationutil"
)

// Resources returns the node.k8s.io/v1 resources.
func Resources() []*registry.Resource {
	return []*registry.Resource{{
		GroupVersion: nodev1.SchemeGroupVersion, Kind: "RuntimeClass", ListKind: "RuntimeClassList",
		Plural: "runtimeclasses", Singular: "runtimeclass",
		New:     func() runtime.Object { return &nodev1.RuntimeClass{} },
		NewList: func() runtime.Object { return &nodev1.RuntimeClassList{} },
		Strategy: &vu.Strategy[*nodev1.RuntimeClass]{
			ValidateObject: ValidateRuntimeClass,
			// Pods already admitted with a handler keep running with it; it cannot change under them.
			ValidateChange: func(rc, old *nodev1.RuntimeClass) field.ErrorList {
				return vu.Immutable(rc.Handler, old.Handler, field.NewPath("handler"))
			},
			UnconditionalUpdate: true,
		},
	}}
}

// RegisterDefaults exists for symmetry with the other groups: runtime classes have no defaults.
func RegisterDefaults(s *runtime.Scheme) error {
	if s == nil {
		return fmt.Errorf("register node.k8s.io/v1 defaults: nil scheme")
	}
	return nil
}

// ValidateRuntimeClass checks the handler, the overhead (as container limits are checked) and the
// scheduling constraints.
func ValidateRuntimeClass(rc *nodev1.RuntimeClass) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range apivalidation.NameIsDNSLabel(rc.Handler, false) {
		errs = append(errs, field.Invalid(field.NewPath("handler"), rc.Handler, msg))
	}
	if rc.Overhead != nil {
		// Kubernetes reuses the resource-requirements rules with the overhead as limits.
		errs = append(errs, core.ValidateResourceRequirements(&corev1.ResourceRequirements{Limits: rc.Overhead.PodFixed}, field.NewPath("overhead"))...)
	}
	if s := rc.Scheduling; s != nil {
		p := field.NewPath("scheduling")
		errs = append(errs, metav1validation.ValidateLabels(s.NodeSelector, p.Child("nodeSelector"))...)
		errs = append(errs, validateTolerations(s.Tolerations, p.Child("tolerations"))...)
	}
	return errs
}

// validateTolerations checks each toleration as a pod's, and that none repeats another's key,
// operator, value and effect (the list's keys).
func validateTolerations(tolerations []corev1.Toleration, fldPath *field.Path) field.ErrorList {
	errs := core.ValidateTolerations(tolerations, fldPath)
	seen := map[corev1.Toleration]bool{}
	for i, t := range tolerations {
		key := corev1.Toleration{Key: t.Key, Operator: t.Operator, Value: t.Value, Effect: t.Effect}
		if seen[key] {
			errs = append(errs, field.Duplicate(fldPath.Index(i), t))
		}
		seen[key] = true
	}
	return errs
}
