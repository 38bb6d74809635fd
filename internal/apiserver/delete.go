package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/skiff-sh/skiff/internal/apiserver/request"
	"github.com/skiff-sh/skiff/internal/registry"
	"github.com/skiff-sh/skiff/internal/storage"
)

// protectedNamespaces may never be deleted.
var protectedNamespaces = map[string]bool{"default": true, "kube-system": true, "kube-public": true}

func (h *resourceHandler) delete(w http.ResponseWriter, r *http.Request, info *RequestInfo) {
	opts, ok := h.readDeleteOptions(w, r)
	if !ok {
		return
	}
	out, _, err := h.deleteObject(r.Context(), info.Namespace, info.Name, opts)
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	h.respond(w, r, http.StatusOK, out)
}

// deleteObject deletes one object as Kubernetes does: preconditions first; then, where finalizers
// (including the ones propagationPolicy asks for) or a grace period apply, only deletionTimestamp is
// set and the object stays until they are done; otherwise it is removed. deleted reports removal.
func (h *resourceHandler) deleteObject(ctx context.Context, namespace, name string, opts *metav1.DeleteOptions) (out runtime.Object, deleted bool, err error) {
	gr := h.res.GroupResource()
	if gr.String() == "namespaces" && protectedNamespaces[name] {
		return nil, false, apierrors.NewForbidden(gr, name, fmt.Errorf("this namespace may not be deleted"))
	}
	dryRun := len(opts.DryRun) > 0
	key := h.key(namespace, name)
	requested := opts
	for attempt := 0; attempt < 16; attempt++ {
		// The strategy's CheckGracefulDelete fills in the grace period it settled on; each object and each
		// attempt starts again from what the client asked for.
		opts := requested.DeepCopy()
		current := h.res.New()
		if err := h.store.Get(ctx, key, storage.GetOptions{}, current); err != nil {
			return nil, false, storage.ToAPIError(err, gr, name)
		}
		m, err := meta.Accessor(current)
		if err != nil {
			return nil, false, err
		}
		if err := checkPreconditions(gr, name, opts.Preconditions, m); err != nil {
			return nil, false, err
		}
		user, _ := request.UserFrom(ctx)
		attrs := &AdmissionAttributes{Verb: "delete", Resource: h.res, Namespace: namespace, Name: name, OldObject: current, User: user, DryRun: dryRun}
		if err := h.s.validateAdmission(ctx, attrs); err != nil {
			return nil, false, err
		}

		next := current.DeepCopyObject()
		pending := h.markForDeletion(ctx, next, opts)
		if pending {
			if dryRun {
				return next, false, nil
			}
			if equalMeta(current, next) {
				return current, false, nil
			}
			rv := m.GetResourceVersion()
			stored := h.res.New()
			err := h.store.GuaranteedUpdate(ctx, key, stored, false, &storage.Preconditions{ResourceVersion: &rv},
				func(runtime.Object) (runtime.Object, error) { return next, nil })
			if storage.IsConflict(err) {
				continue
			}
			if err != nil {
				return nil, false, storage.ToAPIError(err, gr, name)
			}
			return stored, false, nil
		}
		if dryRun {
			return current, true, nil
		}
		rv := m.GetResourceVersion()
		removed := h.res.New()
		err = h.store.Delete(ctx, key, removed, &storage.Preconditions{ResourceVersion: &rv}, nil)
		if storage.IsConflict(err) {
			continue
		}
		if err != nil {
			return nil, false, storage.ToAPIError(err, gr, name)
		}
		if svc, ok := removed.(*corev1.Service); ok && h.s.services != nil {
			h.s.services.releaseService(ctx, svc)
		}
		return removed, true, nil
	}
	return nil, false, apierrors.NewConflict(gr, name, fmt.Errorf("too many concurrent changes; try again"))
}

// markForDeletion sets the deletion fields on obj and reports whether it must stay for now (finalizers,
// a grace period, or a namespace's spec finalizers). Repeated deletes only ever shorten a grace period.
func (h *resourceHandler) markForDeletion(ctx context.Context, obj runtime.Object, opts *metav1.DeleteOptions) bool {
	m, _ := meta.Accessor(obj)
	now := h.s.clock.Now()
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
	}
	// The GC finalizers only matter for objects that are not yet going away; an object already being
	// deleted keeps what it has.
	if m.GetDeletionTimestamp() == nil {
		m.SetFinalizers(finalizers)
	}

	graceful := false
	var grace int64
	if gd, ok := h.res.Strategy.(registry.GracefulDeleter); ok {
		graceful = gd.CheckGracefulDelete(ctx, obj, opts)
		if graceful && opts.GracePeriodSeconds != nil {
			grace = *opts.GracePeriodSeconds
		}
	}
	if h.res.GroupResource().String() == "namespaces" {
		if ns, ok := obj.(*corev1.Namespace); ok && len(ns.Spec.Finalizers) > 0 {
			ns.Status.Phase = corev1.NamespaceTerminating
			if ns.DeletionTimestamp == nil {
				ts := metav1.NewTime(now)
				ns.DeletionTimestamp = &ts
				zero := int64(0)
				ns.DeletionGracePeriodSeconds = &zero
			}
			return true
		}
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

func namespaceHasSpecFinalizers(obj runtime.Object) bool {
	ns, ok := obj.(*corev1.Namespace)
	return ok && len(ns.Spec.Finalizers) > 0
}

func equalMeta(a, b runtime.Object) bool {
	am, _ := meta.Accessor(a)
	bm, _ := meta.Accessor(b)
	return slices.Equal(am.GetFinalizers(), bm.GetFinalizers()) &&
		equalTime(am.GetDeletionTimestamp(), bm.GetDeletionTimestamp()) &&
		equalInt64(am.GetDeletionGracePeriodSeconds(), bm.GetDeletionGracePeriodSeconds()) &&
		!isNamespaceBecomingTerminating(a, b)
}

func isNamespaceBecomingTerminating(a, b runtime.Object) bool {
	an, ok1 := a.(*corev1.Namespace)
	bn, ok2 := b.(*corev1.Namespace)
	return ok1 && ok2 && an.Status.Phase != bn.Status.Phase
}

func equalTime(a, b *metav1.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(b)
}

func equalInt64(a, b *int64) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
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

func checkPreconditions(gr schema.GroupResource, name string, p *metav1.Preconditions, m metav1.Object) error {
	if p == nil {
		return nil
	}
	if p.UID != nil && *p.UID != m.GetUID() {
		return apierrors.NewConflict(gr, name, fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", *p.UID, m.GetUID()))
	}
	if p.ResourceVersion != nil && *p.ResourceVersion != m.GetResourceVersion() {
		return apierrors.NewConflict(gr, name, fmt.Errorf("Precondition failed: ResourceVersion in precondition: %v, ResourceVersion in object meta: %v", *p.ResourceVersion, m.GetResourceVersion()))
	}
	return nil
}

func (h *resourceHandler) deleteCollection(w http.ResponseWriter, r *http.Request, info *RequestInfo) {
	opts, ok := h.readDeleteOptions(w, r)
	if !ok {
		return
	}
	listOpts, err := h.listOptions(r.URL.Query(), true)
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	list := h.res.NewList()
	if err := h.store.List(r.Context(), h.collectionPrefix(info.Namespace), listOpts, list); err != nil {
		h.s.writeError(w, r, storage.ToAPIError(err, h.res.GroupResource(), ""))
		return
	}
	var results []runtime.Object
	err = meta.EachListItem(list, func(item runtime.Object) error {
		m, err := meta.Accessor(item)
		if err != nil {
			return err
		}
		out, _, err := h.deleteObject(r.Context(), m.GetNamespace(), m.GetName(), opts)
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
		h.s.writeError(w, r, err)
		return
	}
	if err := meta.SetList(list, results); err != nil {
		h.s.writeError(w, r, err)
		return
	}
	h.respond(w, r, http.StatusOK, list)
}

// readDeleteOptions reads a delete's options from its body and query, answering the client itself
// when they are bad.
func (h *resourceHandler) readDeleteOptions(w http.ResponseWriter, r *http.Request) (*metav1.DeleteOptions, bool) {
	body, err := readBody(r)
	if err == nil {
		var opts *metav1.DeleteOptions
		if opts, err = parseDeleteOptions(r, body, h); err == nil {
			return opts, true
		}
	}
	h.s.writeError(w, r, err)
	return nil, false
}
