package store

//lint:file-ignore SA1019 DeleteOptions.orphanDependents is deprecated but still accepted from clients, as Kubernetes accepts it.

import (
	"context"
	"fmt"
	"slices"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/skiff-sh/skiff/internal/registry"
	"github.com/skiff-sh/skiff/internal/storage"
)

// deleteAttempts bounds how often a delete starts again because the object changed under it.
const deleteAttempts = 16

// ValidateDeleteFunc vets the stored object before a delete (validating admission); an error aborts.
type ValidateDeleteFunc func(ctx context.Context, current runtime.Object) error

// Delete deletes one object as Kubernetes does: the strategy's DeleteValidator, then preconditions and
// validate; then, where finalizers (including the ones propagationPolicy asks for), a grace period or
// the strategy's DeletionHolder apply, only deletionTimestamp is set and the object stays until they
// are done; otherwise it is removed and the AfterDelete hook runs. deleted reports removal. Under dry
// run (options.DryRun) nothing is written.
func (s *Store) Delete(ctx context.Context, namespace, name string, options *metav1.DeleteOptions, validate ValidateDeleteFunc) (out runtime.Object, deleted bool, err error) {
	gr := s.res.GroupResource()
	if options == nil {
		options = &metav1.DeleteOptions{}
	}
	if dv, ok := s.res.Strategy.(registry.DeleteValidator); ok {
		if err := dv.ValidateDelete(ctx, namespace, name); err != nil {
			return nil, false, err
		}
	}
	dryRun := len(options.DryRun) > 0
	key := s.Key(namespace, name)
	for attempt := 0; attempt < deleteAttempts; attempt++ {
		// The strategy's CheckGracefulDelete fills in the grace period it settled on; each attempt
		// starts again from what the client asked for.
		opts := options.DeepCopy()
		current := s.res.New()
		if err := s.storage.Get(ctx, key, storage.GetOptions{}, current); err != nil {
			return nil, false, s.apiError(err, name)
		}
		m, err := meta.Accessor(current)
		if err != nil {
			return nil, false, err
		}
		if err := checkPreconditions(gr, name, opts.Preconditions, m); err != nil {
			return nil, false, err
		}
		if validate != nil {
			if err := validate(ctx, current); err != nil {
				return nil, false, err
			}
		}

		next := current.DeepCopyObject()
		rv := m.GetResourceVersion()
		if s.markForDeletion(ctx, next, opts) {
			if dryRun {
				return next, false, nil
			}
			if apiequality.Semantic.DeepEqual(current, next) {
				return current, false, nil
			}
			stored := s.res.New()
			err := s.storage.GuaranteedUpdate(ctx, key, stored, false, &storage.Preconditions{ResourceVersion: &rv},
				func(runtime.Object) (runtime.Object, error) { return next, nil })
			if storage.IsConflict(err) {
				continue
			}
			if err != nil {
				return nil, false, s.apiError(err, name)
			}
			return stored, false, nil
		}
		if dryRun {
			return current, true, nil
		}
		removed := s.res.New()
		err = s.storage.Delete(ctx, key, removed, &storage.Preconditions{ResourceVersion: &rv}, nil)
		if storage.IsConflict(err) {
			continue
		}
		if err != nil {
			return nil, false, s.apiError(err, name)
		}
		s.afterDelete(ctx, removed, opts)
		return removed, true, nil
	}
	return nil, false, apierrors.NewConflict(gr, name, fmt.Errorf("too many concurrent changes; try again"))
}

func (s *Store) orphansByDefault() bool {
	o, ok := s.res.Strategy.(registry.DependentsOrphaner)
	return ok && o.OrphanDependentsByDefault()
}

func (s *Store) afterDelete(ctx context.Context, obj runtime.Object, opts *metav1.DeleteOptions) {
	if ad, ok := s.res.Strategy.(registry.AfterDeleter); ok {
		ad.AfterDelete(ctx, obj, opts)
	}
}

// markForDeletion sets the deletion fields on obj and reports whether it must stay for now (finalizers,
// a grace period, or the strategy's own reason). Repeated deletes only ever shorten a grace period.
func (s *Store) markForDeletion(ctx context.Context, obj runtime.Object, opts *metav1.DeleteOptions) bool {
	m, _ := meta.Accessor(obj)
	now := s.clock.Now()
	finalizers := m.GetFinalizers()
	switch {
	case opts.PropagationPolicy != nil && *opts.PropagationPolicy == metav1.DeletePropagationForeground:
		finalizers = addFinalizer(finalizers, metav1.FinalizerDeleteDependents)
		finalizers = removeFinalizer(finalizers, metav1.FinalizerOrphanDependents)
	case opts.PropagationPolicy != nil && *opts.PropagationPolicy == metav1.DeletePropagationOrphan,
		opts.OrphanDependents != nil && *opts.OrphanDependents:
		finalizers = addFinalizer(finalizers, metav1.FinalizerOrphanDependents)
		finalizers = removeFinalizer(finalizers, metav1.FinalizerDeleteDependents)
	case opts.PropagationPolicy != nil && *opts.PropagationPolicy == metav1.DeletePropagationBackground,
		opts.OrphanDependents != nil && !*opts.OrphanDependents:
		finalizers = removeFinalizer(finalizers, metav1.FinalizerOrphanDependents)
		finalizers = removeFinalizer(finalizers, metav1.FinalizerDeleteDependents)
	case s.orphansByDefault() && !slices.Contains(finalizers, metav1.FinalizerDeleteDependents):
		// No propagation asked for and none chosen before (a GC finalizer on the object wins):
		// the type's default.
		finalizers = addFinalizer(finalizers, metav1.FinalizerOrphanDependents)
	}
	// The GC finalizers only matter for objects that are not yet going away; an object already being
	// deleted keeps what it has.
	if m.GetDeletionTimestamp() == nil {
		m.SetFinalizers(finalizers)
	}

	graceful := false
	var grace int64
	if gd, ok := s.res.Strategy.(registry.GracefulDeleter); ok {
		graceful = gd.CheckGracefulDelete(ctx, obj, opts)
		if graceful && opts.GracePeriodSeconds != nil {
			grace = *opts.GracePeriodSeconds
		}
	}
	if dh, ok := s.res.Strategy.(registry.DeletionHolder); ok && dh.PrepareForDelete(ctx, obj, now) {
		return true
	}
	if graceful && grace > 0 {
		deadline := metav1.NewTime(now.Add(time.Duration(grace) * time.Second))
		if cur := m.GetDeletionTimestamp(); cur == nil || deadline.Before(cur) {
			m.SetDeletionTimestamp(&deadline)
			m.SetDeletionGracePeriodSeconds(&grace)
		}
		return true
	}
	if len(m.GetFinalizers()) > 0 {
		if m.GetDeletionTimestamp() == nil {
			ts := metav1.NewTime(now)
			m.SetDeletionTimestamp(&ts)
		}
		zero := int64(0)
		m.SetDeletionGracePeriodSeconds(&zero)
		return true
	}
	return false
}

// deleteIfFinalized deletes an object whose deletion was waiting for finalizers once the last one is
// gone (and no grace period is still running, and the strategy holds it no longer), as Kubernetes
// does on update. It returns the object's last state.
func (s *Store) deleteIfFinalized(ctx context.Context, obj runtime.Object) (runtime.Object, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return obj, err
	}
	if m.GetDeletionTimestamp() == nil || len(m.GetFinalizers()) > 0 {
		return obj, nil
	}
	if g := m.GetDeletionGracePeriodSeconds(); g != nil && *g > 0 {
		return obj, nil
	}
	if dh, ok := s.res.Strategy.(registry.DeletionHolder); ok && dh.HoldsDeletion(obj) {
		return obj, nil
	}
	rv := m.GetResourceVersion()
	out := s.res.New()
	err = s.storage.Delete(ctx, s.Key(m.GetNamespace(), m.GetName()), out, &storage.Preconditions{ResourceVersion: &rv}, nil)
	switch {
	case err == nil:
		s.afterDelete(ctx, out, &metav1.DeleteOptions{})
		return out, nil
	case storage.IsNotFound(err), storage.IsConflict(err):
		// Someone else finished or changed it first; the update itself succeeded.
		return obj, nil
	default:
		return nil, s.apiError(err, m.GetName())
	}
}

// DeleteCollection deletes every object of namespace that listOpts selects, each as Delete does, and
// returns the list of their last states. Objects that vanish meanwhile are skipped.
func (s *Store) DeleteCollection(ctx context.Context, namespace string, listOpts storage.ListOptions, options *metav1.DeleteOptions, validate ValidateDeleteFunc) (runtime.Object, error) {
	list, err := s.List(ctx, namespace, listOpts)
	if err != nil {
		return nil, err
	}
	var results []runtime.Object
	err = meta.EachListItem(list, func(item runtime.Object) error {
		m, err := meta.Accessor(item)
		if err != nil {
			return err
		}
		out, _, err := s.Delete(ctx, m.GetNamespace(), m.GetName(), options, validate)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		results = append(results, out)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := meta.SetList(list, results); err != nil {
		return nil, fmt.Errorf("delete collection of %s: %w", s.res.GroupResource(), err)
	}
	return list, nil
}

func addFinalizer(list []string, f string) []string {
	if slices.Contains(list, f) {
		return list
	}
	return append(slices.Clone(list), f)
}

func removeFinalizer(list []string, f string) []string {
	return slices.DeleteFunc(slices.Clone(list), func(s string) bool { return s == f })
}
