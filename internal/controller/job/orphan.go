package job

import (
	"context"
	"sync"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/cache"

	"github.com/skiff-sh/skiff/internal/controller/ctrlutil"
)

// orphanKeyPrefix marks work-queue keys naming a pod (namespace/name) whose
// tracking finalizer may have no Job left to remove it. Namespaces cannot
// contain ':', so these keys never collide with a Job's key.
const orphanKeyPrefix = "orphan-pod:"

func orphanKey(p *corev1.Pod) string { return orphanKeyPrefix + p.Namespace + "/" + p.Name }

func (c *Controller) addPod(o any) {
	pod, ok := o.(*corev1.Pod)
	if !ok {
		return
	}
	if key := c.ownerKey(pod); key != "" {
		c.expectations.CreationObserved(key)
		c.loop.Queue.Add(key)
	}
	c.enqueueIfOrphan(pod)
}

func (c *Controller) updatePod(old, o any) {
	oldPod, ok1 := old.(*corev1.Pod)
	pod, ok2 := o.(*corev1.Pod)
	if !ok1 || !ok2 {
		return
	}
	if key := c.ownerKey(oldPod); key != "" {
		c.loop.Queue.Add(key)
	}
	if key := c.ownerKey(pod); key != "" {
		if !hasTrackingFinalizer(pod) {
			c.releasing.observed(key, pod.UID)
		}
		if pod.DeletionTimestamp != nil {
			// Graceful deletion: the deletion the Job asked for has happened
			// even though the pod object remains for a while.
			c.expectations.DeletionObserved(key, pod.Namespace+"/"+pod.Name)
		}
		c.loop.Queue.Add(key)
	}
	c.enqueueIfOrphan(pod)
}

func (c *Controller) deletePod(o any) {
	pod, ok := ctrlutil.Unwrap[*corev1.Pod](o)
	if !ok {
		return
	}
	if key := c.ownerKey(pod); key != "" {
		c.expectations.DeletionObserved(key, pod.Namespace+"/"+pod.Name)
		c.releasing.observed(key, pod.UID)
		c.loop.Queue.Add(key)
	}
}

// deleteJob hands the Job's pods that still hold the tracking finalizer to
// the orphan path: nothing else would release them (a Job deleted with
// propagationPolicy=Orphan leaves them behind, and they would block their
// namespace's deletion forever).
func (c *Controller) deleteJob(o any) {
	job, ok := ctrlutil.Unwrap[*batchv1.Job](o)
	if !ok {
		return
	}
	key := job.Namespace + "/" + job.Name
	c.expectations.Delete(key)
	c.releasing.forget(key)
	pods, err := c.podLister.Pods(job.Namespace).List(labels.Everything())
	if err != nil {
		return
	}
	for _, p := range pods {
		if metav1.IsControlledBy(p, job) && hasTrackingFinalizer(p) {
			c.loop.Queue.Add(orphanKey(p))
		}
	}
}

// enqueueIfOrphan queues a pod that holds the tracking finalizer but has no
// live Job to remove it: no controller at all (released, or its Job was
// deleted with orphaning), or a Job controller that is gone or finished. The
// sync checks again against the synced caches before touching the pod.
func (c *Controller) enqueueIfOrphan(p *corev1.Pod) {
	if !hasTrackingFinalizer(p) {
		return
	}
	ref := metav1.GetControllerOf(p)
	if ref != nil && !isJobRef(ref) {
		return
	}
	if ref != nil {
		if job := c.resolveJob(p.Namespace, ref); job != nil && finishedCondition(job) == nil {
			return
		}
	}
	c.loop.Queue.Add(orphanKey(p))
}

func isJobRef(ref *metav1.OwnerReference) bool {
	return ref.Kind == controllerKind().Kind && ref.APIVersion == controllerKind().GroupVersion().String()
}

// resolveJob is the cached Job a controllerRef names, nil when it is gone or
// a different Job of the same name.
func (c *Controller) resolveJob(namespace string, ref *metav1.OwnerReference) *batchv1.Job {
	job, err := c.jobLister.Jobs(namespace).Get(ref.Name)
	if err != nil || job.UID != ref.UID {
		return nil
	}
	return job
}

// syncOrphanPod removes the tracking finalizer from a pod no live Job owns.
// A pod controlled by something other than a Job is left alone, as is one
// whose Job is alive and unfinished (that Job's sync tracks it).
func (c *Controller) syncOrphanPod(ctx context.Context, podKey string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(podKey)
	if err != nil {
		return nil
	}
	pod, err := c.podLister.Pods(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if !hasTrackingFinalizer(pod) {
		return nil
	}
	if ref := metav1.GetControllerOf(pod); ref != nil {
		if !isJobRef(ref) {
			return nil
		}
		if job := c.resolveJob(namespace, ref); job != nil && finishedCondition(job) == nil {
			return nil
		}
	}
	_, err = c.removeFinalizers(ctx, "", []*corev1.Pod{pod})
	return err
}

// releaseExpectations remembers, per Job key, the pods whose tracking
// finalizer removal was sent but not yet observed: until the cache catches
// up, such a pod must not be counted again.
type releaseExpectations struct {
	mu    sync.Mutex
	byJob map[string]sets.Set[types.UID]
}

func newReleaseExpectations() *releaseExpectations {
	return &releaseExpectations{byJob: map[string]sets.Set[types.UID]{}}
}

func (r *releaseExpectations) expect(key string, uid types.UID) {
	if key == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byJob[key] == nil {
		r.byJob[key] = sets.New[types.UID]()
	}
	r.byJob[key].Insert(uid)
}

func (r *releaseExpectations) observed(key string, uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if set := r.byJob[key]; set != nil {
		set.Delete(uid)
		if set.Len() == 0 {
			delete(r.byJob, key)
		}
	}
}

// get returns a copy, safe to read while handlers change the original.
func (r *releaseExpectations) get(key string) sets.Set[types.UID] {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.byJob[key].Clone()
}

func (r *releaseExpectations) forget(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.byJob, key)
}
