package batch

import (
	"fmt"
	"math"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/internal/registry/validationutil"
)

const defaultBackoffLimit = 6

// RegisterDefaults registers the batch/v1 defaulting functions on s, with the core registry's
// pod-template defaults (CorePodTemplate) applied to templates after the workload's own defaults.
func RegisterDefaults(s *runtime.Scheme) error { return RegisterDefaultsWith(s, CorePodTemplate()) }

// RegisterDefaultsWith is RegisterDefaults with other pod-template hooks (pod may be zero: no
// template defaults).
func RegisterDefaultsWith(s *runtime.Scheme, pod validationutil.PodTemplate) error {
	if s == nil {
		return fmt.Errorf("register batch/v1 defaults: nil scheme")
	}
	s.AddTypeDefaultingFunc(&batchv1.Job{}, func(o any) { DefaultJob(o.(*batchv1.Job), pod) })
	s.AddTypeDefaultingFunc(&batchv1.JobList{}, func(o any) {
		l := o.(*batchv1.JobList)
		for i := range l.Items {
			DefaultJob(&l.Items[i], pod)
		}
	})
	s.AddTypeDefaultingFunc(&batchv1.CronJob{}, func(o any) { DefaultCronJob(o.(*batchv1.CronJob), pod) })
	s.AddTypeDefaultingFunc(&batchv1.CronJobList{}, func(o any) {
		l := o.(*batchv1.CronJobList)
		for i := range l.Items {
			DefaultCronJob(&l.Items[i], pod)
		}
	})
	return nil
}

// DefaultJob applies Kubernetes' Job defaults: completions and parallelism 1 when both are unset
// (parallelism 1 when only it is), backoffLimit 6 (MaxInt32 with backoffLimitPerIndex),
// completionMode NonIndexed, suspend and manualSelector false, podReplacementPolicy Failed with a
// podFailurePolicy and TerminatingOrFailed otherwise, pod-condition patterns' status True, the
// template labels as the Job's labels when it has none, then the pod-template defaults.
func DefaultJob(j *batchv1.Job, pod validationutil.PodTemplate) {
	spec := &j.Spec
	if spec.Completions == nil && spec.Parallelism == nil {
		spec.Completions = ptr.To[int32](1)
	}
	if spec.Parallelism == nil {
		spec.Parallelism = ptr.To[int32](1)
	}
	if spec.BackoffLimit == nil {
		if spec.BackoffLimitPerIndex != nil {
			spec.BackoffLimit = ptr.To[int32](math.MaxInt32)
		} else {
			spec.BackoffLimit = ptr.To[int32](defaultBackoffLimit)
		}
	}
	if j.Spec.Template.Labels != nil && len(j.Labels) == 0 {
		j.Labels = j.Spec.Template.Labels
	}
	if spec.CompletionMode == nil {
		spec.CompletionMode = ptr.To(batchv1.NonIndexedCompletion)
	}
	if spec.Suspend == nil {
		spec.Suspend = ptr.To(false)
	}
	if spec.ManualSelector == nil {
		spec.ManualSelector = ptr.To(false)
	}
	if spec.PodFailurePolicy != nil {
		for _, rule := range spec.PodFailurePolicy.Rules {
			for i := range rule.OnPodConditions {
				if rule.OnPodConditions[i].Status == "" {
					rule.OnPodConditions[i].Status = corev1.ConditionTrue
				}
			}
		}
	}
	if spec.PodReplacementPolicy == nil {
		if spec.PodFailurePolicy != nil {
			spec.PodReplacementPolicy = ptr.To(batchv1.Failed)
		} else {
			spec.PodReplacementPolicy = ptr.To(batchv1.TerminatingOrFailed)
		}
	}
	pod.ApplyDefaults(&spec.Template)
}

// DefaultCronJob applies concurrencyPolicy Allow, suspend false, successfulJobsHistoryLimit 3,
// failedJobsHistoryLimit 1 and the pod-template defaults of the job template (the Job defaults
// themselves apply when the controller creates each Job, as in Kubernetes).
func DefaultCronJob(cj *batchv1.CronJob, pod validationutil.PodTemplate) {
	spec := &cj.Spec
	if spec.ConcurrencyPolicy == "" {
		spec.ConcurrencyPolicy = batchv1.AllowConcurrent
	}
	if spec.Suspend == nil {
		spec.Suspend = ptr.To(false)
	}
	if spec.SuccessfulJobsHistoryLimit == nil {
		spec.SuccessfulJobsHistoryLimit = ptr.To[int32](3)
	}
	if spec.FailedJobsHistoryLimit == nil {
		spec.FailedJobsHistoryLimit = ptr.To[int32](1)
	}
	pod.ApplyDefaults(&spec.JobTemplate.Spec.Template)
}
