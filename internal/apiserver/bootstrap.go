package apiserver

import (
	"context"
	"fmt"

	"github.com/skiff-sh/skiff/internal/apiserver/store"
	"github.com/skiff-sh/skiff/internal/request"
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
