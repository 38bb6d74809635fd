package cronjob

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/internal/controller/ctrltest"
)

// makeCronJob is a defaulted CronJob created ten minutes before Epoch (00:00 UTC).
func makeCronJob(schedule string) *batchv1.CronJob {
	return &batchv1.CronJob{
		TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "CronJob"},
		ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "default", UID: "uid-hello",
			CreationTimestamp: metav1.NewTime(ctrltest.Epoch().Add(-10 * time.Minute))},
		Spec: batchv1.CronJobSpec{
			Schedule:                   schedule,
			ConcurrencyPolicy:          batchv1.AllowConcurrent,
			SuccessfulJobsHistoryLimit: ptr.To[int32](3),
			FailedJobsHistoryLimit:     ptr.To[int32](1),
			JobTemplate: batchv1.JobTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "hello"}},
				Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyOnFailure, Containers: []corev1.Container{{Name: "hello", Image: "busybox"}}}}},
			},
		},
	}
}

func ownedJob(cj *batchv1.CronJob, scheduled time.Time) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: JobName(cj, scheduled), Namespace: "default", UID: types.UID("uid-job-" + scheduled.Format("1504")),
			CreationTimestamp: metav1.NewTime(scheduled),
			OwnerReferences:   []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "CronJob", Name: cj.Name, UID: cj.UID, Controller: ptr.To(true)}}},
		Status: batchv1.JobStatus{StartTime: ptr.To(metav1.NewTime(scheduled))},
	}
}

func completed(j *batchv1.Job, at time.Time) *batchv1.Job {
	j.Status.CompletionTime = ptr.To(metav1.NewTime(at))
	j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}
	return j
}

type fixture struct {
	env  *ctrltest.Env
	ctrl *Controller
}

func newFixture(t *testing.T, now time.Time, cj *batchv1.CronJob, jobs ...*batchv1.Job) *fixture {
	t.Helper()
	objs := []runtime.Object{cj}
	for _, j := range jobs {
		objs = append(objs, j)
	}
	env := ctrltest.NewEnv(objs...)
	env.Clock.SetTime(now)
	ctrl, err := New(env.Deps)
	if err != nil {
		t.Fatal(err)
	}
	ctrltest.Seed(t, env.Factory.Batch().V1().CronJobs().Informer(), cj)
	for _, j := range jobs {
		ctrltest.Seed(t, env.Factory.Batch().V1().Jobs().Informer(), j)
	}
	return &fixture{env: env, ctrl: ctrl}
}

func (f *fixture) sync(t *testing.T) []clienttesting.Action {
	t.Helper()
	if err := f.ctrl.Sync(context.Background(), "default/hello"); err != nil {
		t.Fatal(err)
	}
	return f.env.Writes()
}

func statusOf(t *testing.T, actions []clienttesting.Action) batchv1.CronJobStatus {
	t.Helper()
	for _, a := range actions {
		if u, ok := a.(clienttesting.UpdateAction); ok && a.GetVerb() == "update" && a.GetSubresource() == "status" {
			return u.GetObject().(*batchv1.CronJob).Status
		}
	}
	t.Fatalf("no status update in %q", ctrltest.Describe(actions))
	return batchv1.CronJobStatus{}
}

func TestSchedules(t *testing.T) {
	epoch := ctrltest.Epoch()
	jobAt := func(t time.Time) string { return fmt.Sprintf("hello-%d", t.Unix()/60) }
	tests := []struct {
		name string
		now  time.Time
		cj   func() *batchv1.CronJob
		jobs func(cj *batchv1.CronJob) []*batchv1.Job
		want []string
	}{
		{name: "due: creates the job of the latest time", now: epoch.Add(30 * time.Second), cj: func() *batchv1.CronJob { return makeCronJob("*/5 * * * *") },
			want: []string{"create jobs " + jobAt(epoch), "update cronjobs/status hello"}},
		{name: "not due yet", now: epoch.Add(30 * time.Minute), cj: func() *batchv1.CronJob {
			cj := makeCronJob("0 * * * *")
			cj.Status.LastScheduleTime = ptr.To(metav1.NewTime(epoch))
			return cj
		}},
		{name: "already ran this time", now: epoch, cj: func() *batchv1.CronJob { return makeCronJob("0 * * * *") },
			jobs: func(cj *batchv1.CronJob) []*batchv1.Job { return []*batchv1.Job{ownedJob(cj, epoch)} },
			want: []string{"update cronjobs/status hello"}}, // only adopts the running job into status.active
		{name: "suspended", now: epoch, cj: func() *batchv1.CronJob { cj := makeCronJob("0 * * * *"); cj.Spec.Suspend = ptr.To(true); return cj }},
		{name: "forbid while one runs", now: epoch, cj: func() *batchv1.CronJob {
			cj := makeCronJob("*/5 * * * *")
			cj.Spec.ConcurrencyPolicy = batchv1.ForbidConcurrent
			cj.Status.LastScheduleTime = ptr.To(metav1.NewTime(epoch.Add(-5 * time.Minute)))
			prev := ownedJob(cj, epoch.Add(-5*time.Minute))
			cj.Status.Active = []corev1.ObjectReference{jobRef(prev)}
			return cj
		}, jobs: func(cj *batchv1.CronJob) []*batchv1.Job {
			return []*batchv1.Job{ownedJob(cj, epoch.Add(-5*time.Minute))}
		}},
		{name: "replace deletes the running one", now: epoch, cj: func() *batchv1.CronJob {
			cj := makeCronJob("*/5 * * * *")
			cj.Spec.ConcurrencyPolicy = batchv1.ReplaceConcurrent
			cj.Status.LastScheduleTime = ptr.To(metav1.NewTime(epoch.Add(-5 * time.Minute)))
			cj.Status.Active = []corev1.ObjectReference{jobRef(ownedJob(cj, epoch.Add(-5*time.Minute)))}
			return cj
		}, jobs: func(cj *batchv1.CronJob) []*batchv1.Job {
			return []*batchv1.Job{ownedJob(cj, epoch.Add(-5*time.Minute))}
		},
			want: []string{"delete jobs " + jobAt(epoch.Add(-5*time.Minute)), "create jobs " + jobAt(epoch), "update cronjobs/status hello"}},
		{name: "starting deadline missed", now: epoch.Add(5 * time.Minute), cj: func() *batchv1.CronJob {
			cj := makeCronJob("0 * * * *")
			cj.Spec.StartingDeadlineSeconds = ptr.To[int64](60)
			return cj
		}},
		{name: "time zone: 09:00 in Tokyo is 00:00 UTC", now: epoch.Add(time.Second), cj: func() *batchv1.CronJob {
			cj := makeCronJob("0 9 * * *")
			cj.Spec.TimeZone = ptr.To("Asia/Tokyo")
			return cj
		}, want: []string{"create jobs " + jobAt(epoch), "update cronjobs/status hello"}},
		{name: "no time zone: 09:00 UTC not due", now: epoch.Add(time.Second), cj: func() *batchv1.CronJob { return makeCronJob("0 9 * * *") }},
		{name: "history limit", now: epoch.Add(time.Minute), cj: func() *batchv1.CronJob {
			cj := makeCronJob("0 * * * *")
			cj.Status.LastScheduleTime = ptr.To(metav1.NewTime(epoch))
			cj.Status.LastSuccessfulTime = ptr.To(metav1.NewTime(epoch.Add(-time.Hour + time.Minute)))
			return cj
		}, jobs: func(cj *batchv1.CronJob) []*batchv1.Job {
			var out []*batchv1.Job
			for h := 4; h >= 1; h-- {
				at := epoch.Add(-time.Duration(h) * time.Hour)
				out = append(out, completed(ownedJob(cj, at), at.Add(time.Minute)))
			}
			return out
		}, want: []string{"delete jobs " + jobAt(epoch.Add(-4*time.Hour))}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cj := tt.cj()
			var jobs []*batchv1.Job
			if tt.jobs != nil {
				jobs = tt.jobs(cj)
			}
			f := newFixture(t, tt.now, cj, jobs...)
			if got := ctrltest.Describe(f.sync(t)); !slices.Equal(got, tt.want) {
				t.Fatalf("actions:\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestCreatedJobAndStatus(t *testing.T) {
	epoch := ctrltest.Epoch()
	cj := makeCronJob("0 9 * * *")
	cj.Spec.TimeZone = ptr.To("Asia/Tokyo")
	f := newFixture(t, epoch.Add(time.Second), cj)
	actions := f.sync(t)
	job := actions[0].(clienttesting.CreateAction).GetObject().(*batchv1.Job)
	if ref := metav1.GetControllerOf(job); ref == nil || ref.Kind != "CronJob" || ref.UID != cj.UID {
		t.Fatalf("controllerRef %+v", ref)
	}
	if got := job.Annotations[ScheduledTimestampAnnotation]; got != "2026-01-01T09:00:00+09:00" {
		t.Fatalf("scheduled timestamp %q", got)
	}
	if job.Labels["app"] != "hello" || job.Spec.Template.Spec.Containers[0].Image != "busybox" {
		t.Fatalf("job %+v", job)
	}
	s := statusOf(t, actions)
	if s.LastScheduleTime == nil || !s.LastScheduleTime.Time.Equal(epoch) || len(s.Active) != 1 || s.Active[0].Name != job.Name {
		t.Fatalf("status %+v", s)
	}
	if ev := f.env.Events(); len(ev) != 1 || ev[0] != "Normal SuccessfulCreate Created job "+job.Name {
		t.Fatalf("events %q", ev)
	}
	// The next run is a day later: requeued then, not before.
	f.env.Clock.Step(23 * time.Hour)
	time.Sleep(20 * time.Millisecond)
	if f.ctrl.loop.Queue.Len() != 0 {
		t.Fatal("requeued before the next scheduled time")
	}
	f.env.Clock.Step(time.Hour)
	deadline := time.Now().Add(5 * time.Second)
	for f.ctrl.loop.Queue.Len() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("not requeued at the next scheduled time")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestFinishedJobLeavesActiveAndSetsLastSuccessfulTime(t *testing.T) {
	epoch := ctrltest.Epoch()
	cj := makeCronJob("0 * * * *")
	cj.Status.LastScheduleTime = ptr.To(metav1.NewTime(epoch))
	j := ownedJob(cj, epoch)
	cj.Status.Active = []corev1.ObjectReference{jobRef(j)}
	f := newFixture(t, epoch.Add(2*time.Minute), cj, completed(j, epoch.Add(time.Minute)))
	s := statusOf(t, f.sync(t))
	if len(s.Active) != 0 || s.LastSuccessfulTime == nil || !s.LastSuccessfulTime.Time.Equal(epoch.Add(time.Minute)) {
		t.Fatalf("status %+v", s)
	}
	if ev := f.env.Events(); len(ev) != 1 || !strings.HasPrefix(ev[0], "Normal SawCompletedJob Saw completed job: "+j.Name) {
		t.Fatalf("events %q", ev)
	}
}

func TestMissingActiveJobIsDropped(t *testing.T) {
	epoch := ctrltest.Epoch()
	cj := makeCronJob("0 * * * *")
	cj.Status.LastScheduleTime = ptr.To(metav1.NewTime(epoch))
	cj.Status.Active = []corev1.ObjectReference{{Kind: "Job", Namespace: "default", Name: "gone", UID: "uid-gone"}}
	f := newFixture(t, epoch.Add(time.Minute), cj)
	if s := statusOf(t, f.sync(t)); len(s.Active) != 0 {
		t.Fatalf("active %+v", s.Active)
	}
}

func TestBadScheduleIsAnEventNotAnError(t *testing.T) {
	f := newFixture(t, ctrltest.Epoch(), makeCronJob("not a schedule"))
	if w := f.sync(t); len(w) != 0 {
		t.Fatalf("writes %q", ctrltest.Describe(w))
	}
	if ev := f.env.Events(); len(ev) != 1 || !strings.HasPrefix(ev[0], "Warning UnparseableSchedule") {
		t.Fatalf("events %q", ev)
	}
}
