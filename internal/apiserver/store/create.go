package store

import (
	"context"

	"github.com/google/uuid"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/skiff-sh/skiff/internal/registry"
	"github.com/skiff-sh/skiff/internal/storage"
)

// Admission is the HTTP layer's part of a write, which the store runs at fixed points of it. Either
// function may be nil.
type Admission struct {
	// Mutate runs once the stored system fields are set: on create before the strategy's
	// PrepareForCreate, on update after the strategy's PrepareForUpdate (old is nil on create). It
	// records managed fields and runs mutating admission, and may return another object.
	Mutate func(ctx context.Context, obj, old runtime.Object) (runtime.Object, error)
	// Validate runs after the strategy's validation: validating admission.
	Validate func(ctx context.Context, obj, old runtime.Object) error
}

func (a Admission) mutate(ctx context.Context, obj, old runtime.Object) (runtime.Object, error) {
	if a.Mutate == nil {
		return obj, nil
	}
	return a.Mutate(ctx, obj, old)
}

func (a Admission) validate(ctx context.Context, obj, old runtime.Object) error {
	if a.Validate == nil {
		return nil
	}
	return a.Validate(ctx, obj, old)
}

// CreateOptions tune a create.
type CreateOptions struct {
	DryRun    bool
	Admission Admission
}

func (o CreateOptions) meta() *metav1.CreateOptions {
	if o.DryRun {
		return &metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	}
	return &metav1.CreateOptions{}
}

// nameSuffixLength is how many random characters a generated name gets, as in Kubernetes.
const nameSuffixLength = 5

// generateNameAttempts is how often a create whose generated name is taken is tried with a new
// one, as Kubernetes retries (five random characters collide within a few thousand objects).
const generateNameAttempts = 8

// Create stores a new object: system fields, admission, the strategy's preparation and validation,
// the BeginCreate hook, the write (not under dry run) and AfterCreate. An object with only
// generateName is retried with a new name when the generated one is taken.
func (s *Store) Create(ctx context.Context, obj runtime.Object, opts CreateOptions) (runtime.Object, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	if m.GetName() != "" || m.GetGenerateName() == "" {
		return s.createOnce(ctx, obj, opts)
	}
	for attempt := 1; ; attempt++ {
		out, err := s.createOnce(ctx, obj.DeepCopyObject(), opts)
		if !apierrors.IsAlreadyExists(err) || attempt == generateNameAttempts {
			return out, err
		}
	}
}

func (s *Store) createOnce(ctx context.Context, obj runtime.Object, opts CreateOptions) (runtime.Object, error) {
	obj, err := s.PrepareCreate(ctx, obj, opts.Admission)
	if err != nil {
		return nil, err
	}
	m, _ := meta.Accessor(obj)
	// As Kubernetes' storage layer refuses it: after admission, so a validating policy's or
	// webhook's denial of the request is what the client hears first.
	if m.GetResourceVersion() != "" {
		return nil, apierrors.NewBadRequest("resourceVersion should not be set on objects to be created")
	}
	key := s.Key(m.GetNamespace(), m.GetName())
	if opts.DryRun {
		err := s.storage.Get(ctx, key, storage.GetOptions{}, s.res.New())
		if err == nil {
			return nil, apierrors.NewAlreadyExists(s.res.GroupResource(), m.GetName())
		}
		if !storage.IsNotFound(err) {
			return nil, s.apiError(err, m.GetName())
		}
	}
	finish, err := beginCreate(ctx, s.res.Strategy, obj, opts.meta())
	if err != nil {
		return nil, err
	}
	if opts.DryRun {
		finish(ctx, true)
		return obj, nil
	}
	out := s.res.New()
	err = s.storage.Create(ctx, key, obj, out)
	finish(ctx, err == nil)
	if err != nil {
		return nil, s.apiError(err, m.GetName())
	}
	if ac, ok := s.res.Strategy.(registry.AfterCreater); ok {
		ac.AfterCreate(ctx, out, opts.meta())
	}
	return out, nil
}

// PrepareCreate fills the system fields, runs admission, the strategy and validation: everything a
// create does short of its hooks, the resourceVersion check and the write. Create and
// create-on-update (which clears the resourceVersion first) share it.
func (s *Store) PrepareCreate(ctx context.Context, obj runtime.Object, adm Admission) (runtime.Object, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	if m.GetName() == "" && m.GetGenerateName() != "" {
		m.SetName(generateName(m.GetGenerateName(), s.nameSuffix))
	}
	m.SetUID(types.UID(uuid.NewString()))
	m.SetCreationTimestamp(metav1.NewTime(s.clock.Now().Truncate(1e9)))
	m.SetDeletionTimestamp(nil)
	m.SetDeletionGracePeriodSeconds(nil)
	m.SetSelfLink("")
	if obj, err = adm.mutate(ctx, obj, nil); err != nil {
		return nil, err
	}
	if m, err = meta.Accessor(obj); err != nil {
		return nil, err
	}
	s.res.Strategy.PrepareForCreate(ctx, obj)
	if errs := s.res.Strategy.Validate(ctx, obj); len(errs) > 0 {
		return nil, s.invalid(m.GetName(), errs)
	}
	return obj, adm.validate(ctx, obj, nil)
}

func (s *Store) invalid(name string, errs field.ErrorList) error {
	return apierrors.NewInvalid(s.res.GroupVersionKind().GroupKind(), name, errs)
}

// beginCreate runs the strategy's BeginCreate hook, if any; the result is never nil.
func beginCreate(ctx context.Context, strategy any, obj runtime.Object, opts *metav1.CreateOptions) (registry.FinishFunc, error) {
	bc, ok := strategy.(registry.BeginCreater)
	if !ok {
		return noFinish, nil
	}
	finish, err := bc.BeginCreate(ctx, obj, opts)
	if err != nil {
		return nil, err
	}
	if finish == nil {
		return noFinish, nil
	}
	return finish, nil
}

func noFinish(context.Context, bool) {}

// generateName appends a suffix to a generateName prefix, trimming the prefix so the result stays
// within 63 characters.
func generateName(base string, suffix func() string) string {
	const maxNameLength = 63
	if len(base) > maxNameLength-nameSuffixLength {
		base = base[:maxNameLength-nameSuffixLength]
	}
	return base + suffix()
}
