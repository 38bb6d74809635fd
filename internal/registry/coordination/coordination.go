package coordination

import (
	"fmt"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/skiff-sh/skiff/internal/registry"
	vu "github.com/skiff-sh/skiff/internal/registry/validationutil"
)

// Resources returns the coordination.k8s.io/v1 resources.
func Resources() []*registry.Resource {
	return []*registry.Resource{{
		GroupVersion: coordinationv1.SchemeGroupVersion, Kind: "Lease", ListKind: "LeaseList",
		Plural: "leases", Singular: "lease", Namespaced: true,
		New:     func() runtime.Object { return &coordinationv1.Lease{} },
		NewList: func() runtime.Object { return &coordinationv1.LeaseList{} },
		Strategy: &vu.Strategy[*coordinationv1.Lease]{
			Namespaced: true,
			ValidateObject: func(l *coordinationv1.Lease) field.ErrorList {
				return ValidateLeaseSpec(&l.Spec, field.NewPath("spec"))
			},
			// Leader election PUTs the lease it wants; Kubernetes creates it when missing.
			CreateOnUpdate: true,
		},
	}}
}

// RegisterDefaults exists for symmetry with the other groups: leases have no defaults.
func RegisterDefaults(s *runtime.Scheme) error {
	if s == nil {
		return fmt.Errorf("register coordination.k8s.io/v1 defaults: nil scheme")
	}
	return nil
}

// ValidateLeaseSpec checks durations, transitions and the coordinated-election fields.
func ValidateLeaseSpec(spec *coordinationv1.LeaseSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if spec.LeaseDurationSeconds != nil && *spec.LeaseDurationSeconds <= 0 {
		errs = append(errs, field.Invalid(fldPath.Child("leaseDurationSeconds"), *spec.LeaseDurationSeconds, "must be greater than 0"))
	}
	if spec.LeaseTransitions != nil && *spec.LeaseTransitions < 0 {
		errs = append(errs, field.Invalid(fldPath.Child("leaseTransitions"), *spec.LeaseTransitions, "must be greater than or equal to 0"))
	}
	if spec.Strategy != nil && *spec.Strategy != coordinationv1.OldestEmulationVersion {
		errs = append(errs, field.NotSupported(fldPath.Child("strategy"), *spec.Strategy, []coordinationv1.CoordinatedLeaseStrategy{coordinationv1.OldestEmulationVersion}))
	}
	if spec.PreferredHolder != nil && *spec.PreferredHolder != "" && (spec.Strategy == nil || *spec.Strategy == "") {
		errs = append(errs, field.Forbidden(fldPath.Child("preferredHolder"), "may only be specified if `strategy` is defined"))
	}
	return errs
}
