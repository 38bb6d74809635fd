package core

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/skiff-sh/skiff/internal/registry"
)

// typedAction is an action whose request body is a *T of kind gvk: create gets the body typed.
func typedAction[T any, PT interface {
	*T
	runtime.Object
}](gvk schema.GroupVersionKind, create func(ctx context.Context, env registry.ActionEnv, req registry.ActionRequest, body PT) (runtime.Object, error)) *registry.Action {
	return &registry.Action{
		Kind: gvk,
		New:  func() runtime.Object { return PT(new(T)) },
		Create: func(ctx context.Context, env registry.ActionEnv, req registry.ActionRequest) (runtime.Object, error) {
			body, ok := req.Body.(PT)
			if !ok {
				return nil, apierrors.NewBadRequest(fmt.Sprintf("the request body must be a %s, not %T", gvk.Kind, req.Body))
			}
			return create(ctx, env, req, body)
		},
	}
}

// getParent reads the object an action acts on, req's namespace and name in gr, and gives it with
// its store; stale allows a serializable read.
func getParent[T runtime.Object](ctx context.Context, env registry.ActionEnv, gr schema.GroupResource, req registry.ActionRequest, stale bool) (registry.ObjectStore, T, error) {
	var zero T
	st, err := storeOf(env, gr)
	if err != nil {
		return nil, zero, err
	}
	obj, err := st.Get(ctx, req.Namespace, req.Name, stale)
	if err != nil {
		return nil, zero, err
	}
	typed, ok := obj.(T)
	if !ok {
		return nil, zero, apierrors.NewInternalError(fmt.Errorf("%s store returned %T", gr, obj))
	}
	return st, typed, nil
}

// storeOf is the store of gr, or the 500 of a server that does not serve it.
func storeOf(env registry.ActionEnv, gr schema.GroupResource) (registry.ObjectStore, error) {
	if env.Stores != nil {
		if st, ok := env.Stores.Store(gr); ok {
			return st, nil
		}
	}
	return nil, apierrors.NewInternalError(fmt.Errorf("%s are not served", gr))
}
