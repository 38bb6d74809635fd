package store

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/skiff-sh/skiff/internal/registry"
	"github.com/skiff-sh/skiff/internal/storage"
)

// UpdatedObjectFunc computes the object a client asks for from the stored one; current is nil when
// there is none and the update may create it. It may be called more than once (compare-and-swap
// retries) and must not change current. The result's resourceVersion is the client's precondition:
// it must equal the stored one, and "" asks for an unconditional update where the strategy allows one.
type UpdatedObjectFunc func(ctx context.Context, current runtime.Object) (runtime.Object, error)

// UpdateOptions tune an update.
type UpdateOptions struct {
	DryRun bool
	// Subresource names the subresource written through ("status", "finalize"); "" is the main
	// resource. Its strategy prepares and validates the update.
	Subresource string
	// ForceAllowCreate creates a missing object even where the strategy does not allow create on
	// update (server-side apply).
	ForceAllowCreate bool
	Admission        Admission
}

func (o UpdateOptions) meta() *metav1.UpdateOptions {
	if o.DryRun {
		return &metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}}
	}
	return &metav1.UpdateOptions{}
}

func (o UpdateOptions) createMeta() *metav1.CreateOptions {
	return CreateOptions{DryRun: o.DryRun}.meta()
}

// updateStrategy is what Strategy and SubresourceStrategy have in common.
type updateStrategy interface {
	PrepareForUpdate(ctx context.Context, obj, old runtime.Object)
	ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList
}

// Update reads the stored object, asks objInfo for the next one and writes it with compare-and-swap,
// trying again from the new state when another writer got there first. Each attempt checks the
// resourceVersion precondition, carries the system fields over, runs the BeginUpdate hook, the
// (sub)resource strategy and admission. A missing object is created where allowed (created is then
// true). An object left marked for deletion with no finalizers is deleted afterwards, as Kubernetes
// does. Under dry run nothing is written.
func (s *Store) Update(ctx context.Context, namespace, name string, objInfo UpdatedObjectFunc, opts UpdateOptions) (out runtime.Object, created bool, err error) {
	strategy, err := s.updateStrategy(opts.Subresource, name)
	if err != nil {
		return nil, false, err
	}
	allowCreate := opts.Subresource == "" && (opts.ForceAllowCreate || s.res.Strategy.AllowCreateOnUpdate())

	// finish is the FinishFunc of the latest attempt's Begin hook; an attempt a retry abandons is
	// finished as failed before the next one starts.
	finish := registry.FinishFunc(noFinish)
	settle := func(success bool) {
		finish(ctx, success)
		finish = noFinish
	}
	attempt := func(current runtime.Object) (runtime.Object, error) {
		settle(false)
		created = false
		cm, err := meta.Accessor(current)
		if err != nil {
			return nil, err
		}
		if cm.GetResourceVersion() == "" && cm.GetUID() == "" && cm.GetName() == "" {
			if !allowCreate {
				return nil, apierrors.NewNotFound(s.res.GroupResource(), name)
			}
			current = nil
		}
		next, err := objInfo(ctx, current)
		if err != nil {
			return nil, err
		}
		nm, err := meta.Accessor(next)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		if current == nil {
			nm.SetResourceVersion("")
			created = true
			if next, err = s.PrepareCreate(ctx, next, opts.Admission); err != nil {
				return nil, err
			}
			if finish, err = beginCreate(ctx, s.res.Strategy, next, opts.createMeta()); err != nil {
				finish = noFinish
				return nil, err
			}
			return next, nil
		}
		rv := nm.GetResourceVersion()
		if rv == "0" {
			// Kubernetes reads resourceVersion "0" as none given (its versioner parses both to 0):
			// an unconditional update where the strategy allows one. e2e's scheduler specs update
			// a Node's status so, while its kubelet writes it too.
			rv = ""
			nm.SetResourceVersion("")
		}
		if rv == "" && !s.res.Strategy.AllowUnconditionalUpdate() {
			return nil, s.invalid(name, field.ErrorList{field.Invalid(field.NewPath("metadata", "resourceVersion"), rv, "must be specified for an update")})
		}
		if err := CheckResourceVersion(s.res.GroupResource(), name, rv, cm.GetResourceVersion()); err != nil {
			return nil, err
		}
		next, finish, err = s.prepareUpdate(ctx, strategy, next, current, opts)
		if err != nil {
			finish = noFinish
		}
		return next, err
	}

	if opts.DryRun {
		current := s.res.New()
		if err := s.storage.Get(ctx, s.Key(namespace, name), storage.GetOptions{}, current); err != nil {
			if !storage.IsNotFound(err) {
				return nil, false, s.apiError(err, name)
			}
			current = s.res.New()
		}
		out, err := attempt(current)
		settle(err == nil)
		return out, created, err
	}

	out = s.res.New()
	err = s.storage.GuaranteedUpdate(ctx, s.Key(namespace, name), out, allowCreate, nil, attempt)
	settle(err == nil)
	if err != nil {
		return nil, false, s.apiError(err, name)
	}
	if created {
		if ac, ok := s.res.Strategy.(registry.AfterCreater); ok {
			ac.AfterCreate(ctx, out, opts.createMeta())
		}
	} else if au, ok := strategy.(registry.AfterUpdater); ok {
		au.AfterUpdate(ctx, out, opts.meta())
	}
	out, err = s.deleteIfFinalized(ctx, out)
	return out, created, err
}

func (s *Store) updateStrategy(subresource, name string) (updateStrategy, error) {
	if subresource == "" {
		return s.res.Strategy, nil
	}
	sub, _, ok := s.res.SubresourceStrategy(subresource)
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: s.res.GroupVersion.Group, Resource: s.res.Plural + "/" + subresource}, name)
	}
	return sub, nil
}

// PrepareUpdate does what an update attempt does to obj short of the write, and gives back what
// the BeginUpdate hook took: for checks that must not write.
func (s *Store) PrepareUpdate(ctx context.Context, obj, old runtime.Object, opts UpdateOptions) (runtime.Object, error) {
	strategy, err := s.updateStrategy(opts.Subresource, "")
	if err != nil {
		return nil, err
	}
	out, finish, err := s.prepareUpdate(ctx, strategy, obj, old, opts)
	if err == nil {
		finish(ctx, false)
	}
	return out, err
}

// prepareUpdate carries the stored system fields over to obj, runs the BeginUpdate hook, the
// (sub)resource strategy, admission and validation. The returned FinishFunc is never nil.
func (s *Store) prepareUpdate(ctx context.Context, strategy updateStrategy, obj, old runtime.Object, opts UpdateOptions) (runtime.Object, registry.FinishFunc, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, noFinish, apierrors.NewBadRequest(err.Error())
	}
	om, err := meta.Accessor(old)
	if err != nil {
		return nil, noFinish, err
	}
	m.SetGeneration(om.GetGeneration())
	if m.GetResourceVersion() == "" {
		// An unconditional update is checked against the stored object's revision.
		m.SetResourceVersion(om.GetResourceVersion())
	}
	if m.GetUID() == "" {
		m.SetUID(om.GetUID())
	}
	uid := m.GetUID()
	if err := checkPreconditions(s.res.GroupResource(), m.GetName(), &metav1.Preconditions{UID: &uid}, om); err != nil {
		return nil, noFinish, err
	}
	m.SetCreationTimestamp(om.GetCreationTimestamp())
	if ts := om.GetDeletionTimestamp(); ts != nil {
		m.SetDeletionTimestamp(ts)
	} else if m.GetDeletionTimestamp() != nil {
		m.SetDeletionTimestamp(nil)
	}
	m.SetDeletionGracePeriodSeconds(om.GetDeletionGracePeriodSeconds())
	m.SetSelfLink("")

	finish := registry.FinishFunc(noFinish)
	if bu, ok := strategy.(registry.BeginUpdater); ok {
		f, err := bu.BeginUpdate(ctx, obj, old, opts.meta())
		if err != nil {
			return nil, noFinish, err
		}
		if f != nil {
			finish = f
		}
	}
	fail := func(err error) (runtime.Object, registry.FinishFunc, error) {
		finish(ctx, false)
		return nil, noFinish, err
	}
	strategy.PrepareForUpdate(ctx, obj, old)
	if obj, err = opts.Admission.mutate(ctx, obj, old); err != nil {
		return fail(err)
	}
	if m, err = meta.Accessor(obj); err != nil {
		return fail(err)
	}
	if errs := strategy.ValidateUpdate(ctx, obj, old); len(errs) > 0 {
		return fail(s.invalid(m.GetName(), errs))
	}
	if err := opts.Admission.validate(ctx, obj, old); err != nil {
		return fail(err)
	}
	return obj, finish, nil
}
