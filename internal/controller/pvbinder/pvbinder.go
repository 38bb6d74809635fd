package pvbinder

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/skiff-sh/skiff/internal/controller/ctrlutil"
	"github.com/skiff-sh/skiff/internal/volumeutil"
)

// Name is the controller's name in --controllers and in metrics.
const Name = "persistentvolume-binder"

// Controller binds claims to volumes.
type Controller struct {
	client    kubernetes.Interface
	pvLister  corelisters.PersistentVolumeLister
	pvcLister corelisters.PersistentVolumeClaimLister
	// classLister tells claims that wait for their first consumer (WaitForFirstConsumer) apart.
	classLister storagelisters.StorageClassLister
	recorder    record.EventRecorder
	loop        *ctrlutil.Loop
	volumes     *ctrlutil.Loop
	synced      []cache.InformerSynced
}

// New builds the controller.
func New(deps ctrlutil.Deps) (*Controller, error) {
	pvInformer := deps.Informers.Core().V1().PersistentVolumes()
	pvcInformer := deps.Informers.Core().V1().PersistentVolumeClaims()
	classInformer := deps.Informers.Storage().V1().StorageClasses()
	c := &Controller{
		client: deps.Client, pvLister: pvInformer.Lister(), pvcLister: pvcInformer.Lister(),
		classLister: classInformer.Lister(), recorder: deps.Recorder,
		synced: []cache.InformerSynced{pvInformer.Informer().HasSynced, pvcInformer.Informer().HasSynced, classInformer.Informer().HasSynced},
	}
	c.loop = ctrlutil.NewLoop(Name, deps, c.Sync)
	c.volumes = ctrlutil.NewLoop(Name+"-volumes", deps, c.SyncVolume)
	if _, err := pvcInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: c.loop.Enqueue, UpdateFunc: func(_, o any) { c.loop.Enqueue(o) },
	}); err != nil {
		return nil, fmt.Errorf("claim informer handler: %w", err)
	}
	// A deleted claim releases its volume.
	if _, err := pvcInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		DeleteFunc: func(o any) {
			if tomb, ok := o.(cache.DeletedFinalStateUnknown); ok {
				o = tomb.Obj
			}
			if pvc, ok := o.(*corev1.PersistentVolumeClaim); ok && pvc.Spec.VolumeName != "" {
				c.volumes.Queue.Add(pvc.Spec.VolumeName)
			}
		},
	}); err != nil {
		return nil, fmt.Errorf("claim informer handler: %w", err)
	}
	// A new or released volume may satisfy a waiting claim: look at every pending claim again.
	requeuePending := func(any) {
		claims, err := c.pvcLister.List(labels.Everything())
		if err != nil {
			return
		}
		for _, pvc := range claims {
			if pvc.Status.Phase != corev1.ClaimBound {
				c.loop.Enqueue(pvc)
			}
		}
	}
	// A volume that changed hands, or went away, may leave the claim it named bound to nothing.
	requeueClaimOf := func(o any) {
		if tomb, ok := o.(cache.DeletedFinalStateUnknown); ok {
			o = tomb.Obj
		}
		if pv, ok := o.(*corev1.PersistentVolume); ok && pv.Spec.ClaimRef != nil {
			c.loop.Queue.Add(pv.Spec.ClaimRef.Namespace + "/" + pv.Spec.ClaimRef.Name)
		}
	}
	if _, err := pvInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { requeuePending(o); c.volumes.Enqueue(o) },
		UpdateFunc: func(old, o any) { requeuePending(o); requeueClaimOf(old); c.volumes.Enqueue(o) },
		DeleteFunc: requeueClaimOf,
	}); err != nil {
		return nil, fmt.Errorf("volume informer handler: %w", err)
	}
	return c, nil
}

// Run runs workers until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) {
	go c.volumes.Run(ctx, 1, c.synced...)
	c.loop.Run(ctx, workers, c.synced...)
}

// SyncVolume keeps a volume's phase: Available while unclaimed, Released once its bound claim is gone
// (the data stays until an administrator reclaims it, as the Retain policy promises).
func (c *Controller) SyncVolume(ctx context.Context, name string) error {
	pv, err := c.pvLister.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	phase := VolumePhase(pv, func(namespace, name string) (*corev1.PersistentVolumeClaim, bool) {
		pvc, err := c.pvcLister.PersistentVolumeClaims(namespace).Get(name)
		return pvc, err == nil
	})
	if phase == pv.Status.Phase {
		return nil
	}
	next := pv.DeepCopy()
	next.Status.Phase = phase
	if _, err := c.client.CoreV1().PersistentVolumes().UpdateStatus(ctx, next, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("set volume %s %s: %w", name, phase, err)
	}
	return nil
}

// VolumePhase is the phase a volume should have given its claim reference; getClaim looks a claim up.
func VolumePhase(pv *corev1.PersistentVolume, getClaim func(namespace, name string) (*corev1.PersistentVolumeClaim, bool)) corev1.PersistentVolumePhase {
	ref := pv.Spec.ClaimRef
	switch {
	case pv.Status.Phase == corev1.VolumeFailed:
		return corev1.VolumeFailed
	case ref == nil:
		return corev1.VolumeAvailable
	case ref.UID == "":
		// Pre-bound by an administrator to a claim that has not bound yet.
		return corev1.VolumeAvailable
	}
	pvc, ok := getClaim(ref.Namespace, ref.Name)
	if !ok || pvc.UID != ref.UID {
		return corev1.VolumeReleased
	}
	return corev1.VolumeBound
}

// Sync binds the claim named by key ("namespace/name") if it is pending and a volume fits.
func (c *Controller) Sync(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return err
	}
	pvc, err := c.pvcLister.PersistentVolumeClaims(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if pvc.DeletionTimestamp != nil || pvc.Status.Phase == corev1.ClaimLost {
		return nil // Lost is terminal, as upstream has it
	}
	if pvc.Status.Phase == corev1.ClaimBound {
		return c.syncBound(ctx, pvc)
	}
	volumes, err := c.pvLister.List(labels.Everything())
	if err != nil {
		return err
	}
	if c.delayed(pvc) {
		// The scheduler chooses for these: it points a volume at the claim, or has one provisioned
		// on the node it picked, which also arrives pointed at the claim.
		volumes = slices.DeleteFunc(slices.Clone(volumes), func(pv *corev1.PersistentVolume) bool {
			ref := pv.Spec.ClaimRef
			return ref == nil || ref.Namespace != pvc.Namespace || ref.Name != pvc.Name || (ref.UID != "" && ref.UID != pvc.UID)
		})
		if len(volumes) == 0 {
			if pvc.Annotations[AnnSelectedNode] == "" {
				if c.recorder != nil {
					c.recorder.Event(pvc, corev1.EventTypeNormal, "WaitForFirstConsumer", "waiting for first consumer to be created before binding")
				}
				return nil
			}
			return c.markProvisioning(ctx, pvc)
		}
	}
	pv := Match(pvc, volumes)
	if pv == nil {
		return c.markProvisioning(ctx, pvc)
	}
	return c.bind(ctx, pvc, pv)
}

// syncBound marks a bound claim Lost when its volume went away or now belongs to another claim
// (a volume populator rebinds the volume it filled from its scratch claim to the user's, and
// cleans up once the scratch claim is Lost).
func (c *Controller) syncBound(ctx context.Context, pvc *corev1.PersistentVolumeClaim) error {
	var pv *corev1.PersistentVolume
	if pvc.Spec.VolumeName != "" {
		got, err := c.pvLister.Get(pvc.Spec.VolumeName)
		switch {
		case err == nil:
			pv = got
		case !apierrors.IsNotFound(err):
			return err
		}
	}
	lost, reason, message := BoundClaimLost(pvc, pv)
	if !lost {
		return nil
	}
	if pvc.Spec.VolumeName != "" {
		// Lost is terminal: the informer's view of the volume is checked against the API first.
		live, err := c.client.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			live = nil
		case err != nil:
			return err
		}
		if lost, reason, message = BoundClaimLost(pvc, live); !lost {
			return nil
		}
	}
	next := pvc.DeepCopy()
	next.Status.Phase = corev1.ClaimLost
	if _, err := c.client.CoreV1().PersistentVolumeClaims(pvc.Namespace).UpdateStatus(ctx, next, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("claim %s/%s lost: %w", pvc.Namespace, pvc.Name, err)
	}
	if c.recorder != nil {
		c.recorder.Event(pvc, corev1.EventTypeWarning, reason, message)
	}
	return nil
}

// BoundClaimLost decides, as upstream's volume controller does, whether a bound claim has lost its
// volume (pv nil: it does not exist), with the event's reason and message. It is pure.
func BoundClaimLost(pvc *corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume) (bool, string, string) {
	switch {
	case pvc.Spec.VolumeName == "":
		return true, "ClaimLost", "Bound claim has lost reference to PersistentVolume. Data on the volume is lost!"
	case pv == nil:
		return true, "ClaimLost", "Bound claim has lost its PersistentVolume. Data on the volume is lost!"
	case pv.Spec.ClaimRef != nil && pv.Spec.ClaimRef.UID != "" && pv.Spec.ClaimRef.UID != pvc.UID:
		return true, "ClaimMisbound", "Two claims are bound to the same volume, this one is bound incorrectly"
	}
	return false, "", ""
}

// Kubernetes' annotations naming the provisioner expected to make a claim's volume.
const (
	AnnStorageProvisioner     = "volume.kubernetes.io/storage-provisioner"
	AnnBetaStorageProvisioner = "volume.beta.kubernetes.io/storage-provisioner"
)

// ProvisionerFor is the provisioner a claim no volume satisfies waits for: its class's, unless the
// class is missing or of statically provisioned volumes only. It is pure.
func ProvisionerFor(class *storagev1.StorageClass) string {
	if class == nil || class.Provisioner == "" || class.Provisioner == "kubernetes.io/no-provisioner" {
		return ""
	}
	return class.Provisioner
}

// markProvisioning annotates the claim with the provisioner that is to make its volume, as
// Kubernetes' persistent volume controller does for external provisioners (they and tools such as
// kubectl describe read it).
func (c *Controller) markProvisioning(ctx context.Context, pvc *corev1.PersistentVolumeClaim) error {
	if c.classLister == nil || storageClass(pvc) == "" {
		return nil
	}
	class, err := c.classLister.Get(storageClass(pvc))
	if err != nil {
		return nil
	}
	provisioner := ProvisionerFor(class)
	if provisioner == "" || (pvc.Annotations[AnnStorageProvisioner] == provisioner && pvc.Annotations[AnnBetaStorageProvisioner] == provisioner) {
		return nil
	}
	claim := pvc.DeepCopy()
	if claim.Annotations == nil {
		claim.Annotations = map[string]string{}
	}
	claim.Annotations[AnnStorageProvisioner] = provisioner
	claim.Annotations[AnnBetaStorageProvisioner] = provisioner
	if _, err := c.client.CoreV1().PersistentVolumeClaims(pvc.Namespace).Update(ctx, claim, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("mark claim %s/%s for provisioner %s: %w", pvc.Namespace, pvc.Name, provisioner, err)
	}
	if c.recorder != nil {
		c.recorder.Event(pvc, corev1.EventTypeNormal, "ExternalProvisioning",
			fmt.Sprintf("Waiting for a volume to be created either by the external provisioner %q or manually by the system administrator.", provisioner))
	}
	return nil
}

// AnnSelectedNode is the node the scheduler picked for a claim that waits for its first consumer.
const AnnSelectedNode = "volume.kubernetes.io/selected-node"

// delayed reports whether the claim's class binds only once a pod uses it (WaitForFirstConsumer)
// and the claim does not name its volume.
func (c *Controller) delayed(pvc *corev1.PersistentVolumeClaim) bool {
	name := storageClass(pvc)
	if pvc.Spec.VolumeName != "" || name == "" || c.classLister == nil {
		return false
	}
	class, err := c.classLister.Get(name)
	if err != nil {
		return false
	}
	return class.VolumeBindingMode != nil && *class.VolumeBindingMode == storagev1.VolumeBindingWaitForFirstConsumer
}

// bind claims the volume first (its claimRef is the lock: a volume claimed for another claim is
// not taken), then points the claim at it and marks both Bound.
func (c *Controller) bind(ctx context.Context, pvc *corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume) error {
	volume := pv.DeepCopy()
	if volume.Spec.ClaimRef == nil || volume.Spec.ClaimRef.UID == "" {
		volume.Spec.ClaimRef = &corev1.ObjectReference{
			Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: pvc.Namespace, Name: pvc.Name,
			UID: pvc.UID, ResourceVersion: pvc.ResourceVersion,
		}
		updated, err := c.client.CoreV1().PersistentVolumes().Update(ctx, volume, metav1.UpdateOptions{})
		if err != nil {
			return fmt.Errorf("claim volume %s for %s/%s: %w", pv.Name, pvc.Namespace, pvc.Name, err)
		}
		volume = updated
	}
	if volume.Status.Phase != corev1.VolumeBound {
		volume = volume.DeepCopy()
		volume.Status.Phase = corev1.VolumeBound
		if _, err := c.client.CoreV1().PersistentVolumes().UpdateStatus(ctx, volume, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("mark volume %s bound: %w", pv.Name, err)
		}
	}
	claim := pvc.DeepCopy()
	if claim.Spec.VolumeName != volume.Name {
		claim.Spec.VolumeName = volume.Name
		if claim.Annotations == nil {
			claim.Annotations = map[string]string{}
		}
		claim.Annotations["pv.kubernetes.io/bind-completed"] = "yes"
		updated, err := c.client.CoreV1().PersistentVolumeClaims(pvc.Namespace).Update(ctx, claim, metav1.UpdateOptions{})
		if err != nil {
			return fmt.Errorf("point claim %s/%s at %s: %w", pvc.Namespace, pvc.Name, volume.Name, err)
		}
		claim = updated.DeepCopy()
	}
	if pvc.Status.Phase != corev1.ClaimBound {
		// Binding is when the claim learns its volume's attributes class, as Kubernetes' binder
		// sets it (a statically provisioned volume's included); afterwards the CSI resizer that
		// modifies the volume keeps it, so a bound claim's is left alone.
		claim.Status.CurrentVolumeAttributesClassName = volume.Spec.VolumeAttributesClassName
	}
	claim.Status.Phase = corev1.ClaimBound
	claim.Status.AccessModes = volume.Spec.AccessModes
	claim.Status.Capacity = volume.Spec.Capacity
	if _, err := c.client.CoreV1().PersistentVolumeClaims(pvc.Namespace).UpdateStatus(ctx, claim, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("mark claim %s/%s bound: %w", pvc.Namespace, pvc.Name, err)
	}
	return nil
}

// Match picks the volume for a claim: the one it names, else the smallest Available volume of its
// storage class (and selector) that offers its access modes, volume mode and requested storage.
// Volumes already claimed for this claim win, so an interrupted bind resumes. It is pure.
func Match(pvc *corev1.PersistentVolumeClaim, volumes []*corev1.PersistentVolume) *corev1.PersistentVolume {
	var best *corev1.PersistentVolume
	for _, pv := range volumes {
		if ref := pv.Spec.ClaimRef; ref != nil && ref.Namespace == pvc.Namespace && ref.Name == pvc.Name && (ref.UID == "" || ref.UID == pvc.UID) {
			return pv
		}
	}
	for _, pv := range volumes {
		if !fits(pvc, pv) {
			continue
		}
		if pvc.Spec.VolumeName != "" {
			if pv.Name == pvc.Spec.VolumeName {
				return pv
			}
			continue
		}
		if best == nil || storage(pv).Cmp(*storage(best)) < 0 {
			best = pv
		}
	}
	return best
}

func fits(pvc *corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume) bool {
	if pv.DeletionTimestamp != nil || pv.Spec.ClaimRef != nil || (pv.Status.Phase != "" && pv.Status.Phase != corev1.VolumeAvailable && pv.Status.Phase != corev1.VolumePending) {
		return false
	}
	if storageClass(pvc) != pv.Spec.StorageClassName {
		return false
	}
	return volumeutil.SpecFits(pvc, pv)
}

func storage(pv *corev1.PersistentVolume) *resource.Quantity {
	q := pv.Spec.Capacity[corev1.ResourceStorage]
	return &q
}

func storageClass(pvc *corev1.PersistentVolumeClaim) string {
	if pvc.Spec.StorageClassName != nil {
		return *pvc.Spec.StorageClassName
	}
	return ""
}
