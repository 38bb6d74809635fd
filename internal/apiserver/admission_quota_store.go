package apiserver

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/skiff-sh/skiff/internal/apiserver/store"
	"github.com/skiff-sh/skiff/internal/storage"
)

// ListFresh reads a collection for admission plugins at the latest revision (a quorum read), for
// re-checking after a conflict where List's possibly stale answer would conflict again.
func (s *Server) ListFresh(ctx context.Context, group, resource, namespace string) (runtime.Object, error) {
	h := s.handlerForGroupResource(schema.GroupResource{Group: group, Resource: resource})
	if h == nil {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: group, Resource: resource}, "")
	}
	return h.st.List(ctx, namespace, storage.ListOptions{Recursive: true})
}

// UpdateStatus writes obj's status through the resource's status subresource, with its
// resourceVersion as the precondition (a Conflict when the object changed since it was read). It
// is admission's own write (ResourceQuota charging usage), so it runs no admission itself.
func (s *Server) UpdateStatus(ctx context.Context, group, resource string, obj runtime.Object) (runtime.Object, error) {
	gr := schema.GroupResource{Group: group, Resource: resource}
	h := s.handlerForGroupResource(gr)
	if h == nil {
		return nil, apierrors.NewNotFound(gr, "")
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, fmt.Errorf("update status of %s: %w", gr, err)
	}
	if m.GetResourceVersion() == "" {
		return nil, fmt.Errorf("update status of %s %q: no resourceVersion to compare", gr, m.GetName())
	}
	out, _, err := h.st.Update(ctx, m.GetNamespace(), m.GetName(), func(context.Context, runtime.Object) (runtime.Object, error) {
		return obj.DeepCopyObject(), nil
	}, store.UpdateOptions{Subresource: "status"})
	return out, err
}
