package batch

import (
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/skiff-sh/skiff/internal/registry"
	"github.com/skiff-sh/skiff/internal/registry/core"
	vu "github.com/skiff-sh/skiff/internal/registry/validationutil"
)

// Resources returns the batch/v1 resources, validating pod templates with the core registry's rules.
// Job creation needs metadata.uid filled before PrepareForCreate: the generated selector uses it.
func Resources() []*registry.Resource { return ResourcesWith(CorePodTemplate()) }

// CorePodTemplate is the core registry's pod-template defaulting and validation, the hooks
// Resources and RegisterDefaults use.
func CorePodTemplate() vu.PodTemplate {
	return vu.PodTemplate{Default: core.DefaultPodTemplateSpec, Validate: core.ValidatePodTemplateSpec}
}

// ResourcesWith is Resources with other pod-template hooks (tests use simplified ones).
func ResourcesWith(pod vu.PodTemplate) []*registry.Resource {
	gv := batchv1.SchemeGroupVersion
	return []*registry.Resource{
		{
			GroupVersion: gv, Kind: "Job", ListKind: "JobList", Plural: "jobs", Singular: "job",
			Categories: []string{"all"}, Namespaced: true,
			New:     func() runtime.Object { return &batchv1.Job{} },
			NewList: func() runtime.Object { return &batchv1.JobList{} },
			Strategy: &vu.Strategy[*batchv1.Job]{
				APIVersion:          gv.String(),
				Namespaced:          true,
				KeepStatus:          func(j, old *batchv1.Job) { j.Status = old.Status },
				SpecEqual:           func(j, old *batchv1.Job) bool { return apiequality.Semantic.DeepEqual(j.Spec, old.Spec) },
				OnCreate:            prepareJobForCreate,
				ValidateObject:      func(j *batchv1.Job) field.ErrorList { return ValidateJob(j, pod) },
				ValidateChange:      validateJobChange,
				UnconditionalUpdate: true,
			},
			Status: &vu.StatusStrategy[*batchv1.Job]{
				APIVersion:     gv.String(),
				KeepSpec:       func(j, old *batchv1.Job) { j.Spec = old.Spec },
				ValidateStatus: func(j, _ *batchv1.Job) field.ErrorList { return ValidateJobStatus(&j.Status) },
				// Upstream's job status strategy restores only the spec; conformance "Job should
				// apply changes to a job status" patches an annotation through /status.
			},
			SelectableFields: jobFields,
		},
		{
			GroupVersion: gv, Kind: "CronJob", ListKind: "CronJobList", Plural: "cronjobs", Singular: "cronjob",
			ShortNames: []string{"cj"}, Categories: []string{"all"}, Namespaced: true,
			New:     func() runtime.Object { return &batchv1.CronJob{} },
			NewList: func() runtime.Object { return &batchv1.CronJobList{} },
			Strategy: &vu.Strategy[*batchv1.CronJob]{
				APIVersion:     gv.String(),
				Namespaced:     true,
				ClearStatus:    func(cj *batchv1.CronJob) { cj.Status = batchv1.CronJobStatus{} },
				KeepStatus:     func(cj, old *batchv1.CronJob) { cj.Status = old.Status },
				SpecEqual:      func(cj, old *batchv1.CronJob) bool { return apiequality.Semantic.DeepEqual(cj.Spec, old.Spec) },
				ValidateObject: func(cj *batchv1.CronJob) field.ErrorList { return ValidateCronJob(cj, nil, pod) },
				ValidateUpdateObject: func(cj, old *batchv1.CronJob) field.ErrorList {
					return ValidateCronJob(cj, old, pod)
				},
				UnconditionalUpdate: true,
			},
			Status: &vu.StatusStrategy[*batchv1.CronJob]{
				APIVersion: gv.String(),
				KeepSpec:   func(cj, old *batchv1.CronJob) { cj.Spec = old.Spec },
				// As upstream's cronjob status strategy: only the spec is restored.
			},
		},
	}
}

// jobFields are the Job's field-selector fields beyond metadata, as Kubernetes serves them.
func jobFields(obj runtime.Object) fields.Set {
	j, ok := obj.(*batchv1.Job)
	if !ok {
		return nil
	}
	return fields.Set{"status.successful": strconv.Itoa(int(j.Status.Succeeded))}
}
