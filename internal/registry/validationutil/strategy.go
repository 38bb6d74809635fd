package validationutil

import (
	"context"
	"fmt"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/skiff-sh/skiff/internal/registry"
)

// Object is a typed API object: a pointer to a Kubernetes type with ObjectMeta.
type Object interface {
	runtime.Object
	metav1.Object
}

// Strategy implements registry.Strategy for one typed object from small per-type functions.
// Metadata is validated here (ValidateObjectMeta on create, ValidateObjectMetaUpdate on update), so the
// type's functions check only their own fields.
type Strategy[T Object] struct {
	// Namespaced tells metadata validation whether metadata.namespace is required.
	Namespaced bool
	// NameFn validates metadata.name; nil means a DNS subdomain, the Kubernetes default.
	NameFn apivalidation.ValidateNameFunc
	// APIVersion ("apps/v1") keys the reset fields server-side apply must not record: the status,
	// when KeepStatus is set.
	APIVersion string
	// ClearStatus empties the status on create; nil for types without a status subresource.
	ClearStatus func(obj T)
	// KeepStatus carries the stored status into an update of the main resource; nil for types
	// without a status subresource.
	KeepStatus func(obj, old T)
	// SpecEqual reports whether two objects have the same spec; nil means the type does not track
	// metadata.generation.
	SpecEqual func(obj, old T) bool
	// OnCreate is extra type-specific preparation on create (for example a Job's generated selector).
	OnCreate func(ctx context.Context, obj T)
	// OnUpdate is extra type-specific preparation on update, after status and generation.
	OnUpdate func(ctx context.Context, obj, old T)
	// ValidateObject checks the type's own fields on create and update.
	ValidateObject func(obj T) field.ErrorList
	// ValidateChange checks what may not change on update (immutable fields); ValidateObject has
	// already run on the new object.
	ValidateChange func(obj, old T) field.ErrorList
	// ValidateUpdateObject, when set, replaces ValidateObject and ValidateChange on update, for
	// types whose rules for the new object depend on the old one (a CronJob keeps a legacy TZ).
	ValidateUpdateObject func(obj, old T) field.ErrorList
	// CreateOnUpdate and UnconditionalUpdate answer AllowCreateOnUpdate and AllowUnconditionalUpdate.
	CreateOnUpdate      bool
	UnconditionalUpdate bool
}

var (
	_ registry.Strategy            = &Strategy[*metav1.PartialObjectMetadata]{}
	_ registry.ResetFieldsProvider = &Strategy[*metav1.PartialObjectMetadata]{}
)

// PrepareForCreate clears the status and starts generation at 1 where the type tracks it.
func (s *Strategy[T]) PrepareForCreate(ctx context.Context, obj runtime.Object) {
	o, ok := obj.(T)
	if !ok {
		return
	}
	if s.ClearStatus != nil {
		s.ClearStatus(o)
	}
	if s.SpecEqual != nil {
		o.SetGeneration(1)
	}
	if s.OnCreate != nil {
		s.OnCreate(ctx, o)
	}
}

// PrepareForUpdate keeps the stored status and bumps generation when the spec changed.
func (s *Strategy[T]) PrepareForUpdate(ctx context.Context, obj, old runtime.Object) {
	o, ok := obj.(T)
	if !ok {
		return
	}
	prev, ok := old.(T)
	if !ok {
		return
	}
	if s.KeepStatus != nil {
		s.KeepStatus(o, prev)
	}
	if s.SpecEqual != nil {
		o.SetGeneration(prev.GetGeneration())
		if !s.SpecEqual(o, prev) {
			o.SetGeneration(prev.GetGeneration() + 1)
		}
	}
	if s.OnUpdate != nil {
		s.OnUpdate(ctx, o, prev)
	}
}

// Validate checks metadata and the type's fields.
func (s *Strategy[T]) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	o, ok := obj.(T)
	if !ok {
		return wrongType[T](obj)
	}
	nameFn := s.NameFn
	if nameFn == nil {
		nameFn = apivalidation.NameIsDNSSubdomain
	}
	errs := apivalidation.ValidateObjectMetaAccessor(o, s.Namespaced, nameFn, field.NewPath("metadata"))
	if s.ValidateObject != nil {
		errs = append(errs, s.ValidateObject(o)...)
	}
	return errs
}

// ValidateUpdate checks the metadata change, the new object and the type's immutable fields.
func (s *Strategy[T]) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	o, ok := obj.(T)
	if !ok {
		return wrongType[T](obj)
	}
	prev, ok := old.(T)
	if !ok {
		return wrongType[T](old)
	}
	errs := apivalidation.ValidateObjectMetaAccessorUpdate(o, prev, field.NewPath("metadata"))
	if s.ValidateUpdateObject != nil {
		return append(errs, s.ValidateUpdateObject(o, prev)...)
	}
	if s.ValidateObject != nil {
		errs = append(errs, s.ValidateObject(o)...)
	}
	if s.ValidateChange != nil {
		errs = append(errs, s.ValidateChange(o, prev)...)
	}
	return errs
}

// GetResetFields reports the status of types with a status subresource: the main resource
// ignores it.
func (s *Strategy[T]) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	if s.KeepStatus == nil {
		return nil
	}
	return resetFields(s.APIVersion, "status")
}

func resetFields(apiVersion, topField string) map[fieldpath.APIVersion]*fieldpath.Set {
	if apiVersion == "" {
		return nil
	}
	return map[fieldpath.APIVersion]*fieldpath.Set{
		fieldpath.APIVersion(apiVersion): fieldpath.NewSet(fieldpath.MakePathOrDie(topField)),
	}
}

// AllowCreateOnUpdate reports whether PUT to a missing name creates it.
func (s *Strategy[T]) AllowCreateOnUpdate() bool { return s.CreateOnUpdate }

// AllowUnconditionalUpdate reports whether PUT without a resourceVersion is accepted.
func (s *Strategy[T]) AllowUnconditionalUpdate() bool { return s.UnconditionalUpdate }

// StatusMetadata says what of an object's metadata a /status request may change.
type StatusMetadata int

const (
	// StatusKeepsMetadata lets /status change labels, annotations, finalizers and owner references
	// (never the generation, UID or timestamps, which the store keeps): Kubernetes' status
	// strategies for most built-in resources only restore the spec, and conformance's status
	// lifecycle specs patch an annotation through /status.
	StatusKeepsMetadata StatusMetadata = iota
	// StatusResetsLabels keeps the stored labels, as Kubernetes' Deployment status strategy does.
	StatusResetsLabels
	// StatusResetsMetadata keeps all of the stored metadata (metav1.ResetObjectMetaForStatus), as
	// Kubernetes does for CRDs, VolumeAttachments, admission policies and flow-control objects.
	StatusResetsMetadata
)

// StatusStrategy implements registry.StatusStrategy: the status, and the metadata Metadata
// allows, change through /status; the spec is restored by KeepSpec.
type StatusStrategy[T Object] struct {
	// APIVersion ("apps/v1") keys the reset fields server-side apply must not record: the spec.
	APIVersion string
	// KeepSpec carries everything but the status from the stored object into the update.
	KeepSpec func(obj, old T)
	// ValidateStatus checks the new status (and its change from the old one).
	ValidateStatus func(obj, old T) field.ErrorList
	// Metadata says which metadata changes a /status request keeps.
	Metadata StatusMetadata
}

var (
	_ registry.StatusStrategy      = &StatusStrategy[*metav1.PartialObjectMetadata]{}
	_ registry.ResetFieldsProvider = &StatusStrategy[*metav1.PartialObjectMetadata]{}
)

// GetResetFields reports the spec: a /status request cannot change it.
func (s *StatusStrategy[T]) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return resetFields(s.APIVersion, "spec")
}

// PrepareForUpdate restores the spec and, as Metadata says, metadata to the stored object's.
func (s *StatusStrategy[T]) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	o, ok := obj.(T)
	if !ok {
		return
	}
	prev, ok := old.(T)
	if !ok {
		return
	}
	if s.KeepSpec != nil {
		s.KeepSpec(o, prev)
	}
	switch s.Metadata {
	case StatusResetsLabels:
		o.SetLabels(prev.GetLabels())
	case StatusResetsMetadata:
		metav1.ResetObjectMetaForStatus(o, prev)
	}
}

// ValidateUpdate checks the metadata change and the new status.
func (s *StatusStrategy[T]) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	o, ok := obj.(T)
	if !ok {
		return wrongType[T](obj)
	}
	prev, ok := old.(T)
	if !ok {
		return wrongType[T](old)
	}
	errs := apivalidation.ValidateObjectMetaAccessorUpdate(o, prev, field.NewPath("metadata"))
	if s.ValidateStatus != nil {
		errs = append(errs, s.ValidateStatus(o, prev)...)
	}
	return errs
}

func wrongType[T Object](obj runtime.Object) field.ErrorList {
	var want T
	return field.ErrorList{field.InternalError(nil, fmt.Errorf("expected %T, got %T", want, obj))}
}
