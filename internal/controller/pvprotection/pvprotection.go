package pvprotection

import (
	"context"
	"fmt"
	"log/slog"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/skiff-sh/skiff/internal/controller/ctrlutil"
	"github.com/skiff-sh/skiff/internal/volumeutil"
)

// Name is the controller's name in --controllers and in metrics.
const Name = "pv-protection"

// Action is what one reconcile of a volume does.
type Action int

const (
	// Nothing: the volume is as it should be (or is bound and must wait).
	Nothing Action = iota
	// AddFinalizer: a live volume lacks the finalizer.
	AddFinalizer
	// RemoveFinalizer: the volume is being deleted and is not bound.
	RemoveFinalizer
)

// Decide is what to do with pv. It is pure.
func Decide(pv *corev1.PersistentVolume) Action {
	has := slices.Contains(pv.Finalizers, volumeutil.PVProtectionFinalizer)
	switch {
	case pv.DeletionTimestamp == nil && !has:
		return AddFinalizer
	case pv.DeletionTimestamp != nil && has && pv.Status.Phase != corev1.VolumeBound:
		return RemoveFinalizer
	}
	return Nothing
}

// Controller removes the protection finalizer from volumes no claim is bound to.
type Controller struct {
	client  kubernetes.Interface
	volumes corelisters.PersistentVolumeLister
	loop    *ctrlutil.Loop
	synced  cache.InformerSynced
	log     *slog.Logger
}

// New builds the controller and registers its informer handler.
func New(deps ctrlutil.Deps) (*Controller, error) {
	inf := deps.Informers.Core().V1().PersistentVolumes()
	c := &Controller{client: deps.Client, volumes: inf.Lister(), synced: inf.Informer().HasSynced, log: deps.Log()}
	c.loop = ctrlutil.NewLoop(Name, deps, c.Sync)
	enqueue := func(o any) {
		if pv, ok := o.(*corev1.PersistentVolume); ok && Decide(pv) != Nothing {
			c.loop.Enqueue(pv)
		}
	}
	if _, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, o any) { enqueue(o) },
	}); err != nil {
		return nil, fmt.Errorf("volume informer handler: %w", err)
	}
	return c, nil
}

// Run runs workers until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) { c.loop.Run(ctx, workers, c.synced) }

// Sync adds or removes the finalizer of the volume named by key.
func (c *Controller) Sync(ctx context.Context, key string) error {
	pv, err := c.volumes.Get(key)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get volume %s: %w", key, err)
	}
	next := pv.DeepCopy()
	switch Decide(pv) {
	case AddFinalizer:
		next.Finalizers = append(next.Finalizers, volumeutil.PVProtectionFinalizer)
		if err := c.update(ctx, next); err != nil {
			return fmt.Errorf("add protection finalizer to volume %s: %w", key, err)
		}
		c.log.Debug("added protection finalizer", "volume", key)
	case RemoveFinalizer:
		next.Finalizers = slices.DeleteFunc(next.Finalizers, func(f string) bool { return f == volumeutil.PVProtectionFinalizer })
		if err := c.update(ctx, next); err != nil {
			return fmt.Errorf("remove protection finalizer from volume %s: %w", key, err)
		}
		c.log.Info("volume is not bound; removed its protection finalizer", "volume", key, "phase", pv.Status.Phase)
	}
	return nil
}

// update writes the volume; a volume gone meanwhile needs nothing more.
func (c *Controller) update(ctx context.Context, pv *corev1.PersistentVolume) error {
	_, err := c.client.CoreV1().PersistentVolumes().Update(ctx, pv, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
