package ephemeral

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/internal/controller/ctrlutil"
	"github.com/skiff-sh/skiff/internal/volumeutil"
)

// Name is the controller's name in --controllers and in metrics (kube-controller-manager's alias).
const Name = "ephemeral-volume"

// podClaimIndex indexes pods by the "namespace/name" of the claims their ephemeral volumes make.
const podClaimIndex = "ephemeral-claims"

// Conflict is an ephemeral volume whose claim exists but is not the pod's.
type Conflict struct {
	Volume string
	Err    error
}

// Plan is what Decide wants done for a pod.
type Plan struct {
	Create    []*corev1.PersistentVolumeClaim
	Conflicts []Conflict
}

// Decide plans the claims of pod's generic ephemeral volumes; getClaim looks a claim of the pod's
// namespace up (nil when there is none). It is pure.
func Decide(pod *corev1.Pod, getClaim func(name string) *corev1.PersistentVolumeClaim) Plan {
	var plan Plan
	if pod.DeletionTimestamp != nil {
		return plan
	}
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		if v.Ephemeral == nil || v.Ephemeral.VolumeClaimTemplate == nil {
			continue
		}
		name := volumeutil.EphemeralClaimName(pod, v)
		if existing := getClaim(name); existing != nil {
			if !metav1.IsControlledBy(existing, pod) {
				plan.Conflicts = append(plan.Conflicts, Conflict{Volume: v.Name,
					Err: fmt.Errorf("PVC %s/%s was not created for pod %s/%s (pod is not owner)", pod.Namespace, name, pod.Namespace, pod.Name)})
			}
			continue
		}
		template := v.Ephemeral.VolumeClaimTemplate
		plan.Create = append(plan.Create, &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{
				Name: name, Namespace: pod.Namespace,
				Labels: template.Labels, Annotations: template.Annotations,
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID,
					Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}},
			},
			Spec: *template.Spec.DeepCopy(),
		})
	}
	return plan
}

// Controller makes the claims of pods' generic ephemeral volumes.
type Controller struct {
	client   kubernetes.Interface
	pods     corelisters.PodLister
	podIndex cache.Indexer
	claims   corelisters.PersistentVolumeClaimLister
	recorder record.EventRecorder
	loop     *ctrlutil.Loop
	synced   []cache.InformerSynced
}

// New builds the controller on deps' shared informers.
func New(deps ctrlutil.Deps) (*Controller, error) {
	pods, claims := deps.Informers.Core().V1().Pods(), deps.Informers.Core().V1().PersistentVolumeClaims()
	c := &Controller{
		client: deps.Client, pods: pods.Lister(), podIndex: pods.Informer().GetIndexer(), claims: claims.Lister(),
		recorder: deps.Recorder,
		synced:   []cache.InformerSynced{pods.Informer().HasSynced, claims.Informer().HasSynced},
	}
	c.loop = ctrlutil.NewLoop(Name, deps, c.Sync)
	if err := pods.Informer().AddIndexers(cache.Indexers{podClaimIndex: func(o any) ([]string, error) {
		pod, ok := o.(*corev1.Pod)
		if !ok {
			return nil, nil
		}
		var keys []string
		for i := range pod.Spec.Volumes {
			if v := &pod.Spec.Volumes[i]; v.Ephemeral != nil {
				keys = append(keys, pod.Namespace+"/"+volumeutil.EphemeralClaimName(pod, v))
			}
		}
		return keys, nil
	}}); err != nil {
		return nil, fmt.Errorf("pod index: %w", err)
	}
	enqueue := func(o any) {
		if pod, ok := o.(*corev1.Pod); ok && pod.DeletionTimestamp == nil && hasEphemeral(pod) {
			c.loop.Enqueue(pod)
		}
	}
	if _, err := pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: enqueue}); err != nil {
		return nil, fmt.Errorf("pod event handler: %w", err)
	}
	// A claim deleted while its pod lives is made again.
	if _, err := claims.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: func(o any) {
		if t, ok := o.(cache.DeletedFinalStateUnknown); ok {
			o = t.Obj
		}
		pvc, ok := o.(*corev1.PersistentVolumeClaim)
		if !ok {
			return
		}
		objs, err := c.podIndex.ByIndex(podClaimIndex, pvc.Namespace+"/"+pvc.Name)
		if err != nil {
			return
		}
		for _, p := range objs {
			enqueue(p)
		}
	}}); err != nil {
		return nil, fmt.Errorf("claim event handler: %w", err)
	}
	return c, nil
}

func hasEphemeral(pod *corev1.Pod) bool {
	for i := range pod.Spec.Volumes {
		if pod.Spec.Volumes[i].Ephemeral != nil {
			return true
		}
	}
	return false
}

// Run runs workers until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) {
	c.loop.Run(ctx, workers, c.synced...)
}

// Sync makes the missing claims of the pod named by key ("namespace/name").
func (c *Controller) Sync(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return err
	}
	pod, err := c.pods.Pods(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	plan := Decide(pod, func(name string) *corev1.PersistentVolumeClaim {
		pvc, _ := c.claims.PersistentVolumeClaims(namespace).Get(name)
		return pvc
	})
	var errs []error
	for _, conflict := range plan.Conflicts {
		c.recorder.Event(pod, corev1.EventTypeWarning, "FailedBinding", fmt.Sprintf("ephemeral volume %s: %v", conflict.Volume, conflict.Err))
		errs = append(errs, fmt.Errorf("pod %s, ephemeral volume %s: %w", key, conflict.Volume, conflict.Err))
	}
	for _, pvc := range plan.Create {
		_, err := c.client.CoreV1().PersistentVolumeClaims(namespace).Create(ctx, pvc, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			c.recorder.Event(pod, corev1.EventTypeWarning, "FailedBinding", fmt.Sprintf("ephemeral volume %s: create PVC %s: %v", strings.TrimPrefix(pvc.Name, pod.Name+"-"), pvc.Name, err))
			errs = append(errs, fmt.Errorf("pod %s: create PVC %s: %w", key, pvc.Name, err))
		}
	}
	return errors.Join(errs...)
}
