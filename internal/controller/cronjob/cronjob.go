package cronjob

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"
	_ "time/tzdata" // one binary: time zones must not depend on the host's zoneinfo

	"github.com/robfig/cron/v3"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/internal/controller/ctrlutil"
)

// Name is the controller's name in --controllers and in metrics.
const Name = "cronjob"

// ScheduledTimestampAnnotation records on each Job the time it was scheduled for.
const ScheduledTimestampAnnotation = "batch.kubernetes.io/cronjob-scheduled-timestamp"

// maxMissedTimes: beyond this many missed start times a warning is recorded
// (the most recent one is still run).
const maxMissedTimes = 100

func controllerKind() schema.GroupVersionKind { return batchv1.SchemeGroupVersion.WithKind("CronJob") }

// Controller reconciles CronJobs.
type Controller struct {
	client    kubernetes.Interface
	cjLister  batchlisters.CronJobLister
	jobLister batchlisters.JobLister
	recorder  record.EventRecorder
	clock     clock.PassiveClock
	loop      *ctrlutil.Loop
	synced    []cache.InformerSynced
}

// New builds the controller and registers its informers' handlers.
func New(deps ctrlutil.Deps) (*Controller, error) {
	cjInformer := deps.Informers.Batch().V1().CronJobs()
	jobInformer := deps.Informers.Batch().V1().Jobs()
	c := &Controller{
		client:    deps.Client,
		cjLister:  cjInformer.Lister(),
		jobLister: jobInformer.Lister(),
		recorder:  deps.Recorder,
		clock:     deps.Clock,
	}
	c.loop = ctrlutil.NewLoop(Name, deps, c.Sync)
	var err error
	c.synced, err = ctrlutil.NewWiring(Name).
		Watch(cjInformer.Informer(), ctrlutil.On(ctrlutil.OnAdd|ctrlutil.OnUpdate, c.loop.Enqueue)).
		Watch(jobInformer.Informer(), ctrlutil.On(ctrlutil.OnAll, c.loop.EnqueueOwner("CronJob"))).
		Done()
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Run runs workers until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) { c.loop.Run(ctx, workers, c.synced...) }

// JobName is the deterministic name of the Job for one scheduled time.
func JobName(cj *batchv1.CronJob, scheduled time.Time) string {
	return fmt.Sprintf("%s-%d", cj.Name, scheduled.Unix()/60)
}

func jobFinished(j *batchv1.Job) (batchv1.JobConditionType, bool) {
	for _, c := range j.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return c.Type, true
		}
	}
	return "", false
}

// parseSchedule parses spec.schedule in spec.timeZone (CRON_TZ prefix).
func parseSchedule(cj *batchv1.CronJob) (cron.Schedule, error) {
	spec := cj.Spec.Schedule
	if tz := ptr.Deref(cj.Spec.TimeZone, ""); tz != "" {
		if _, err := time.LoadLocation(tz); err != nil {
			return nil, fmt.Errorf("invalid timeZone: %q: %w", tz, err)
		}
		spec = "CRON_TZ=" + tz + " " + spec
	}
	return cron.ParseStandard(spec)
}

// Sync reconciles the CronJob with the given namespace/name key.
func (c *Controller) Sync(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	cached, err := c.cjLister.CronJobs(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get cronjob %s: %w", key, err)
	}
	cj := cached.DeepCopy()
	now := c.clock.Now()

	all, err := c.jobLister.Jobs(namespace).List(labels.Everything())
	if err != nil {
		return fmt.Errorf("list jobs of cronjob %s: %w", key, err)
	}
	var owned []*batchv1.Job
	for _, j := range all {
		if ref := metav1.GetControllerOf(j); ref != nil && ref.UID == cj.UID {
			owned = append(owned, j)
		}
	}
	if err := c.syncActive(ctx, cj, owned); err != nil {
		return err
	}

	var requeue time.Duration
	var scheduleErr error
	if cj.DeletionTimestamp == nil && !ptr.Deref(cj.Spec.Suspend, false) {
		requeue, scheduleErr = c.runSchedule(ctx, cj, owned, now)
	}
	if scheduleErr == nil && cj.DeletionTimestamp == nil {
		scheduleErr = c.cleanupHistory(ctx, cj, owned)
	}
	if err := c.writeStatus(ctx, cached, cj); err != nil {
		return errors.Join(scheduleErr, err)
	}
	if requeue > 0 {
		c.loop.EnqueueAfter(key, requeue)
	}
	return scheduleErr
}

// syncActive reconciles status.active with the Jobs that exist: finished or
// vanished Jobs leave it, running Jobs we own join it.
func (c *Controller) syncActive(ctx context.Context, cj *batchv1.CronJob, owned []*batchv1.Job) error {
	byUID := map[types.UID]*batchv1.Job{}
	for _, j := range owned {
		byUID[j.UID] = j
	}
	inActive := map[types.UID]bool{}
	var active []corev1.ObjectReference
	for _, ref := range cj.Status.Active {
		if j, ok := byUID[ref.UID]; ok {
			if kind, done := jobFinished(j); done {
				c.recorder.Eventf(cj, corev1.EventTypeNormal, "SawCompletedJob", "Saw completed job: %s, condition: %v", j.Name, kind)
				continue
			}
			inActive[ref.UID] = true
			active = append(active, ref)
			continue
		}
		// Not in the cache: confirm with the API before forgetting it.
		_, err := c.client.BatchV1().Jobs(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			c.recorder.Eventf(cj, corev1.EventTypeNormal, "MissingJob", "Active job went missing: %v", ref.Name)
		case err != nil:
			return fmt.Errorf("check active job %s/%s: %w", ref.Namespace, ref.Name, err)
		default:
			inActive[ref.UID] = true
			active = append(active, ref)
		}
	}
	for _, j := range owned {
		if _, done := jobFinished(j); !done && !inActive[j.UID] {
			active = append(active, jobRef(j))
		}
	}
	for _, j := range owned {
		if kind, done := jobFinished(j); done && kind == batchv1.JobComplete && j.Status.CompletionTime != nil {
			if cj.Status.LastSuccessfulTime == nil || j.Status.CompletionTime.After(cj.Status.LastSuccessfulTime.Time) {
				cj.Status.LastSuccessfulTime = j.Status.CompletionTime.DeepCopy()
			}
		}
	}
	cj.Status.Active = active
	return nil
}

func jobRef(j *batchv1.Job) corev1.ObjectReference {
	return corev1.ObjectReference{Kind: "Job", APIVersion: "batch/v1", Namespace: j.Namespace, Name: j.Name, UID: j.UID, ResourceVersion: j.ResourceVersion}
}

// runSchedule starts the Job of the most recent unmet scheduled time, if
// any is due; it returns when to look again.
func (c *Controller) runSchedule(ctx context.Context, cj *batchv1.CronJob, owned []*batchv1.Job, now time.Time) (time.Duration, error) {
	sched, err := parseSchedule(cj)
	if err != nil {
		reason := "UnparseableSchedule"
		if strings.HasPrefix(err.Error(), "invalid timeZone") {
			reason = "UnknownTimeZone"
		}
		c.recorder.Eventf(cj, corev1.EventTypeWarning, reason, "unparseable schedule: %q : %v", cj.Spec.Schedule, err)
		return 0, nil
	}
	untilNext := func() time.Duration { return sched.Next(now).Sub(now) + 100*time.Millisecond }

	earliest := cj.CreationTimestamp.Time
	if cj.Status.LastScheduleTime != nil {
		earliest = cj.Status.LastScheduleTime.Time
	}
	if sds := cj.Spec.StartingDeadlineSeconds; sds != nil {
		if floor := now.Add(-time.Duration(*sds) * time.Second); floor.After(earliest) {
			earliest = floor
		}
	}
	var scheduled time.Time
	missed := 0
	for t := sched.Next(earliest); !t.After(now); t = sched.Next(t) {
		scheduled = t
		missed++
	}
	if scheduled.IsZero() {
		return untilNext(), nil
	}
	if missed > maxMissedTimes {
		c.recorder.Eventf(cj, corev1.EventTypeWarning, "TooManyMissedTimes",
			"too many missed start times: %d. Set or decrease .spec.startingDeadlineSeconds or check clock skew", missed)
	}
	if sds := cj.Spec.StartingDeadlineSeconds; sds != nil && scheduled.Add(time.Duration(*sds)*time.Second).Before(now) {
		c.recorder.Eventf(cj, corev1.EventTypeWarning, "MissSchedule", "Missed scheduled time to start a job: %s", scheduled.UTC().Format(time.RFC1123Z))
		return untilNext(), nil
	}
	jobName := JobName(cj, scheduled)
	for _, j := range owned {
		if j.Name == jobName {
			return untilNext(), nil // this time already ran
		}
	}
	switch cj.Spec.ConcurrencyPolicy {
	case batchv1.ForbidConcurrent:
		if len(cj.Status.Active) > 0 {
			return untilNext(), nil
		}
	case batchv1.ReplaceConcurrent:
		for _, ref := range cj.Status.Active {
			policy := metav1.DeletePropagationBackground
			err := c.client.BatchV1().Jobs(ref.Namespace).Delete(ctx, ref.Name, metav1.DeleteOptions{PropagationPolicy: &policy})
			if err != nil && !apierrors.IsNotFound(err) {
				c.recorder.Eventf(cj, corev1.EventTypeWarning, "FailedDelete", "Deleted job: %v", err)
				return 0, fmt.Errorf("replace active job %s/%s: %w", ref.Namespace, ref.Name, err)
			}
			c.recorder.Eventf(cj, corev1.EventTypeNormal, "SuccessfulDelete", "Deleted job %v", ref.Name)
		}
		cj.Status.Active = nil
	}

	job := jobFromTemplate(cj, jobName, scheduled)
	created, err := c.client.BatchV1().Jobs(cj.Namespace).Create(ctx, job, metav1.CreateOptions{})
	switch {
	case apierrors.IsAlreadyExists(err):
		existing, getErr := c.client.BatchV1().Jobs(cj.Namespace).Get(ctx, jobName, metav1.GetOptions{})
		if getErr != nil {
			return 0, fmt.Errorf("get existing job %s/%s: %w", cj.Namespace, jobName, getErr)
		}
		if ref := metav1.GetControllerOf(existing); ref == nil || ref.UID != cj.UID {
			return 0, fmt.Errorf("job %s/%s exists and is not owned by cronjob %s", cj.Namespace, jobName, cj.Name)
		}
		created = existing
	case err != nil:
		c.recorder.Eventf(cj, corev1.EventTypeWarning, "FailedCreate", "Error creating job: %v", err)
		return 0, fmt.Errorf("create job for cronjob %s/%s: %w", cj.Namespace, cj.Name, err)
	default:
		c.recorder.Eventf(cj, corev1.EventTypeNormal, "SuccessfulCreate", "Created job %v", created.Name)
	}
	if _, done := jobFinished(created); !done && !containsUID(cj.Status.Active, created.UID) {
		cj.Status.Active = append(cj.Status.Active, jobRef(created))
	}
	cj.Status.LastScheduleTime = ptr.To(metav1.NewTime(scheduled))
	return untilNext(), nil
}

func containsUID(refs []corev1.ObjectReference, uid types.UID) bool {
	for _, r := range refs {
		if r.UID == uid {
			return true
		}
	}
	return false
}

// jobFromTemplate builds the Job of one scheduled time.
func jobFromTemplate(cj *batchv1.CronJob, name string, scheduled time.Time) *batchv1.Job {
	annotations := map[string]string{}
	for k, v := range cj.Spec.JobTemplate.Annotations {
		annotations[k] = v
	}
	loc := scheduled.Location()
	if tz := ptr.Deref(cj.Spec.TimeZone, ""); tz != "" {
		if l, err := time.LoadLocation(tz); err == nil {
			loc = l
		}
	}
	annotations[ScheduledTimestampAnnotation] = scheduled.In(loc).Format(time.RFC3339)
	labelsCopy := map[string]string{}
	for k, v := range cj.Spec.JobTemplate.Labels {
		labelsCopy[k] = v
	}
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name:            name,
			Namespace:       cj.Namespace,
			Labels:          labelsCopy,
			Annotations:     annotations,
			OwnerReferences: []metav1.OwnerReference{*ctrlutil.NewControllerRef(cj, controllerKind())},
		},
		Spec: *cj.Spec.JobTemplate.Spec.DeepCopy(),
	}
}

// cleanupHistory deletes the oldest finished Jobs beyond the history limits.
func (c *Controller) cleanupHistory(ctx context.Context, cj *batchv1.CronJob, owned []*batchv1.Job) error {
	var succeeded, failed []*batchv1.Job
	for _, j := range owned {
		if j.DeletionTimestamp != nil {
			continue
		}
		switch kind, done := jobFinished(j); {
		case done && kind == batchv1.JobComplete:
			succeeded = append(succeeded, j)
		case done:
			failed = append(failed, j)
		}
	}
	var errs []error
	for _, group := range []struct {
		jobs  []*batchv1.Job
		limit *int32
	}{{succeeded, cj.Spec.SuccessfulJobsHistoryLimit}, {failed, cj.Spec.FailedJobsHistoryLimit}} {
		if group.limit == nil || len(group.jobs) <= int(*group.limit) {
			continue
		}
		sort.SliceStable(group.jobs, func(i, k int) bool { return finishTime(group.jobs[i]).Before(finishTime(group.jobs[k])) })
		for _, j := range group.jobs[:len(group.jobs)-int(*group.limit)] {
			policy := metav1.DeletePropagationBackground
			err := c.client.BatchV1().Jobs(j.Namespace).Delete(ctx, j.Name, metav1.DeleteOptions{PropagationPolicy: &policy})
			if err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("delete old job %s/%s: %w", j.Namespace, j.Name, err))
				continue
			}
			c.recorder.Eventf(cj, corev1.EventTypeNormal, "SuccessfulDelete", "Deleted job %v", j.Name)
		}
	}
	return errors.Join(errs...)
}

func finishTime(j *batchv1.Job) time.Time {
	if j.Status.CompletionTime != nil {
		return j.Status.CompletionTime.Time
	}
	for _, c := range j.Status.Conditions {
		if c.Type == batchv1.JobFailed {
			return c.LastTransitionTime.Time
		}
	}
	if j.Status.StartTime != nil {
		return j.Status.StartTime.Time
	}
	return j.CreationTimestamp.Time
}

func (c *Controller) writeStatus(ctx context.Context, cached, cj *batchv1.CronJob) error {
	if reflect.DeepEqual(cached.Status, cj.Status) {
		return nil
	}
	if _, err := c.client.BatchV1().CronJobs(cj.Namespace).UpdateStatus(ctx, cj, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update status of cronjob %s/%s: %w", cj.Namespace, cj.Name, err)
	}
	return nil
}
