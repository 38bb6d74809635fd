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
	// Kubernetes words these two differently from the backoff-limit message.
	msgMaxFailedIndexes = "Job has exceeded the specified maximal number of failed indexes"
	msgFailedIndexes    = "Job has failed indexes"
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
	// releasing remembers the pods whose finalizer removal was issued until
	// the cache shows it, so a stale cache cannot count them twice.
	releasing *releaseExpectations
	loop      *ctrlutil.Loop
	synced    []cache.InformerSynced
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
		releasing:    newReleaseExpectations(),
	}
	c.loop = ctrlutil.NewLoop(Name, deps, c.Sync)
	jobHandlers := ctrlutil.On(ctrlutil.OnAdd|ctrlutil.OnUpdate, c.loop.Enqueue)
	jobHandlers.DeleteFunc = c.deleteJob
	var err error
	c.synced, err = ctrlutil.NewWiring(Name).
		Watch(jobInformer.Informer(), jobHandlers).
		Watch(podInformer.Informer(), cache.ResourceEventHandlerFuncs{AddFunc: c.addPod, UpdateFunc: c.updatePod, DeleteFunc: c.deletePod}).
		Done()
	if err != nil {
		return nil, err
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

// syncState is what one sync learned from the Job's pods, before acting.
type syncState struct {
	job  *batchv1.Job
	pods []*corev1.Pod
	// active pods are neither finished nor being deleted.
	active []*corev1.Pod
	// terminating pods are being deleted but not yet Succeeded or Failed.
	terminating    int
	terminatingIdx map[int]bool
	// succeeded and failed count finished pods, recorded or not; failures an
	// Ignore rule matched are not counted.
	succeeded, failed int
	// completed are the succeeded indexes of an Indexed Job.
	completed map[int]bool
	// failedIdx are the failed indexes; nil unless backoffLimitPerIndex is set.
	failedIdx map[int]bool
	// delayed holds, per index, the failed pod whose finalizer stays until its
	// replacement exists, so the replacement can inherit its failure count.
	delayed map[int]*corev1.Pod
	// failJobMsg is set when a failed pod matched a FailJob rule.
	failJobMsg string
	// releasing are pods whose finalizer removal was issued but not yet seen
	// in the cache: they are counted already.
	releasing sets.Set[types.UID]
}

// tracked reports whether the pod still holds the tracking finalizer as far
// as the controller knows.
func (s *syncState) tracked(p *corev1.Pod) bool {
	return hasTrackingFinalizer(p) && !s.releasing.Has(p.UID)
}

// index is the pod's completion index and whether the Job counts it: always
// for NonIndexed Jobs, only for an index below completions otherwise.
func (s *syncState) index(p *corev1.Pod) (int, bool) {
	if !isIndexed(s.job) {
		return -1, true
	}
	i, ok := podIndex(p)
	return i, ok && i < int(ptr.Deref(s.job.Spec.Completions, 0))
}

// onlyReplaceFailedPods: with a podFailurePolicy or podReplacementPolicy
// Failed, a terminating pod is neither failed nor replaced until it reaches a
// terminal phase, so the policy can judge its exit codes and conditions.
func onlyReplaceFailedPods(job *batchv1.Job) bool {
	return job.Spec.PodFailurePolicy != nil || ptr.Deref(job.Spec.PodReplacementPolicy, "") == batchv1.Failed
}

// isPodFailed: a Failed pod, or (unless only failed pods are replaced) one
// deleted before it succeeded, which may never reach the Failed phase.
func isPodFailed(p *corev1.Pod, job *batchv1.Job) bool {
	if p.Status.Phase == corev1.PodFailed {
		return true
	}
	if onlyReplaceFailedPods(job) {
		return false
	}
	return p.DeletionTimestamp != nil && p.Status.Phase != corev1.PodSucceeded
}

// observe classifies the Job's pods and counts what finished.
func observe(job *batchv1.Job, status *batchv1.JobStatus, pods []*corev1.Pod, releasing sets.Set[types.UID]) *syncState {
	s := &syncState{job: job, pods: pods, terminatingIdx: map[int]bool{}, completed: map[int]bool{}, releasing: releasing}
	indexed := isIndexed(job)
	completions := int(ptr.Deref(job.Spec.Completions, 0))
	if indexed {
		s.completed = parseIndexes(status.CompletedIndexes, completions)
		if job.Spec.BackoffLimitPerIndex != nil {
			s.failedIdx = parseIndexes(ptr.Deref(status.FailedIndexes, ""), completions)
		}
	}
	uncSucceeded := sets.New(status.UncountedTerminatedPods.Succeeded...)
	uncFailed := sets.New(status.UncountedTerminatedPods.Failed...)
	newSucceeded, newFailed := 0, 0
	for _, p := range byName(pods) {
		failed := isPodFailed(p, job)
		switch {
		case p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed:
		case p.DeletionTimestamp != nil:
			s.terminating++
			if i, ok := podIndex(p); ok {
				s.terminatingIdx[i] = true
			}
		default:
			s.active = append(s.active, p)
		}
		if failed && s.failJobMsg == "" && job.Spec.PodFailurePolicy != nil {
			s.failJobMsg = matchPodFailurePolicy(job.Spec.PodFailurePolicy, p).failJobMsg
		}
		i, valid := s.index(p)
		if !s.tracked(p) || !valid {
			continue
		}
		switch {
		case p.Status.Phase == corev1.PodSucceeded:
			if indexed {
				s.completed[i] = true
			} else if !uncSucceeded.Has(p.UID) {
				newSucceeded++
			}
		case failed:
			if !uncFailed.Has(p.UID) && matchPodFailurePolicy(job.Spec.PodFailurePolicy, p).count {
				newFailed++
			}
			if s.failedIdx != nil && indexFailed(job, p) {
				s.failedIdx[i] = true
			}
		}
	}
	if indexed {
		s.succeeded = len(s.completed)
	} else {
		s.succeeded = int(status.Succeeded) + uncSucceeded.Len() + newSucceeded
	}
	s.failed = int(status.Failed) + uncFailed.Len() + newFailed
	if s.failedIdx != nil {
		s.delayed = delayedPerIndex(s)
	}
	return s
}

// delayedPerIndex picks, for each index still to run with no active pod, its
// latest failed pod: its finalizer is kept until the replacement is created.
func delayedPerIndex(s *syncState) map[int]*corev1.Pod {
	activeIdx := map[int]bool{}
	for _, p := range s.active {
		if i, ok := podIndex(p); ok {
			activeIdx[i] = true
		}
	}
	absolute := func(p *corev1.Pod) int32 {
		return annotationCount(p, batchv1.JobIndexFailureCountAnnotation) + annotationCount(p, batchv1.JobIndexIgnoredFailureCountAnnotation)
	}
	out := map[int]*corev1.Pod{}
	for _, p := range byName(s.pods) {
		i, valid := s.index(p)
		if !s.tracked(p) || !valid || !isPodFailed(p, s.job) || s.completed[i] || s.failedIdx[i] || activeIdx[i] {
			continue
		}
		if last, ok := out[i]; !ok || (absolute(last) <= absolute(p) && !finishedTime(p).Before(finishedTime(last))) {
			out[i] = p
		}
	}
	return out
}

// verdict is the terminal state a Job reached: the interim condition
// (FailureTarget or SuccessCriteriaMet) comes first; Failed or Complete
// follow, with the same reason and message, once no pod is left running.
type verdict struct {
	interim         batchv1.JobConditionType
	reason, message string
}

func (v verdict) final() batchv1.JobConditionType {
	switch v.interim {
	case batchv1.JobFailureTarget:
		return batchv1.JobFailed
	case batchv1.JobSuccessCriteriaMet:
		return batchv1.JobComplete
	}
	return ""
}

// decideTerminal is the verdict the Job has reached before managing pods, in
// Kubernetes' order: a recorded interim condition stands; then a FailJob
// rule, the backoff limit, the active deadline, failed indexes, and last the
// successPolicy. Completion by count is decided after pods are managed.
func decideTerminal(job *batchv1.Job, status *batchv1.JobStatus, s *syncState, now time.Time) verdict {
	for _, t := range []batchv1.JobConditionType{batchv1.JobSuccessCriteriaMet, batchv1.JobFailureTarget} {
		if c := getCondition(status, t); c != nil && c.Status == corev1.ConditionTrue {
			return verdict{interim: t, reason: c.Reason, message: c.Message}
		}
	}
	failure := func(reason, msg string) verdict {
		return verdict{interim: batchv1.JobFailureTarget, reason: reason, message: msg}
	}
	switch {
	case s.failJobMsg != "":
		return failure(batchv1.JobReasonPodFailurePolicy, s.failJobMsg)
	case (job.Spec.BackoffLimit != nil && s.failed > int(*job.Spec.BackoffLimit)) || pastBackoffLimitOnFailure(job, s.pods):
		return failure(batchv1.JobReasonBackoffLimitExceeded, msgBackoffExceeded)
	case deadlinePassed(job, status, now):
		return failure(batchv1.JobReasonDeadlineExceeded, msgDeadline)
	}
	if !isIndexed(job) {
		return verdict{}
	}
	completions := int(ptr.Deref(job.Spec.Completions, 0))
	if s.failedIdx != nil {
		if job.Spec.MaxFailedIndexes != nil && len(s.failedIdx) > int(*job.Spec.MaxFailedIndexes) {
			return failure(batchv1.JobReasonMaxFailedIndexesExceeded, msgMaxFailedIndexes)
		}
		if len(s.failedIdx) > 0 && len(s.failedIdx)+len(s.completed) >= completions {
			return failure(batchv1.JobReasonFailedIndexes, msgFailedIndexes)
		}
	}
	if msg, ok := matchSuccessPolicy(job.Spec.SuccessPolicy, completions, s.completed); ok {
		return verdict{interim: batchv1.JobSuccessCriteriaMet, reason: batchv1.JobReasonSuccessPolicy, message: msg}
	}
	return verdict{}
}

// pastBackoffLimitOnFailure: with restartPolicy OnFailure pods restart in
// place, so their container restarts count against backoffLimit.
func pastBackoffLimitOnFailure(job *batchv1.Job, pods []*corev1.Pod) bool {
	if job.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyOnFailure || job.Spec.BackoffLimit == nil {
		return false
	}
	var restarts int32
	for _, p := range pods {
		if p.Status.Phase != corev1.PodRunning && p.Status.Phase != corev1.PodPending {
			continue
		}
		for _, cs := range append(slices.Clone(p.Status.InitContainerStatuses), p.Status.ContainerStatuses...) {
			restarts += cs.RestartCount
		}
	}
	if *job.Spec.BackoffLimit == 0 {
		return restarts > 0
	}
	return restarts >= *job.Spec.BackoffLimit
}

// JobControllerName is spec.managedBy's value for this controller, the one a Job without the
// field has too.
const JobControllerName = "kubernetes.io/job-controller"

// ManagedByOther says whether a Job's spec.managedBy names another controller (Kubernetes'
// JobManagedBy, beta and on in v1.33), which this one then leaves alone. It is pure.
func ManagedByOther(j *batchv1.Job) bool {
	return j.Spec.ManagedBy != nil && *j.Spec.ManagedBy != JobControllerName
}

// Sync reconciles the Job with the given namespace/name key, or releases an
// orphaned pod for a key made by orphanKey.
func (c *Controller) Sync(ctx context.Context, key string) error {
	if podKey, ok := strings.CutPrefix(key, orphanKeyPrefix); ok {
		return c.syncOrphanPod(ctx, podKey)
	}
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	cached, err := c.jobLister.Jobs(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		c.expectations.Delete(key)
		c.releasing.forget(key)
		return nil
	}
	if err != nil {
		return fmt.Errorf("get job %s: %w", key, err)
	}
	if ManagedByOther(cached) {
		// spec.managedBy hands the Job to another controller: it writes the status, not this one.
		return nil
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
		_, err := c.removeFinalizers(ctx, key, filter(pods, hasTrackingFinalizer))
		return err
	}
	needsSync := c.expectations.Satisfied(key)
	now := c.clock.Now()
	status := job.Status.DeepCopy()
	if status.UncountedTerminatedPods == nil {
		status.UncountedTerminatedPods = &batchv1.UncountedTerminatedPods{}
	}
	if status.StartTime == nil && !ptr.Deref(job.Spec.Suspend, false) {
		// Even a Job that fails or succeeds in its first sync has started.
		status.StartTime = ptr.To(metav1.NewTime(now))
	}
	s := observe(job, status, pods, c.releasing.get(key))
	v := decideTerminal(job, status, s, now)
	active, terminating := s.active, s.terminating
	var manageErr error
	if v.interim != "" {
		// Pods are deleted with their finalizers kept: the tracking below
		// counts them (as failed, for a failing Job) before releasing them.
		var deleted int
		active, deleted, manageErr = c.deletePods(ctx, key, job, active, false)
		terminating += deleted
		if len(active) > 0 || !needsSync {
			// Pods may still run, or be missing from the cache: not a verdict yet.
			v = verdict{}
		}
	} else {
		if ptr.Deref(job.Spec.Suspend, false) {
			var deleted int
			active, deleted, manageErr = c.deletePods(ctx, key, job, active, true)
			terminating += deleted
			if setCondition(status, batchv1.JobSuspended, corev1.ConditionTrue, "JobSuspended", msgSuspended, now) {
				c.recorder.Event(job, corev1.EventTypeNormal, "Suspended", msgSuspended)
			}
			status.StartTime = nil
		} else {
			if cond := getCondition(status, batchv1.JobSuspended); cond != nil && cond.Status == corev1.ConditionTrue {
				setCondition(status, batchv1.JobSuspended, corev1.ConditionFalse, "JobResumed", msgResumed, now)
				c.recorder.Event(job, corev1.EventTypeNormal, "Resumed", msgResumed)
				status.StartTime = nil
			}
			if status.StartTime == nil {
				status.StartTime = ptr.To(metav1.NewTime(now))
			}
			if needsSync && job.DeletionTimestamp == nil {
				var deleted int
				active, deleted, manageErr = c.manage(ctx, key, s, defaulted, now)
				terminating += deleted
			}
			if job.Spec.ActiveDeadlineSeconds != nil {
				left := status.StartTime.Add(time.Duration(*job.Spec.ActiveDeadlineSeconds) * time.Second).Sub(now)
				c.loop.EnqueueAfter(key, max(left, 0))
			}
		}
		complete := false
		if job.Spec.Completions == nil {
			// A work queue: done once a pod succeeded and the rest have finished.
			complete = s.succeeded > 0 && len(active) == 0
		} else {
			complete = s.succeeded >= int(*job.Spec.Completions) && len(active) == 0
		}
		if complete {
			v = verdict{interim: batchv1.JobSuccessCriteriaMet, reason: batchv1.JobReasonCompletionsReached, message: msgCompleted}
		}
	}

	// Pods stopped above without their finalizer are no longer tracked.
	s.releasing = c.releasing.get(key)
	status.Active = int32(len(active))
	var ready int32
	for _, p := range active {
		if ctrlutil.IsPodReady(p) {
			ready++
		}
	}
	status.Ready = &ready
	status.Terminating = ptr.To(int32(terminating))
	trackErr := c.track(ctx, key, job, status, s, v, terminating, now)
	return errors.Join(manageErr, trackErr)
}

// track counts finished pods exactly once: first recorded by UID in
// uncountedTerminatedPods (durable in status) together with any interim
// condition, then their finalizer is removed, then they move into
// succeeded/failed. The final condition is set once nothing is left
// uncounted or terminating.
func (c *Controller) track(ctx context.Context, key string, job *batchv1.Job, status *batchv1.JobStatus, s *syncState, v verdict, terminating int, now time.Time) error {
	indexed := isIndexed(job)
	uncSucceeded := sets.New(status.UncountedTerminatedPods.Succeeded...)
	uncFailed := sets.New(status.UncountedTerminatedPods.Failed...)
	failing := v.interim == batchv1.JobFailureTarget
	var release []*corev1.Pod
	for _, p := range byName(s.pods) {
		if !s.tracked(p) {
			continue
		}
		failed := isPodFailed(p, job)
		i, valid := s.index(p)
		delayed := failed && valid && s.delayed[i] == p
		if !(job.DeletionTimestamp != nil || v.interim != "" || p.Status.Phase == corev1.PodSucceeded || (failed && !delayed)) {
			continue
		}
		release = append(release, p)
		switch {
		case p.Status.Phase == corev1.PodSucceeded && !uncFailed.Has(p.UID):
			// An Indexed Job's completed index already records it.
			if !indexed {
				uncSucceeded.Insert(p.UID)
			}
		case failed || failing:
			// A failing Job counts every pod it stops as failed.
			if valid && matchPodFailurePolicy(job.Spec.PodFailurePolicy, p).count {
				uncFailed.Insert(p.UID)
			}
		}
	}
	if indexed {
		status.CompletedIndexes = formatIndexes(s.completed)
		status.Succeeded = int32(len(s.completed))
		if s.failedIdx != nil {
			status.FailedIndexes = ptr.To(formatIndexes(s.failedIdx))
		}
	}
	if v.interim != "" {
		setCondition(status, v.interim, corev1.ConditionTrue, v.reason, v.message, now)
	}
	byUID := map[types.UID]*corev1.Pod{}
	for _, p := range s.pods {
		byUID[p.UID] = p
	}
	// settle moves recorded pods whose finalizer is gone into the counters.
	settle := func(released sets.Set[types.UID]) {
		settled := func(uid types.UID) bool {
			p, ok := byUID[uid]
			return !ok || !s.tracked(p) || released.Has(uid)
		}
		for uid := range uncSucceeded {
			if settled(uid) {
				uncSucceeded.Delete(uid)
				if !indexed {
					status.Succeeded++
				}
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
	}
	settle(nil)
	// Written before any finalizer goes: a released pod may vanish at once,
	// and then only the status remembers it.
	if err := c.writeStatus(ctx, job, status); err != nil {
		return err
	}
	released, releaseErr := c.removeFinalizers(ctx, key, release)
	settle(released)
	if final := v.final(); final != "" && uncSucceeded.Len()+uncFailed.Len() == 0 && terminating == 0 {
		if setCondition(status, final, corev1.ConditionTrue, v.reason, v.message, now) {
			if final == batchv1.JobComplete {
				status.CompletionTime = ptr.To(metav1.NewTime(now))
				c.recorder.Event(job, corev1.EventTypeNormal, "Completed", "Job completed")
			} else {
				c.recorder.Event(job, corev1.EventTypeWarning, v.reason, v.message)
			}
		}
	}
	if err := c.writeStatus(ctx, job, status); err != nil {
		return errors.Join(releaseErr, err)
	}
	return releaseErr
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

// removeFinalizers drops the tracking finalizer from pods, returning the UIDs
// done. key is the owning Job's key, "" for orphans.
func (c *Controller) removeFinalizers(ctx context.Context, key string, pods []*corev1.Pod) (sets.Set[types.UID], error) {
	done := sets.New[types.UID]()
	var errs []error
	for _, p := range byName(pods) {
		if !hasTrackingFinalizer(p) {
			continue
		}
		c.releasing.expect(key, p.UID)
		if err := c.patchOutFinalizer(ctx, p); err != nil {
			c.releasing.observed(key, p.UID)
			errs = append(errs, err)
			continue
		}
		done.Insert(p.UID)
	}
	return done, errors.Join(errs...)
}

// patchOutFinalizer removes the tracking finalizer from one pod; a pod
// already gone is done.
func (c *Controller) patchOutFinalizer(ctx context.Context, p *corev1.Pod) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"$deleteFromPrimitiveList/finalizers": []string{batchv1.JobTrackingFinalizer}}})
	if err != nil {
		return fmt.Errorf("finalizer patch for pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	_, err = c.client.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("remove tracking finalizer from pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	return nil
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
		ref := ctrlutil.NewControllerRef(job, controllerKind())
		if decision == ctrlutil.Adopt {
			adopted, err := c.adopt(ctx, p, ref)
			if err != nil {
				errs = append(errs, err)
			}
			if adopted != nil {
				owned = append(owned, adopted)
			}
			continue
		}
		mine, err := ctrlutil.ClaimPod(ctx, c.client, p, decision, ref)
		if err != nil {
			errs = append(errs, err)
		}
		if mine {
			owned = append(owned, p)
		}
	}
	return owned, errors.Join(errs...)
}

// adopt makes an orphan pod the Job's and puts the tracking finalizer back
// on it in the same patch: an orphan loses the finalizer (see
// syncOrphanPod), and without it the Job could not count the pod when it
// finishes. It returns the pod as adopted, nil when it is gone.
func (c *Controller) adopt(ctx context.Context, p *corev1.Pod, ref *metav1.OwnerReference) (*corev1.Pod, error) {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"ownerReferences": []any{ref},
		"uid":             p.UID,
		"finalizers":      []string{batchv1.JobTrackingFinalizer},
	}})
	if err != nil {
		return nil, fmt.Errorf("adopt patch for pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	_, err = c.client.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("adopt pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	adopted := p.DeepCopy()
	adopted.OwnerReferences = append(adopted.OwnerReferences, *ref)
	if !hasTrackingFinalizer(adopted) {
		adopted.Finalizers = append(adopted.Finalizers, batchv1.JobTrackingFinalizer)
	}
	return adopted, nil
}

// manage creates and deletes pods so the right number (and, for Indexed
// Jobs, the right indexes) run; it returns the pods still active and how many
// it deleted.
func (c *Controller) manage(ctx context.Context, key string, s *syncState, defaultedSelector bool, now time.Time) ([]*corev1.Pod, int, error) {
	job := s.job
	active := s.active
	parallelism := int(ptr.Deref(job.Spec.Parallelism, 1))
	// Pods still terminating hold their place when only failed pods are replaced.
	terminating := 0
	if onlyReplaceFailedPods(job) {
		terminating = s.terminating
	}
	var excess []*corev1.Pod
	var create []int // completion indexes to create; -1 for NonIndexed pods
	if isIndexed(job) {
		completions := int(ptr.Deref(job.Spec.Completions, 0))
		seen := map[int]bool{}
		var keep []*corev1.Pod
		for _, p := range active {
			i, ok := podIndex(p)
			if !ok || i >= completions || s.completed[i] || s.failedIdx[i] || seen[i] {
				excess = append(excess, p)
				continue
			}
			seen[i] = true
			keep = append(keep, p)
		}
		want := min(parallelism, completions-len(s.completed))
		if len(keep) > want {
			ctrlutil.SortPodsForDeletion(keep, nil)
			excess = append(excess, keep[:len(keep)-want]...)
			keep = keep[len(keep)-want:]
		}
		room := want - len(keep) - terminating
		for i := 0; i < completions && len(create) < room; i++ {
			if !s.completed[i] && !seen[i] && !s.failedIdx[i] && !(terminating > 0 && s.terminatingIdx[i]) {
				create = append(create, i)
			}
		}
		active = keep
	} else {
		want := parallelism
		if job.Spec.Completions != nil {
			want = min(parallelism, int(*job.Spec.Completions)-s.succeeded)
		} else if s.succeeded > 0 {
			want = len(active) // a work queue: once one succeeded, start no more
		}
		want = max(want, 0)
		if len(active) > want {
			sorted := slices.Clone(active)
			ctrlutil.SortPodsForDeletion(sorted, nil)
			excess = sorted[:len(active)-want]
			active = sorted[len(active)-want:]
		}
		for range max(want-len(active)-terminating, 0) {
			create = append(create, -1)
		}
	}
	remaining, deleted, err := c.deletePods(ctx, key, job, excess, true)
	active = append(active, remaining...)
	if err != nil {
		return active, deleted, err
	}
	if len(create) == 0 {
		return active, deleted, nil
	}
	perIndex := isIndexed(job) && job.Spec.BackoffLimitPerIndex != nil
	if perIndex {
		var wait time.Duration
		if create, wait = readyIndexes(create, s.delayed, now); len(create) == 0 {
			c.loop.EnqueueAfter(key, wait)
			return active, deleted, nil
		}
	} else if wait := c.backoffRemaining(s.failed, s.pods, now); wait > 0 {
		c.loop.EnqueueAfter(key, wait)
		return active, deleted, nil
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
		if perIndex {
			counted, ignored := replacementFailureCounts(job, s.delayed[index])
			pod.Annotations[batchv1.JobIndexFailureCountAnnotation] = strconv.Itoa(int(counted))
			if ignored > 0 {
				pod.Annotations[batchv1.JobIndexIgnoredFailureCountAnnotation] = strconv.Itoa(int(ignored))
			}
		}
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
		return active, deleted, fmt.Errorf("create pods for job %s: %w", key, err)
	}
	return active, deleted, nil
}

// readyIndexes keeps the indexes whose per-index backoff has passed (the
// failures so far in the index, read from its last failed pod); when none
// has, it returns the shortest wait instead.
func readyIndexes(indexes []int, delayed map[int]*corev1.Pod, now time.Time) ([]int, time.Duration) {
	var ready []int
	var wait time.Duration
	for _, i := range indexes {
		left := time.Duration(0)
		if p := delayed[i]; p != nil {
			failures := annotationCount(p, batchv1.JobIndexFailureCountAnnotation) + annotationCount(p, batchv1.JobIndexIgnoredFailureCountAnnotation) + 1
			left = finishedTime(p).Add(backoffDelay(int(failures))).Sub(now)
		}
		if left <= 0 {
			ready = append(ready, i)
		} else if wait == 0 || left < wait {
			wait = left
		}
	}
	if len(ready) > 0 {
		return ready, 0
	}
	return nil, wait
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
	return max(last.Add(backoffDelay(failed)).Sub(now), 0)
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

// deletePods deletes pods (the controller's own decision: excess,
// suspension, a finished Job); each counts as an expected deletion. With
// release, the tracking finalizer goes first, so a pod the Job merely stops
// is never counted as failed; without it, the tracking counts the pod before
// letting go. It returns the pods not deleted and how many were.
func (c *Controller) deletePods(ctx context.Context, key string, job *batchv1.Job, pods []*corev1.Pod, release bool) ([]*corev1.Pod, int, error) {
	if len(pods) == 0 {
		return nil, 0, nil
	}
	pods = byName(pods)
	keys := make([]string, len(pods))
	for i, p := range pods {
		keys[i] = p.Namespace + "/" + p.Name
	}
	c.expectations.ExpectDeletions(key, keys)
	var errs []error
	var remaining []*corev1.Pod
	for _, p := range pods {
		var err error
		if release && hasTrackingFinalizer(p) {
			c.releasing.expect(key, p.UID)
			if err = c.patchOutFinalizer(ctx, p); err != nil {
				c.releasing.observed(key, p.UID)
			}
		}
		if err == nil {
			err = c.client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				err = fmt.Errorf("delete pod %s/%s: %w", p.Namespace, p.Name, err)
			}
		}
		if err != nil {
			c.expectations.DeletionObserved(key, p.Namespace+"/"+p.Name)
			if !apierrors.IsNotFound(err) {
				c.recorder.Eventf(job, corev1.EventTypeWarning, "FailedDelete", "Error deleting: %v", err)
				errs = append(errs, err)
				remaining = append(remaining, p)
			}
			continue
		}
		c.recorder.Eventf(job, corev1.EventTypeNormal, "SuccessfulDelete", "Deleted pod: %s", p.Name)
	}
	return remaining, len(pods) - len(remaining), errors.Join(errs...)
}

// byName orders pods by name: listers return them in no particular order, and writing in name
// order keeps the controller's actions repeatable.
func byName(pods []*corev1.Pod) []*corev1.Pod {
	out := slices.Clone(pods)
	slices.SortFunc(out, func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	return out
}
