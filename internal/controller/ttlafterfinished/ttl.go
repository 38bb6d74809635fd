package ttlafterfinished

import (
	"context"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/skiff-sh/skiff/internal/controller/ctrlutil"
)

// Name is the controller's name in --controllers and in metrics.
const Name = "ttl-after-finished"

// Controller deletes expired finished Jobs.
type Controller struct {
	client kubernetes.Interface
	lister batchlisters.JobLister
	clock  clock.PassiveClock
	loop   *ctrlutil.Loop
	synced cache.InformerSynced
}

// New builds the controller and registers its informer handler.
func New(deps ctrlutil.Deps) (*Controller, error) {
	inf := deps.Informers.Batch().V1().Jobs()
	c := &Controller{client: deps.Client, lister: inf.Lister(), clock: deps.Clock, synced: inf.Informer().HasSynced}
	c.loop = ctrlutil.NewLoop(Name, deps, c.Sync)
	enqueue := func(o any) {
		if j, ok := o.(*batchv1.Job); ok && j.DeletionTimestamp == nil && j.Spec.TTLSecondsAfterFinished != nil {
			c.loop.Enqueue(j)
		}
	}
	if _, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, o any) { enqueue(o) },
	}); err != nil {
		return nil, fmt.Errorf("job informer handler: %w", err)
	}
	return c, nil
}

// Run runs workers until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) { c.loop.Run(ctx, workers, c.synced) }

// expiry returns when j expires, and false when it has no TTL or is not finished.
func expiry(j *batchv1.Job) (time.Time, bool) {
	if j.Spec.TTLSecondsAfterFinished == nil || j.DeletionTimestamp != nil {
		return time.Time{}, false
	}
	var finished time.Time
	for _, c := range j.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			finished = c.LastTransitionTime.Time
			if c.Type == batchv1.JobComplete && j.Status.CompletionTime != nil {
				finished = j.Status.CompletionTime.Time
			}
		}
	}
	if finished.IsZero() {
		return time.Time{}, false
	}
	return finished.Add(time.Duration(*j.Spec.TTLSecondsAfterFinished) * time.Second), true
}

// Sync deletes the Job if it expired, else requeues it for its expiry.
func (c *Controller) Sync(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	cached, err := c.lister.Jobs(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get job %s: %w", key, err)
	}
	at, ok := expiry(cached)
	if !ok {
		return nil
	}
	if left := at.Sub(c.clock.Now()); left > 0 {
		c.loop.EnqueueAfter(key, left)
		return nil
	}
	// The cache may be stale: decide again on the live object.
	fresh, err := c.client.BatchV1().Jobs(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get job %s: %w", key, err)
	}
	at, ok = expiry(fresh)
	if !ok {
		return nil
	}
	if left := at.Sub(c.clock.Now()); left > 0 {
		c.loop.EnqueueAfter(key, left)
		return nil
	}
	policy := metav1.DeletePropagationForeground
	err = c.client.BatchV1().Jobs(namespace).Delete(ctx, name, metav1.DeleteOptions{
		PropagationPolicy: &policy,
		Preconditions:     &metav1.Preconditions{UID: &fresh.UID, ResourceVersion: &fresh.ResourceVersion},
	})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete expired job %s: %w", key, err)
	}
	return nil
}
