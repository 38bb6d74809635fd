package job

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/kubernetes"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/internal/controller/ctrlutil"
)

// Name is the controller's name in --controllers and in metrics.
const Name = "job"

// Backoff before recreating pods after failures: 10s doubling, capped at 6m.
const (
	initialBackoff = 10 * time.Second
	maxBackoff     = 6 * time.Minute
)

// User-visible condition messages, as Kubernetes words them.
const (
	msgCompleted       = "Reached expected number of succeeded pods"
	msgBackoffExceeded = "Job has reached the specified backoff limit"
	msgDeadline        = "Job was active longer than specified deadline"
	msgSuspended       = "Job suspended"
	msgResumed         = "Job resumed"
)

func controllerKind() schema.GroupVersionKind { return batchv1.SchemeGroupVersion.WithKind("Job") }

// Controller reconciles Jobs.
type Controller struct {
	client       kubernetes.Interface
	jobLister    batchlisters.JobLister
	podLister    corelisters.PodLister
	recorder     record.EventRecorder
	clock        clock.PassiveClock
	expectations *ctrlutil.Expectations
	loop         *ctrlutil.Loop
	synced       []cache.InformerSynced
}

// New builds the controller and registers its informers' handlers.
func New(deps ctrlutil.Deps) (*Controller, error) {
	jobInformer := deps.Informers.Batch().V1().Jobs()
	podInformer := deps.Informers.Core().V1().Pods()
	c := &Controller{
		client:       deps.Client,
		jobLister:    jobInformer.Lister(),
		podLister:    podInformer.Lister(),
		recorder:     deps.Recorder,
		clock:        deps.Clock,
		expectations: ctrlutil.NewExpectations(deps.Clock),
		synced:       []cache.InformerSynced{jobInformer.Informer().HasSynced, podInformer.Informer().HasSynced},
	}
	c.loop = ctrlutil.NewLoop(Name, deps, c.Sync)
	if _, err := jobInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.loop.Enqueue,
		UpdateFunc: func(_, o any) { c.loop.Enqueue(o) },
		DeleteFunc: func(o any) {
			if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(o); err == nil {
				c.expectations.Delete(key)
			}
		},
	}); err != nil {
		return nil, fmt.Errorf("job informer handler: %w", err)
	}
	if _, err := podInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(o any) {
			if key := c.ownerKey(o); key != "" {
				c.expectations.CreationObserved(key)
				c.loop.Queue.Add(key)
			}
		},
		UpdateFunc: func(old, o any) {
			if key := c.ownerKey(old); key != "" {
				c.loop.Queue.Add(key)
			}
			if key := c.ownerKey(o); key != "" {
				c.loop.Queue.Add(key)
			}
		},
		DeleteFunc: func(o any) {
			if tomb, ok := o.(cache.DeletedFinalStateUnknown); ok {
				o = tomb.Obj
			}
			if key := c.ownerKey(o); key != "" {
				pod := o.(*corev1.Pod)
				c.expectations.DeletionObserved(key, pod.Namespace+"/"+pod.Name)
				c.loop.Queue.Add(key)
			}
		},
	}); err != nil {
		return nil, fmt.Errorf("pod informer handler: %w", err)
	}
	return c, nil
}

// Run runs workers until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) { c.loop.Run(ctx, workers, c.synced...) }

func (c *Controller) ownerKey(obj any) string {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return ""
	}
	ref := metav1.GetControllerOf(pod)
	if ref == nil || ref.Kind != "Job" || ref.APIVersion != controllerKind().GroupVersion().String() {
		return ""
	}
	job, err := c.jobLister.Jobs(pod.Namespace).Get(ref.Name)
	if err != nil || job.UID != ref.UID {
		return ""
	}
	return pod.Namespace + "/" + job.Name
}

// selectorOf is the Job's selector; a Job stored without one (a server that
// did not default it) gets the controller-uid selector Kubernetes defaults.
func selectorOf(job *batchv1.Job) (labels.Selector, bool, error) {
	if job.Spec.Selector == nil {
		return labels.SelectorFromSet(labels.Set{batchv1.ControllerUidLabel: string(job.UID)}), true, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(job.Spec.Selector)
	return sel, false, err
}

func finishedCondition(job *batchv1.Job) *batchv1.JobCondition {
	for i := range job.Status.Conditions {
		c := &job.Status.Conditions[i]
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return c
		}
	}
	return nil
}

func getCondition(status *batchv1.JobStatus, t batchv1.JobConditionType) *batchv1.JobCondition {
	for i := range status.Conditions {
		if status.Conditions[i].Type == t {
			return &status.Conditions[i]
		}
	}
	return nil
}

// setCondition sets a condition, keeping lastTransitionTime when the status
// is unchanged; it reports whether anything changed.
func setCondition(status *batchv1.JobStatus, t batchv1.JobConditionType, s corev1.ConditionStatus, reason, msg string, now time.Time) bool {
	if cur := getCondition(status, t); cur != nil {
		if cur.Status == s && cur.Reason == reason && cur.Message == msg {
			return false
		}
		if cur.Status != s {
			cur.LastTransitionTime = metav1.NewTime(now)
		}
		cur.Status, cur.Reason, cur.Message, cur.LastProbeTime = s, reason, msg, metav1.NewTime(now)
		return true
	}
	status.Conditions = append(status.Conditions, batchv1.JobCondition{Type: t, Status: s, Reason: reason, Message: msg,
		LastProbeTime: metav1.NewTime(now), LastTransitionTime: metav1.NewTime(now)})
	return true
}

func hasTrackingFinalizer(p *corev1.Pod) bool {
	return slices.Contains(p.Finalizers, batchv1.JobTrackingFinalizer)
}

func isIndexed(job *batchv1.Job) bool {
	return job.Spec.CompletionMode != nil && *job.Spec.CompletionMode == batchv1.IndexedCompletion
}

// podIndex reads the completion index of an Indexed Job's pod.
func podIndex(p *corev1.Pod) (int, bool) {
	v, ok := p.Annotations[batchv1.JobCompletionIndexAnnotation]
	if !ok {
		v, ok = p.Labels[batchv1.JobCompletionIndexAnnotation]
	}
	if !ok {
		return 0, false
	}
	i, err := strconv.Atoi(v)
	return i, err == nil && i >= 0
}

// Sync reconciles the Job with the given namespace/name key.
func (c *Controller) Sync(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	cached, err := c.jobLister.Jobs(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		c.expectations.Delete(key)
		return nil
	}
	if err != nil {
		return fmt.Errorf("get job %s: %w", key, err)
	}
	job := cached.DeepCopy()
	selector, defaulted, err := selectorOf(job)
	if err != nil {
		c.recorder.Eventf(job, corev1.EventTypeWarning, "InvalidSelector", "invalid selector: %v", err)
		return nil
	}
	pods, err := c.claimPods(ctx, job, selector)
	if err != nil {
		return err
	}
	if finishedCondition(job) != nil {
		// Finished: only let go of pods still held by the tracking finalizer.
		_, err := c.removeFinalizers(ctx, filter(pods, hasTrackingFinalizer))
		return err
	}
	needsSync := c.expectations.Satisfied(key)
	now := c.clock.Now()
	status := job.Status.DeepCopy()
	if status.UncountedTerminatedPods == nil {
		status.UncountedTerminatedPods = &batchv1.UncountedTerminatedPods{}
	}
	completions := int(ptr.Deref(job.Spec.Completions, 0))
	completed := map[int]bool{}
	if isIndexed(job) {
		completed = parseIndexes(status.CompletedIndexes, completions)
	}

	// Finished pods are counted exactly once: first recorded by UID in
	// uncountedTerminatedPods (durable in status), then their finalizer is
	// removed, then they move into succeeded/failed.
	uncSucceeded := sets.New(status.UncountedTerminatedPods.Succeeded...)
	uncFailed := sets.New(status.UncountedTerminatedPods.Failed...)
	var release []*corev1.Pod
	recorded := false
	for _, p := range pods {
		if !hasTrackingFinalizer(p) {
			continue
		}
		switch {
		case p.Status.Phase == corev1.PodSucceeded:
			if !uncSucceeded.Has(p.UID) {
				uncSucceeded.Insert(p.UID)
				recorded = true
			}
			if i, ok := podIndex(p); ok && isIndexed(job) && i < completions {
				completed[i] = true
			}
			release = append(release, p)
		case p.Status.Phase == corev1.PodFailed:
			if !uncFailed.Has(p.UID) {
				uncFailed.Insert(p.UID)
				recorded = true
			}
			release = append(release, p)
		case p.DeletionTimestamp != nil:
			release = append(release, p)
		}
	}
	if isIndexed(job) {
		status.CompletedIndexes = formatIndexes(completed)
	}
	if recorded {
		status.UncountedTerminatedPods.Succeeded = sortedUIDs(uncSucceeded)
		status.UncountedTerminatedPods.Failed = sortedUIDs(uncFailed)
		if err := c.writeStatus(ctx, job, status); err != nil {
			return err
		}
	}
	released, releaseErr := c.removeFinalizers(ctx, release)
	byUID := map[types.UID]*corev1.Pod{}
	for _, p := range pods {
		byUID[p.UID] = p
	}
	settled := func(uid types.UID) bool {
		p, ok := byUID[uid]
		return !ok || !hasTrackingFinalizer(p) || released.Has(uid)
	}
	for uid := range uncSucceeded {
		if settled(uid) {
			uncSucceeded.Delete(uid)
			status.Succeeded++
		}
	}
	for uid := range uncFailed {
		if settled(uid) {
			uncFailed.Delete(uid)
			status.Failed++
		}
	}
	status.UncountedTerminatedPods.Succeeded = sortedUIDs(uncSucceeded)
	status.UncountedTerminatedPods.Failed = sortedUIDs(uncFailed)

	succeeded := int(status.Succeeded) + uncSucceeded.Len()
	failed := int(status.Failed) + uncFailed.Len()
	var active []*corev1.Pod
	terminating := 0
	for _, p := range pods {
		switch {
		case p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed:
		case p.DeletionTimestamp != nil:
			terminating++
		default:
			active = append(active, p)
		}
	}

	var manageErr error
	failureReason, failureMsg := "", ""
	if ft := getCondition(status, batchv1.JobFailureTarget); ft != nil && ft.Status == corev1.ConditionTrue {
		failureReason, failureMsg = ft.Reason, ft.Message
	} else if job.Spec.BackoffLimit != nil && failed > int(*job.Spec.BackoffLimit) {
		failureReason, failureMsg = batchv1.JobReasonBackoffLimitExceeded, msgBackoffExceeded
	} else if deadlinePassed(job, status, now) {
		failureReason, failureMsg = batchv1.JobReasonDeadlineExceeded, msgDeadline
	}
	complete := false
	if smc := getCondition(status, batchv1.JobSuccessCriteriaMet); smc != nil && smc.Status == corev1.ConditionTrue {
		complete = true
	} else if isIndexed(job) {
		complete = len(completed) >= completions
	} else if job.Spec.Completions != nil {
		complete = succeeded >= completions
	} else {
		complete = succeeded > 0 && len(active) == 0
	}
	suspended := ptr.Deref(job.Spec.Suspend, false)

	switch {
	case failureReason != "":
		manageErr = c.deletePods(ctx, key, job, active)
		setCondition(status, batchv1.JobFailureTarget, corev1.ConditionTrue, failureReason, failureMsg, now)
		if len(active) == 0 && terminating == 0 {
			setCondition(status, batchv1.JobFailed, corev1.ConditionTrue, failureReason, failureMsg, now)
			c.recorder.Event(job, corev1.EventTypeWarning, failureReason, failureMsg)
		}
		active = nil
	case complete:
		manageErr = c.deletePods(ctx, key, job, active)
		setCondition(status, batchv1.JobSuccessCriteriaMet, corev1.ConditionTrue, batchv1.JobReasonCompletionsReached, msgCompleted, now)
		if len(active) == 0 && terminating == 0 {
			setCondition(status, batchv1.JobComplete, corev1.ConditionTrue, batchv1.JobReasonCompletionsReached, msgCompleted, now)
			status.CompletionTime = ptr.To(metav1.NewTime(now))
			c.recorder.Event(job, corev1.EventTypeNormal, "Completed", "Job completed")
		}
		active = nil
	case suspended:
		manageErr = c.deletePods(ctx, key, job, active)
		if setCondition(status, batchv1.JobSuspended, corev1.ConditionTrue, "JobSuspended", msgSuspended, now) {
			c.recorder.Event(job, corev1.EventTypeNormal, "Suspended", msgSuspended)
		}
		status.StartTime = nil
		active = nil
	default:
		if cond := getCondition(status, batchv1.JobSuspended); cond != nil && cond.Status == corev1.ConditionTrue {
			setCondition(status, batchv1.JobSuspended, corev1.ConditionFalse, "JobResumed", msgResumed, now)
			c.recorder.Event(job, corev1.EventTypeNormal, "Resumed", msgResumed)
			status.StartTime = nil
		}
		if status.StartTime == nil {
			status.StartTime = ptr.To(metav1.NewTime(now))
		}
		if needsSync {
			active, manageErr = c.manage(ctx, key, job, defaulted, active, succeeded, failed, completed, pods, now)
		}
		if job.Spec.ActiveDeadlineSeconds != nil {
			left := status.StartTime.Add(time.Duration(*job.Spec.ActiveDeadlineSeconds) * time.Second).Sub(now)
			c.loop.EnqueueAfter(key, max(left, 0))
		}
	}

	status.Active = int32(len(active))
	var ready int32
	for _, p := range active {
		if ctrlutil.IsPodReady(p) {
			ready++
		}
	}
	status.Ready = &ready
	status.Terminating = ptr.To(int32(terminating))
	if err := c.writeStatus(ctx, job, status); err != nil {
		return errors.Join(manageErr, releaseErr, err)
	}
	return errors.Join(manageErr, releaseErr)
}

func deadlinePassed(job *batchv1.Job, status *batchv1.JobStatus, now time.Time) bool {
	if job.Spec.ActiveDeadlineSeconds == nil || status.StartTime == nil || ptr.Deref(job.Spec.Suspend, false) {
		return false
	}
	return !now.Before(status.StartTime.Add(time.Duration(*job.Spec.ActiveDeadlineSeconds) * time.Second))
}

func sortedUIDs(s sets.Set[types.UID]) []types.UID {
	// Empty is nil: the API server drops empty lists, and a non-nil empty
	// slice would differ from the cached status forever.
	if s.Len() == 0 {
		return nil
	}
	out := s.UnsortedList()
	slices.Sort(out)
	return out
}

func filter(pods []*corev1.Pod, keep func(*corev1.Pod) bool) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range pods {
		if keep(p) {
			out = append(out, p)
		}
	}
	return out
}

func (c *Controller) writeStatus(ctx context.Context, job *batchv1.Job, status *batchv1.JobStatus) error {
	if reflect.DeepEqual(&job.Status, status) {
		return nil
	}
	job.Status = *status.DeepCopy()
	updated, err := c.client.BatchV1().Jobs(job.Namespace).UpdateStatus(ctx, job, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("update status of job %s/%s: %w", job.Namespace, job.Name, err)
	}
	job.ResourceVersion = updated.ResourceVersion
	return nil
}

// removeFinalizers drops the tracking finalizer from pods, returning the UIDs done.
func (c *Controller) removeFinalizers(ctx context.Context, pods []*corev1.Pod) (sets.Set[types.UID], error) {
	done := sets.New[types.UID]()
	var errs []error
	for _, p := range byName(pods) {
		if !hasTrackingFinalizer(p) {
			continue
		}
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{
			"$deleteFromPrimitiveList/finalizers": []string{batchv1.JobTrackingFinalizer}}})
		_, err := c.client.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("remove tracking finalizer from pod %s/%s: %w", p.Namespace, p.Name, err))
			continue
		}
		done.Insert(p.UID)
	}
	return done, errors.Join(errs...)
}

func (c *Controller) claimPods(ctx context.Context, job *batchv1.Job, selector labels.Selector) ([]*corev1.Pod, error) {
	all, err := c.podLister.Pods(job.Namespace).List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("list pods of job %s/%s: %w", job.Namespace, job.Name, err)
	}
	var owned []*corev1.Pod
	var errs []error
	for _, p := range byName(all) {
		decision := ctrlutil.DecideClaim(p, job.UID, selector, job.DeletionTimestamp != nil)
		if decision == ctrlutil.Adopt && !ctrlutil.IsPodActive(p) {
			continue // a finished orphan is history, not ours to count
		}
		mine, err := ctrlutil.ClaimPod(ctx, c.client, p, decision, ctrlutil.NewControllerRef(job, controllerKind()))
		if err != nil {
			errs = append(errs, err)
		}
		if mine {
			owned = append(owned, p)
		}
	}
	return owned, errors.Join(errs...)
}

// manage creates and deletes pods so the right number (and, for Indexed
// Jobs, the right indexes) run; it returns the pods still active.
func (c *Controller) manage(ctx context.Context, key string, job *batchv1.Job, defaultedSelector bool, active []*corev1.Pod,
	succeeded, failed int, completed map[int]bool, all []*corev1.Pod, now time.Time) ([]*corev1.Pod, error) {
	parallelism := int(ptr.Deref(job.Spec.Parallelism, 1))
	var excess []*corev1.Pod
	var create []int // completion indexes to create; -1 for NonIndexed pods
	if isIndexed(job) {
		completions := int(ptr.Deref(job.Spec.Completions, 0))
		seen := map[int]bool{}
		var keep []*corev1.Pod
		for _, p := range active {
			i, ok := podIndex(p)
			if !ok || i >= completions || completed[i] || seen[i] {
				excess = append(excess, p)
				continue
			}
			seen[i] = true
			keep = append(keep, p)
		}
		want := min(parallelism, completions-len(completed))
		if len(keep) > want {
			ctrlutil.SortPodsForDeletion(keep, nil)
			excess = append(excess, keep[:len(keep)-want]...)
			keep = keep[len(keep)-want:]
		}
		for i := 0; i < completions && len(keep)+len(create) < want; i++ {
			if !completed[i] && !seen[i] {
				create = append(create, i)
			}
		}
		active = keep
	} else {
		want := parallelism
		if job.Spec.Completions != nil {
			want = min(parallelism, int(*job.Spec.Completions)-succeeded)
		} else if succeeded > 0 {
			want = len(active) // a work queue: once one succeeded, start no more
		}
		want = max(want, 0)
		if len(active) > want {
			sorted := slices.Clone(active)
			ctrlutil.SortPodsForDeletion(sorted, nil)
			excess = sorted[:len(active)-want]
			active = sorted[len(active)-want:]
		}
		for range max(want-len(active), 0) {
			create = append(create, -1)
		}
	}
	if err := c.deletePods(ctx, key, job, excess); err != nil {
		return active, err
	}
	if len(create) == 0 {
		return active, nil
	}
	if wait := c.backoffRemaining(failed, all, now); wait > 0 {
		c.loop.EnqueueAfter(key, wait)
		return active, nil
	}
	create = create[:min(len(create), 500)]
	c.expectations.ExpectCreations(key, len(create))
	ref := ctrlutil.NewControllerRef(job, controllerKind())
	var mu sync.Mutex
	next := 0
	successes, err := ctrlutil.SlowStartBatch(len(create), 1, func() error {
		mu.Lock()
		index := create[next]
		next++
		mu.Unlock()
		pod := podForJob(job, index, ref, defaultedSelector)
		createdPod, err := c.client.CoreV1().Pods(job.Namespace).Create(ctx, pod, metav1.CreateOptions{})
		if err != nil {
			c.recorder.Eventf(job, corev1.EventTypeWarning, "FailedCreate", "Error creating: %v", err)
			return err
		}
		c.recorder.Eventf(job, corev1.EventTypeNormal, "SuccessfulCreate", "Created pod: %s", createdPod.Name)
		mu.Lock()
		active = append(active, createdPod)
		mu.Unlock()
		return nil
	})
	if skipped := len(create) - successes; skipped > 0 {
		c.expectations.LowerCreations(key, skipped)
	}
	if err != nil {
		return active, fmt.Errorf("create pods for job %s: %w", key, err)
	}
	return active, nil
}

// backoffRemaining is how long replacements must still wait after the most
// recent pod failure (10s doubling per failure, at most 6m).
func (c *Controller) backoffRemaining(failed int, pods []*corev1.Pod, now time.Time) time.Duration {
	if failed == 0 {
		return 0
	}
	var last time.Time
	for _, p := range pods {
		if p.Status.Phase != corev1.PodFailed {
			continue
		}
		for _, s := range p.Status.ContainerStatuses {
			if t := s.State.Terminated; t != nil && t.FinishedAt.After(last) {
				last = t.FinishedAt.Time
			}
		}
	}
	if last.IsZero() {
		return 0
	}
	delay := initialBackoff
	for i := 1; i < failed && delay < maxBackoff; i++ {
		delay *= 2
	}
	delay = min(delay, maxBackoff)
	return max(last.Add(delay).Sub(now), 0)
}

// podForJob builds one pod: the template, our controllerRef, the tracking
// finalizer and, for Indexed Jobs, the completion index (annotation, label,
// hostname and JOB_COMPLETION_INDEX).
func podForJob(job *batchv1.Job, index int, ref *metav1.OwnerReference, defaultedSelector bool) *corev1.Pod {
	pod := ctrlutil.PodFromTemplate(&job.Spec.Template, job.Namespace, job.Name, ref)
	pod.Finalizers = append(pod.Finalizers, batchv1.JobTrackingFinalizer)
	if defaultedSelector {
		if pod.Labels == nil {
			pod.Labels = map[string]string{}
		}
		pod.Labels[batchv1.ControllerUidLabel] = string(job.UID)
		pod.Labels[batchv1.JobNameLabel] = job.Name
	}
	if index < 0 {
		return pod
	}
	idx := strconv.Itoa(index)
	pod.GenerateName = fmt.Sprintf("%s-%d-", job.Name, index)
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Annotations[batchv1.JobCompletionIndexAnnotation] = idx
	pod.Labels[batchv1.JobCompletionIndexAnnotation] = idx
	if pod.Spec.Hostname == "" {
		pod.Spec.Hostname = fmt.Sprintf("%s-%d", job.Name, index)
	}
	env := corev1.EnvVar{Name: "JOB_COMPLETION_INDEX", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{
		FieldPath: fmt.Sprintf("metadata.annotations['%s']", batchv1.JobCompletionIndexAnnotation)}}}
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			if !slices.ContainsFunc(list[i].Env, func(e corev1.EnvVar) bool { return e.Name == env.Name }) {
				list[i].Env = append(list[i].Env, env)
			}
		}
	}
	return pod
}

// deletePods deletes pods (the controller's own decision, e.g. excess,
// suspension, failure); each counts as an expected deletion.
func (c *Controller) deletePods(ctx context.Context, key string, job *batchv1.Job, pods []*corev1.Pod) error {
	if len(pods) == 0 {
		return nil
	}
	pods = byName(pods)
	keys := make([]string, len(pods))
	for i, p := range pods {
		keys[i] = p.Namespace + "/" + p.Name
	}
	c.expectations.ExpectDeletions(key, keys)
	var errs []error
	for _, p := range pods {
		err := c.client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{})
		if err != nil {
			c.expectations.DeletionObserved(key, p.Namespace+"/"+p.Name)
			if !apierrors.IsNotFound(err) {
				c.recorder.Eventf(job, corev1.EventTypeWarning, "FailedDelete", "Error deleting: %v", err)
				errs = append(errs, fmt.Errorf("delete pod %s/%s: %w", p.Namespace, p.Name, err))
			}
			continue
		}
		c.recorder.Eventf(job, corev1.EventTypeNormal, "SuccessfulDelete", "Deleted pod: %s", p.Name)
	}
	return errors.Join(errs...)
}

// byName orders pods by name: listers return them in no particular order, and writing in name
// order keeps the controller's actions repeatable.
func byName(pods []*corev1.Pod) []*corev1.Pod {
	out := slices.Clone(pods)
	slices.SortFunc(out, func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	return out
}
