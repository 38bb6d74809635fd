package vacprotection

import (
	"context"
	"fmt"
	"log/slog"
	"slices"

	corev1 "k8s.io/api/core/v1"
	storagev1beta1 "k8s.io/api/storage/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1beta1"
	"k8s.io/client-go/tools/cache"

	"github.com/skiff-sh/skiff/internal/controller/ctrlutil"
	"github.com/skiff-sh/skiff/internal/volumeutil"
)

// Name is the controller's name in --controllers and in metrics.
const Name = "volumeattributesclass-protection"

// Action is what one reconcile of a class does.
type Action int

const (
	// Nothing: the class is as it should be (or is in use and must wait).
	Nothing Action = iota
	// AddFinalizer: a live class lacks the finalizer.
	AddFinalizer
	// RemoveFinalizer: the class is being deleted and nothing names it.
	RemoveFinalizer
)

// Decide is what to do with vac, inUse saying whether a claim or a volume names it. It is pure.
func Decide(vac *storagev1beta1.VolumeAttributesClass, inUse bool) Action {
	has := slices.Contains(vac.Finalizers, volumeutil.VACProtectionFinalizer)
	switch {
	case vac.DeletionTimestamp == nil && !has:
		return AddFinalizer
	case vac.DeletionTimestamp != nil && has && !inUse:
		return RemoveFinalizer
	}
	return Nothing
}

// ClaimUses lists the classes a claim names: the one it asks for, the one its volume has and the
// one a modification in progress moves it to, as Kubernetes counts them. It is pure.
func ClaimUses(pvc *corev1.PersistentVolumeClaim) []string {
	var out []string
	if n := pvc.Spec.VolumeAttributesClassName; n != nil && *n != "" {
		out = append(out, *n)
	}
	if n := pvc.Status.CurrentVolumeAttributesClassName; n != nil && *n != "" {
		out = append(out, *n)
	}
	if s := pvc.Status.ModifyVolumeStatus; s != nil && s.TargetVolumeAttributesClassName != "" {
		out = append(out, s.TargetVolumeAttributesClassName)
	}
	return out
}

// VolumeUses lists the class a volume names. It is pure.
func VolumeUses(pv *corev1.PersistentVolume) []string {
	if n := pv.Spec.VolumeAttributesClassName; n != nil && *n != "" {
		return []string{*n}
	}
	return nil
}

// Controller keeps the protection finalizer of the classes claims and volumes name.
type Controller struct {
	client  kubernetes.Interface
	classes storagelisters.VolumeAttributesClassLister
	claims  corelisters.PersistentVolumeClaimLister
	volumes corelisters.PersistentVolumeLister
	loop    *ctrlutil.Loop
	synced  []cache.InformerSynced
	log     *slog.Logger
}

// New builds the controller and registers its informer handlers: a class is looked at when it
// changes, and when a claim or a volume that named it changes or goes.
func New(deps ctrlutil.Deps) (*Controller, error) {
	vacs := deps.Informers.Storage().V1beta1().VolumeAttributesClasses()
	pvcs := deps.Informers.Core().V1().PersistentVolumeClaims()
	pvs := deps.Informers.Core().V1().PersistentVolumes()
	c := &Controller{
		client: deps.Client, classes: vacs.Lister(), claims: pvcs.Lister(), volumes: pvs.Lister(), log: deps.Log(),
		synced: []cache.InformerSynced{vacs.Informer().HasSynced, pvcs.Informer().HasSynced, pvs.Informer().HasSynced},
	}
	c.loop = ctrlutil.NewLoop(Name, deps, c.Sync)
	enqueueClass := func(o any) {
		if vac, ok := o.(*storagev1beta1.VolumeAttributesClass); ok {
			c.loop.Queue.Add(vac.Name)
		}
	}
	if _, err := vacs.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueueClass, UpdateFunc: func(_, o any) { enqueueClass(o) },
	}); err != nil {
		return nil, fmt.Errorf("volume attributes class informer handler: %w", err)
	}
	// A claim or volume that named a class may have been what kept it: look at the classes the
	// old object named once it changed or went.
	enqueueUses := func(o any) {
		var uses []string
		if pvc, ok := ctrlutil.Unwrap[*corev1.PersistentVolumeClaim](o); ok {
			uses = ClaimUses(pvc)
		} else if pv, ok := ctrlutil.Unwrap[*corev1.PersistentVolume](o); ok {
			uses = VolumeUses(pv)
		}
		for _, n := range uses {
			c.loop.Queue.Add(n)
		}
	}
	for name, inf := range map[string]cache.SharedIndexInformer{"claim": pvcs.Informer(), "volume": pvs.Informer()} {
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			UpdateFunc: func(old, _ any) { enqueueUses(old) }, DeleteFunc: enqueueUses,
		}); err != nil {
			return nil, fmt.Errorf("%s informer handler: %w", name, err)
		}
	}
	return c, nil
}

// Run runs workers until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) { c.loop.Run(ctx, workers, c.synced...) }

// Sync adds or removes the finalizer of the class named by key.
func (c *Controller) Sync(ctx context.Context, key string) error {
	vac, err := c.classes.Get(key)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get volume attributes class %s: %w", key, err)
	}
	inUse := false
	if vac.DeletionTimestamp != nil {
		if inUse, err = c.inUse(vac.Name); err != nil {
			return err
		}
	}
	next := vac.DeepCopy()
	switch Decide(vac, inUse) {
	case AddFinalizer:
		next.Finalizers = append(next.Finalizers, volumeutil.VACProtectionFinalizer)
		if err := c.update(ctx, next); err != nil {
			return fmt.Errorf("add protection finalizer to volume attributes class %s: %w", key, err)
		}
		c.log.Debug("added protection finalizer", "volumeAttributesClass", key)
	case RemoveFinalizer:
		next.Finalizers = slices.DeleteFunc(next.Finalizers, func(f string) bool { return f == volumeutil.VACProtectionFinalizer })
		if err := c.update(ctx, next); err != nil {
			return fmt.Errorf("remove protection finalizer from volume attributes class %s: %w", key, err)
		}
		c.log.Info("no claim or volume names the volume attributes class; removed its protection finalizer", "volumeAttributesClass", key)
	}
	return nil
}

// inUse says whether a claim or a volume in the informers' caches names class.
func (c *Controller) inUse(class string) (bool, error) {
	pvcs, err := c.claims.List(labels.Everything())
	if err != nil {
		return false, fmt.Errorf("list claims: %w", err)
	}
	for _, pvc := range pvcs {
		if slices.Contains(ClaimUses(pvc), class) {
			return true, nil
		}
	}
	pvs, err := c.volumes.List(labels.Everything())
	if err != nil {
		return false, fmt.Errorf("list volumes: %w", err)
	}
	for _, pv := range pvs {
		if slices.Contains(VolumeUses(pv), class) {
			return true, nil
		}
	}
	return false, nil
}

// update writes the class; a class gone meanwhile needs nothing more.
func (c *Controller) update(ctx context.Context, vac *storagev1beta1.VolumeAttributesClass) error {
	_, err := c.client.StorageV1beta1().VolumeAttributesClasses().Update(ctx, vac, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
