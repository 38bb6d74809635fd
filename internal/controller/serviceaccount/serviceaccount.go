package serviceaccount

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/skiff-sh/skiff/internal/controller/ctrlutil"
)

// Name is the controller's name in --controllers and in metrics.
const Name = "serviceaccount"

// DefaultName is the account every namespace gets.
const DefaultName = "default"

// Controller ensures the default ServiceAccounts.
type Controller struct {
	client   kubernetes.Interface
	nsLister corelisters.NamespaceLister
	saLister corelisters.ServiceAccountLister
	loop     *ctrlutil.Loop
	synced   []cache.InformerSynced
}

// New builds the controller and registers its informers' handlers.
func New(deps ctrlutil.Deps) (*Controller, error) {
	nsInformer := deps.Informers.Core().V1().Namespaces()
	saInformer := deps.Informers.Core().V1().ServiceAccounts()
	c := &Controller{
		client:   deps.Client,
		nsLister: nsInformer.Lister(),
		saLister: saInformer.Lister(),
		synced:   []cache.InformerSynced{nsInformer.Informer().HasSynced, saInformer.Informer().HasSynced},
	}
	c.loop = ctrlutil.NewLoop(Name, deps, c.Sync)
	if _, err := nsInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: c.loop.Enqueue, UpdateFunc: func(_, o any) { c.loop.Enqueue(o) },
	}); err != nil {
		return nil, fmt.Errorf("namespace informer handler: %w", err)
	}
	if _, err := saInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		DeleteFunc: func(o any) {
			if tomb, ok := o.(cache.DeletedFinalStateUnknown); ok {
				o = tomb.Obj
			}
			if sa, ok := o.(*corev1.ServiceAccount); ok && sa.Name == DefaultName {
				c.loop.Queue.Add(sa.Namespace)
			}
		},
	}); err != nil {
		return nil, fmt.Errorf("serviceaccount informer handler: %w", err)
	}
	return c, nil
}

// Run runs workers until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) { c.loop.Run(ctx, workers, c.synced...) }

// Sync ensures the default ServiceAccount of one namespace (the key).
func (c *Controller) Sync(ctx context.Context, namespace string) error {
	ns, err := c.nsLister.Get(namespace)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get namespace %s: %w", namespace, err)
	}
	if ns.DeletionTimestamp != nil || ns.Status.Phase == corev1.NamespaceTerminating {
		return nil
	}
	if _, err := c.saLister.ServiceAccounts(namespace).Get(DefaultName); err == nil {
		return nil
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: DefaultName, Namespace: namespace}}
	_, err = c.client.CoreV1().ServiceAccounts(namespace).Create(ctx, sa, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		// A namespace that started terminating meanwhile refuses creates: not an error to retry.
		if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			return nil
		}
		return fmt.Errorf("create default serviceaccount in %s: %w", namespace, err)
	}
	return nil
}
