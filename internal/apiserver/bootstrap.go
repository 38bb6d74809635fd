package apiserver

import (
	"context"
	"fmt"

	"github.com/skiff-sh/skiff/internal/apiserver/request"
	"github.com/skiff-sh/skiff/internal/apiserver/store"
	"github.com/skiff-sh/skiff/internal/storage"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// EnsureObject creates obj through the full create path (defaults, strategy, validation) unless an
// object of that name exists. It is how the server seeds its built-in namespaces and classes.
func (s *Server) EnsureObject(ctx context.Context, gr schema.GroupResource, obj runtime.Object) error {
	h := s.handlerForGroupResource(gr)
	if h == nil {
		return fmt.Errorf("ensure %s: resource not served", gr)
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	if _, err := h.st.Get(ctx, m.GetNamespace(), m.GetName(), storage.GetOptions{}); err == nil {
		return nil
	}
	s.cfg.Scheme.Default(obj)
	ctx = request.WithUser(ctx, &UserInfo{Name: "system:apiserver", Groups: []string{"system:masters"}})
	opts := writeOptions{fieldManager: "skiff-apiserver", fieldValidation: "Strict"}
	_, err = h.st.Create(ctx, obj, store.CreateOptions{Admission: h.createAdmission(opts, true)})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("ensure %s %q: %w", gr, m.GetName(), err)
	}
	return nil
}

// ReconcileObject keeps an object the server owns current: it creates obj like EnsureObject when
// missing; otherwise mutate gets a copy of the stored object and returns it changed (true) or
// says it already matches (false), and a changed object is written through the update path. It is
// how the server keeps the "kubernetes" Endpoints on its own address and port across restarts.
func (s *Server) ReconcileObject(ctx context.Context, gr schema.GroupResource, obj runtime.Object, mutate func(current runtime.Object) bool) error {
	if err := s.EnsureObject(ctx, gr, obj); err != nil {
		return err
	}
	h := s.handlerForGroupResource(gr)
	m, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	ctx = request.WithUser(ctx, &UserInfo{Name: "system:apiserver", Groups: []string{"system:masters"}})
	current, err := h.st.Get(ctx, m.GetNamespace(), m.GetName(), storage.GetOptions{})
	if err != nil {
		return fmt.Errorf("reconcile %s %q: %w", gr, m.GetName(), err)
	}
	if !mutate(current.DeepCopyObject()) {
		return nil
	}
	_, _, err = h.st.Update(ctx, m.GetNamespace(), m.GetName(), func(_ context.Context, current runtime.Object) (runtime.Object, error) {
		next := current.DeepCopyObject()
		mutate(next)
		s.cfg.Scheme.Default(next)
		return next, nil
	}, store.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("reconcile %s %q: %w", gr, m.GetName(), err)
	}
	return nil
}
