package printers

import (
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/skiff-sh/skiff/internal/registry"
)

func jobPrinter() *registry.TablePrinter {
	return &registry.TablePrinter{
		Columns: []metav1.TableColumnDefinition{
			nameColumn(),
			column("Status", columnTypeString, "Status of the job."),
			column("Completions", columnTypeString, batchv1.JobStatus{}.SwaggerDoc()["succeeded"]),
			column("Duration", columnTypeString, "Time required to complete the job."),
			ageColumn(),
			containersColumn(),
			imagesColumn(),
			wide(column("Selector", columnTypeString, batchv1.JobSpec{}.SwaggerDoc()["selector"])),
		},
		Row: typedRow("jobs", func(job *batchv1.Job, now time.Time) ([]interface{}, error) {
			names, images := containerCells(job.Spec.Template.Spec.Containers)
			return []interface{}{
				job.Name, jobStatus(job), jobCompletions(job), jobDuration(job, now), age(job.CreationTimestamp, now),
				names, images, metav1.FormatLabelSelector(job.Spec.Selector),
			}, nil
		}),
	}
}

// jobStatus is the STATUS cell as Kubernetes 1.32 prints it: a finished job shows its outcome
// even while being deleted; otherwise deletion, suspension and a pending failure take precedence
// over Running.
func jobStatus(job *batchv1.Job) string {
	switch {
	case jobConditionTrue(job, batchv1.JobComplete):
		return "Complete"
	case jobConditionTrue(job, batchv1.JobFailed):
		return "Failed"
	case job.DeletionTimestamp != nil:
		return "Terminating"
	case jobConditionTrue(job, batchv1.JobSuspended):
		return "Suspended"
	case jobConditionTrue(job, batchv1.JobFailureTarget):
		return "FailureTarget"
	}
	return "Running"
}

// jobConditionTrue reports whether the first condition of type typ is True.
func jobConditionTrue(job *batchv1.Job, typ batchv1.JobConditionType) bool {
	for _, c := range job.Status.Conditions {
		if c.Type == typ {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// jobCompletions is "succeeded/completions"; a job without a completion count (a work queue)
// needs one success, and shows its parallelism when that is above one: "0/1 of 3".
func jobCompletions(job *batchv1.Job) string {
	if job.Spec.Completions != nil {
		return fmt.Sprintf("%d/%d", job.Status.Succeeded, *job.Spec.Completions)
	}
	if job.Spec.Parallelism != nil && *job.Spec.Parallelism > 1 {
		return fmt.Sprintf("%d/1 of %d", job.Status.Succeeded, *job.Spec.Parallelism)
	}
	return fmt.Sprintf("%d/1", job.Status.Succeeded)
}

// jobDuration is the time from start to completion, or to now while the job runs; empty before
// it starts.
func jobDuration(job *batchv1.Job, now time.Time) string {
	switch {
	case job.Status.StartTime == nil:
		return ""
	case job.Status.CompletionTime == nil:
		return duration.HumanDuration(now.Sub(job.Status.StartTime.Time))
	default:
		return duration.HumanDuration(job.Status.CompletionTime.Sub(job.Status.StartTime.Time))
	}
}

func cronJobPrinter() *registry.TablePrinter {
	spec := batchv1.CronJobSpec{}.SwaggerDoc()
	status := batchv1.CronJobStatus{}.SwaggerDoc()
	return &registry.TablePrinter{
		Columns: []metav1.TableColumnDefinition{
			nameColumn(),
			column("Schedule", columnTypeString, spec["schedule"]),
			column("Timezone", columnTypeString, spec["timeZone"]),
			column("Suspend", columnTypeBool, spec["suspend"]),
			column("Active", columnTypeInt, status["active"]),
			column("Last Schedule", columnTypeString, status["lastScheduleTime"]),
			ageColumn(),
			containersColumn(),
			imagesColumn(),
			wide(column("Selector", columnTypeString, batchv1.JobSpec{}.SwaggerDoc()["selector"])),
		},
		Row: typedRow("cronjobs", func(cj *batchv1.CronJob, now time.Time) ([]interface{}, error) {
			lastSchedule := noneCell
			if cj.Status.LastScheduleTime != nil {
				lastSchedule = age(*cj.Status.LastScheduleTime, now)
			}
			tmpl := cj.Spec.JobTemplate.Spec
			names, images := containerCells(tmpl.Template.Spec.Containers)
			// SUSPEND is declared boolean but Kubernetes sends the text True/False/<unset>.
			return []interface{}{
				cj.Name, cj.Spec.Schedule, derefOr(cj.Spec.TimeZone, noneCell), boolPtrCell(cj.Spec.Suspend),
				int64(len(cj.Status.Active)), lastSchedule, age(cj.CreationTimestamp, now),
				names, images, metav1.FormatLabelSelector(tmpl.Selector),
			}, nil
		}),
	}
}
