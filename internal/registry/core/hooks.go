package core

import (
	"context"
	"errors"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/skiff-sh/skiff/internal/registry"
)

// --- namespaces ---

// NamespaceStrategy is the namespace's create/update strategy plus its deletion rules: the
// immortal namespaces are never deleted, and a namespace with spec.finalizers stays Terminating until
// the namespace controller finalizes it.
type NamespaceStrategy struct {
	*typedStrategy[*corev1.Namespace]
}

var (
	_ registry.Strategy        = NamespaceStrategy{}
	_ registry.DeleteValidator = NamespaceStrategy{}
	_ registry.DeletionHolder  = NamespaceStrategy{}
)

// immortalNamespaces may never be deleted, as Kubernetes' NamespaceLifecycle keeps them.
func immortalNamespace(name string) bool {
	return name == metav1.NamespaceDefault || name == metav1.NamespaceSystem || name == metav1.NamespacePublic
}

// ValidateDelete refuses deleting default, kube-system and kube-public.
func (NamespaceStrategy) ValidateDelete(_ context.Context, _, name string) error {
	if immortalNamespace(name) {
		return apierrors.NewForbidden(schema.GroupResource{Resource: "namespaces"}, name, errors.New("this namespace may not be deleted"))
	}
	return nil
}

// PrepareForDelete turns a namespace with spec.finalizers Terminating and keeps it.
func (NamespaceStrategy) PrepareForDelete(_ context.Context, obj runtime.Object, now time.Time) bool {
	ns, ok := obj.(*corev1.Namespace)
	if !ok || len(ns.Spec.Finalizers) == 0 {
		return false
	}
	ns.Status.Phase = corev1.NamespaceTerminating
	if ns.DeletionTimestamp == nil {
		ts := metav1.NewTime(now)
		ns.DeletionTimestamp = &ts
		zero := int64(0)
		ns.DeletionGracePeriodSeconds = &zero
	}
	return true
}

// HoldsDeletion keeps a namespace while spec.finalizers remain.
func (NamespaceStrategy) HoldsDeletion(obj runtime.Object) bool {
	ns, ok := obj.(*corev1.Namespace)
	return ok && len(ns.Spec.Finalizers) > 0
}

// --- services ---

// ServiceAllocator hands out and takes back the cluster IPs and node ports of services. The API
// server implements it on storage it shares between its replicas; the registry only says when.
type ServiceAllocator interface {
	// AllocateCreate fills in a new service's cluster IP and node ports. release gives back what it
	// took; under dryRun nothing is taken and release is a no-op.
	AllocateCreate(ctx context.Context, svc *corev1.Service, dryRun bool) (release func(context.Context), err error)
	// AllocateUpdate gives an updated service what its new shape needs and old lacked.
	AllocateUpdate(ctx context.Context, svc, old *corev1.Service, dryRun bool) (release func(context.Context), err error)
	// Release gives back everything a deleted service held.
	Release(ctx context.Context, svc *corev1.Service)
	// ReleaseDropped gives back what old held and the written svc no longer needs (its
	// health-check node port when it stops being a LoadBalancer with externalTrafficPolicy Local).
	ReleaseDropped(ctx context.Context, svc, old *corev1.Service)
}

// ServiceStrategy is the service's create/update strategy; with an allocator its hooks allocate cluster
// IPs and node ports before a write and give them back when the write fails or the service is deleted.
type ServiceStrategy struct {
	*typedStrategy[*corev1.Service]
	alloc ServiceAllocator
}

var (
	_ registry.Strategy     = ServiceStrategy{}
	_ registry.BeginCreater = ServiceStrategy{}
	_ registry.BeginUpdater = ServiceStrategy{}
	_ registry.AfterDeleter = ServiceStrategy{}
)

// WithAllocator returns the strategy with its allocation hooks armed.
func (s ServiceStrategy) WithAllocator(a ServiceAllocator) ServiceStrategy {
	s.alloc = a
	return s
}

// WithServiceAllocator returns res unchanged unless it is served by a ServiceStrategy, in which case
// it returns a copy whose strategy allocates with a (res itself is shared and never changed).
func WithServiceAllocator(res *registry.Resource, a ServiceAllocator) *registry.Resource {
	st, ok := res.Strategy.(ServiceStrategy)
	if !ok || a == nil {
		return res
	}
	out := *res
	out.Strategy = st.WithAllocator(a)
	return &out
}

func finishWith(release func(context.Context)) registry.FinishFunc {
	return func(ctx context.Context, success bool) {
		if !success && release != nil {
			release(ctx)
		}
	}
}

// BeginCreate allocates the new service's cluster IP and node ports.
func (s ServiceStrategy) BeginCreate(ctx context.Context, obj runtime.Object, options *metav1.CreateOptions) (registry.FinishFunc, error) {
	svc, ok := obj.(*corev1.Service)
	if !ok || s.alloc == nil {
		return nil, nil
	}
	release, err := s.alloc.AllocateCreate(ctx, svc, len(options.DryRun) > 0)
	if err != nil {
		return nil, err
	}
	return finishWith(release), nil
}

// BeginUpdate allocates what the updated service newly needs. What the service already holds and
// the update leaves out (a PUT of a manifest without clusterIP) is carried over first, as
// Kubernetes does, so it is neither allocated again nor seen as a change of an immutable field.
func (s ServiceStrategy) BeginUpdate(ctx context.Context, obj, old runtime.Object, options *metav1.UpdateOptions) (registry.FinishFunc, error) {
	svc, ok1 := obj.(*corev1.Service)
	oldSvc, ok2 := old.(*corev1.Service)
	if !ok1 || !ok2 || s.alloc == nil {
		return nil, nil
	}
	carryAllocatedValues(svc, oldSvc)
	dryRun := len(options.DryRun) > 0
	release, err := s.alloc.AllocateUpdate(ctx, svc, oldSvc, dryRun)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, success bool) {
		switch {
		case !success && release != nil:
			release(ctx)
		case success && !dryRun:
			s.alloc.ReleaseDropped(ctx, svc, oldSvc)
		}
	}, nil
}

// AfterDelete gives back what the deleted service held.
func (s ServiceStrategy) AfterDelete(ctx context.Context, obj runtime.Object, _ *metav1.DeleteOptions) {
	if svc, ok := obj.(*corev1.Service); ok && s.alloc != nil {
		s.alloc.Release(ctx, svc)
	}
}
