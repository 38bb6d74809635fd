package batch

import (
	"context"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/internal/registry"
	vu "github.com/skiff-sh/skiff/internal/registry/validationutil"
)

// testPod stands in for the core group's pod rules (defaults restartPolicy Always like Kubernetes).
var testPod = vu.PodTemplate{
	Default: func(t *corev1.PodTemplateSpec) {
		if t.Spec.RestartPolicy == "" {
			t.Spec.RestartPolicy = corev1.RestartPolicyAlways
		}
	},
}

func podTemplate() corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever,
		Containers:    []corev1.Container{{Name: "pi", Image: "perl"}},
	}}
}

// job returns a defaulted, created (selector generated) Job.
func job(mods ...func(*batchv1.Job)) *batchv1.Job {
	j := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "pi", Namespace: "default", UID: types.UID("1234-uid")},
		Spec:       batchv1.JobSpec{Template: podTemplate()},
	}
	DefaultJob(j, testPod)
	prepareJobForCreate(context.Background(), j)
	for _, m := range mods {
		m(j)
	}
	return j
}

func cronJob(mods ...func(*batchv1.CronJob)) *batchv1.CronJob {
	cj := &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "default"},
		Spec: batchv1.CronJobSpec{
			Schedule:    "*/5 * * * *",
			JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: podTemplate()}},
		},
	}
	DefaultCronJob(cj, testPod)
	for _, m := range mods {
		m(cj)
	}
	return cj
}

func resource(t *testing.T, plural string) *registry.Resource {
	t.Helper()
	for _, r := range ResourcesWith(testPod) {
		if r.Plural == plural {
			return r
		}
	}
	t.Fatalf("no resource %q", plural)
	return nil
}

type wantErr struct {
	field  string
	typ    field.ErrorType
	detail string
}

func checkErrs(t *testing.T, errs field.ErrorList, want *wantErr) {
	t.Helper()
	if want == nil {
		if len(errs) != 0 {
			t.Fatalf("want valid, got %v", errs)
		}
		return
	}
	for _, e := range errs {
		if e.Field == want.field && e.Type == want.typ && strings.Contains(e.Detail, want.detail) {
			return
		}
	}
	t.Fatalf("want %s %s %q, got %v", want.field, want.typ, want.detail, errs)
}

func TestJobDefaults(t *testing.T) {
	tests := []struct {
		name                                string
		in                                  batchv1.JobSpec
		completions, parallelism, backoffPI *int32
		backoff                             int32
		replacement                         batchv1.PodReplacementPolicy
	}{
		{"neither set", batchv1.JobSpec{}, ptr.To[int32](1), ptr.To[int32](1), nil, 6, batchv1.TerminatingOrFailed},
		{"parallelism only", batchv1.JobSpec{Parallelism: ptr.To[int32](3)}, nil, ptr.To[int32](3), nil, 6, batchv1.TerminatingOrFailed},
		{"completions only", batchv1.JobSpec{Completions: ptr.To[int32](4)}, ptr.To[int32](4), ptr.To[int32](1), nil, 6, batchv1.TerminatingOrFailed},
		{"per index backoff", batchv1.JobSpec{BackoffLimitPerIndex: ptr.To[int32](1)}, ptr.To[int32](1), ptr.To[int32](1), ptr.To[int32](1), 2147483647, batchv1.TerminatingOrFailed},
		{"failure policy", batchv1.JobSpec{PodFailurePolicy: &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
			Action: batchv1.PodFailurePolicyActionIgnore, OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget}},
		}}}}, ptr.To[int32](1), ptr.To[int32](1), nil, 6, batchv1.Failed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := &batchv1.Job{Spec: tt.in}
			DefaultJob(j, vu.PodTemplate{})
			s := j.Spec
			if !ptrEq(s.Completions, tt.completions) || !ptrEq(s.Parallelism, tt.parallelism) || *s.BackoffLimit != tt.backoff {
				t.Fatalf("completions %v parallelism %v backoff %d", s.Completions, s.Parallelism, *s.BackoffLimit)
			}
			if *s.CompletionMode != batchv1.NonIndexedCompletion || *s.Suspend || *s.ManualSelector || *s.PodReplacementPolicy != tt.replacement {
				t.Fatalf("mode %v suspend %v manual %v replacement %v", *s.CompletionMode, *s.Suspend, *s.ManualSelector, *s.PodReplacementPolicy)
			}
			if s.PodFailurePolicy != nil && s.PodFailurePolicy.Rules[0].OnPodConditions[0].Status != corev1.ConditionTrue {
				t.Fatal("pod condition pattern status not defaulted")
			}
		})
	}
}

func ptrEq(a, b *int32) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func TestJobCreateGeneratesSelector(t *testing.T) {
	ctx := context.Background()
	r := resource(t, "jobs")
	j := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "pi", Namespace: "default", UID: "abc"},
		Spec:       batchv1.JobSpec{Template: podTemplate()},
		Status:     batchv1.JobStatus{Succeeded: 3},
	}
	DefaultJob(j, testPod)
	r.Strategy.PrepareForCreate(ctx, j)
	want := map[string]string{"controller-uid": "abc", "batch.kubernetes.io/controller-uid": "abc", "job-name": "pi", "batch.kubernetes.io/job-name": "pi"}
	for k, v := range want {
		if j.Spec.Template.Labels[k] != v || j.Labels[k] != v {
			t.Fatalf("label %s: template %q job %q", k, j.Spec.Template.Labels[k], j.Labels[k])
		}
	}
	if len(j.Spec.Selector.MatchLabels) != 1 || j.Spec.Selector.MatchLabels["batch.kubernetes.io/controller-uid"] != "abc" {
		t.Fatalf("selector = %+v", j.Spec.Selector)
	}
	if j.Status.Succeeded != 0 || j.Generation != 1 {
		t.Fatalf("status %+v generation %d", j.Status, j.Generation)
	}
	checkErrs(t, r.Strategy.Validate(ctx, j), nil)
	if fs := r.SelectableFields(j); fs["status.successful"] != "0" {
		t.Fatalf("fields = %v", fs)
	}

	labeled := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "pi", Namespace: "default", UID: "abc"},
		Spec:       batchv1.JobSpec{Template: podTemplate()},
	}
	labeled.Spec.Template.Labels = map[string]string{"app": "pi"}
	DefaultJob(labeled, testPod)
	r.Strategy.PrepareForCreate(ctx, labeled)
	if labeled.Labels["app"] != "pi" || labeled.Labels["batch.kubernetes.io/controller-uid"] != "abc" || labeled.Spec.Template.Labels["app"] != "pi" {
		t.Fatalf("labels of a job with template labels: job %v template %v", labeled.Labels, labeled.Spec.Template.Labels)
	}
	checkErrs(t, r.Strategy.Validate(ctx, labeled), nil)

	manual := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "m", Namespace: "default", UID: "u"},
		Spec:       batchv1.JobSpec{ManualSelector: ptr.To(true), Template: podTemplate()},
	}
	DefaultJob(manual, testPod)
	r.Strategy.PrepareForCreate(ctx, manual)
	if manual.Spec.Selector != nil || len(manual.Spec.Template.Labels) != 0 {
		t.Fatal("manual selector job got generated labels")
	}
	checkErrs(t, r.Strategy.Validate(ctx, manual), &wantErr{"spec.selector", field.ErrorTypeRequired, ""})
}

func TestValidateJob(t *testing.T) {
	tests := []struct {
		name string
		obj  *batchv1.Job
		want *wantErr
	}{
		{"valid", job(), nil},
		{"restart Always", job(func(j *batchv1.Job) { j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways }), &wantErr{"spec.template.spec.restartPolicy", field.ErrorTypeNotSupported, `"OnFailure", "Never"`}},
		{"negative parallelism", job(func(j *batchv1.Job) { j.Spec.Parallelism = ptr.To[int32](-1) }), &wantErr{"spec.parallelism", field.ErrorTypeInvalid, "must be greater than or equal to 0"}},
		{"negative backoff", job(func(j *batchv1.Job) { j.Spec.BackoffLimit = ptr.To[int32](-1) }), &wantErr{"spec.backoffLimit", field.ErrorTypeInvalid, ""}},
		{"bad completion mode", job(func(j *batchv1.Job) { j.Spec.CompletionMode = ptr.To(batchv1.CompletionMode("Sorted")) }), &wantErr{"spec.completionMode", field.ErrorTypeNotSupported, ""}},
		{"managed by another controller", job(func(j *batchv1.Job) { j.Spec.ManagedBy = ptr.To("example.com/custom-job-controller") }), nil},
		{"managedBy not a domain-prefixed path", job(func(j *batchv1.Job) { j.Spec.ManagedBy = ptr.To("custom controller") }), &wantErr{"spec.managedBy", field.ErrorTypeInvalid, ""}},
		{"managedBy too long", job(func(j *batchv1.Job) { j.Spec.ManagedBy = ptr.To("example.com/" + strings.Repeat("a", 60)) }), &wantErr{"spec.managedBy", field.ErrorTypeTooLong, ""}},
		{"indexed without completions", job(func(j *batchv1.Job) {
			j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
			j.Spec.Completions = nil
		}), &wantErr{"spec.completions", field.ErrorTypeRequired, "when completion mode is Indexed"}},
		{"indexed hostname too long", job(func(j *batchv1.Job) {
			j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
			j.Spec.Completions = ptr.To[int32](100)
			j.Name = strings.Repeat("a", 62)
		}), &wantErr{"metadata.name", field.ErrorTypeInvalid, "will not able to create pod with invalid DNS label"}},
		{"per index needs indexed", job(func(j *batchv1.Job) { j.Spec.BackoffLimitPerIndex = ptr.To[int32](1) }), &wantErr{"spec.backoffLimitPerIndex", field.ErrorTypeInvalid, "requires indexed completion mode"}},
		{"selector not generated", job(func(j *batchv1.Job) {
			j.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"job-name": "pi"}}
		}), &wantErr{"spec.selector", field.ErrorTypeInvalid, "`selector` not auto-generated"}},
		{"template label mismatch", job(func(j *batchv1.Job) { j.Spec.Template.Labels["batch.kubernetes.io/controller-uid"] = "other" }), &wantErr{"spec.template.metadata.labels", field.ErrorTypeInvalid, "`selector` does not match template `labels`"}},
		{"legacy label changed", job(func(j *batchv1.Job) { j.Spec.Template.Labels["job-name"] = "x" }), &wantErr{"spec.template.metadata.labels[job-name]", field.ErrorTypeInvalid, "must be 'pi'"}},
		{"no uid", job(func(j *batchv1.Job) { j.UID = "" }), &wantErr{"metadata.uid", field.ErrorTypeRequired, ""}},
		{"failure policy with OnFailure", job(func(j *batchv1.Job) {
			j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{}
			j.Spec.PodReplacementPolicy = ptr.To(batchv1.Failed)
			j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
		}), &wantErr{"spec.template.spec.restartPolicy", field.ErrorTypeInvalid, `only "Never" is supported`}},
		{"bad replacement policy", job(func(j *batchv1.Job) { j.Spec.PodReplacementPolicy = ptr.To(batchv1.PodReplacementPolicy("Never")) }), &wantErr{"spec.podReplacementPolicy", field.ErrorTypeNotSupported, ""}},
		{"no containers", job(func(j *batchv1.Job) { j.Spec.Template.Spec.Containers = nil }), &wantErr{"spec.template.spec.containers", field.ErrorTypeRequired, ""}},
	}
	s := resource(t, "jobs").Strategy
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkErrs(t, s.Validate(context.Background(), tt.obj), tt.want)
		})
	}
}

func indexed(completions int32, mods ...func(*batchv1.Job)) *batchv1.Job {
	return job(append([]func(*batchv1.Job){func(j *batchv1.Job) {
		j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
		j.Spec.Completions = ptr.To(completions)
	}}, mods...)...)
}

func withFailurePolicy(rules ...batchv1.PodFailurePolicyRule) func(*batchv1.Job) {
	return func(j *batchv1.Job) {
		j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: rules}
		j.Spec.PodReplacementPolicy = ptr.To(batchv1.Failed)
	}
}

func onExit(action batchv1.PodFailurePolicyAction, op batchv1.PodFailurePolicyOnExitCodesOperator, codes ...int32) batchv1.PodFailurePolicyRule {
	return batchv1.PodFailurePolicyRule{Action: action, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: op, Values: codes}}
}

func withSuccessPolicy(rules ...batchv1.SuccessPolicyRule) func(*batchv1.Job) {
	return func(j *batchv1.Job) { j.Spec.SuccessPolicy = &batchv1.SuccessPolicy{Rules: rules} }
}

func TestValidateJobPolicies(t *testing.T) {
	const in, notIn = batchv1.PodFailurePolicyOnExitCodesOpIn, batchv1.PodFailurePolicyOnExitCodesOpNotIn
	disruption := batchv1.PodFailurePolicyRule{Action: batchv1.PodFailurePolicyActionIgnore,
		OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}}}
	perIndex := func(j *batchv1.Job) { j.Spec.BackoffLimitPerIndex = ptr.To[int32](1) }
	tests := []struct {
		name string
		obj  *batchv1.Job
		want *wantErr
	}{
		{"failure policy accepted", job(withFailurePolicy(onExit(batchv1.PodFailurePolicyActionFailJob, in, 1, 42), onExit(batchv1.PodFailurePolicyActionCount, notIn, 0), disruption)), nil},
		{"FailIndex with backoffLimitPerIndex", indexed(3, perIndex, withFailurePolicy(onExit(batchv1.PodFailurePolicyActionFailIndex, in, 3))), nil},
		{"FailIndex needs backoffLimitPerIndex", job(withFailurePolicy(onExit(batchv1.PodFailurePolicyActionFailIndex, in, 3))),
			&wantErr{"spec.podFailurePolicy.rules[0].action", field.ErrorTypeInvalid, "requires the backoffLimitPerIndex to be set"}},
		{"unknown action", job(withFailurePolicy(onExit("Retry", in, 3))), &wantErr{"spec.podFailurePolicy.rules[0].action", field.ErrorTypeNotSupported, ""}},
		{"missing action", job(withFailurePolicy(onExit("", in, 3))), &wantErr{"spec.podFailurePolicy.rules[0].action", field.ErrorTypeRequired, ""}},
		{"In 0", job(withFailurePolicy(onExit(batchv1.PodFailurePolicyActionFailJob, in, 0))),
			&wantErr{"spec.podFailurePolicy.rules[0].onExitCodes.values[0]", field.ErrorTypeInvalid, "must not be 0 for the In operator"}},
		{"unordered", job(withFailurePolicy(onExit(batchv1.PodFailurePolicyActionFailJob, in, 2, 1))),
			&wantErr{"spec.podFailurePolicy.rules[0].onExitCodes.values", field.ErrorTypeInvalid, "must be ordered"}},
		{"duplicate", job(withFailurePolicy(onExit(batchv1.PodFailurePolicyActionFailJob, in, 2, 2))),
			&wantErr{"spec.podFailurePolicy.rules[0].onExitCodes.values[1]", field.ErrorTypeDuplicate, ""}},
		{"no values", job(withFailurePolicy(onExit(batchv1.PodFailurePolicyActionFailJob, in))),
			&wantErr{"spec.podFailurePolicy.rules[0].onExitCodes.values", field.ErrorTypeInvalid, "at least one value is required"}},
		{"bad operator", job(withFailurePolicy(onExit(batchv1.PodFailurePolicyActionFailJob, "Equals", 1))),
			&wantErr{"spec.podFailurePolicy.rules[0].onExitCodes.operator", field.ErrorTypeNotSupported, ""}},
		{"unknown container", job(withFailurePolicy(func() batchv1.PodFailurePolicyRule {
			r := onExit(batchv1.PodFailurePolicyActionFailJob, in, 1)
			r.OnExitCodes.ContainerName = ptr.To("nope")
			return r
		}())), &wantErr{"spec.podFailurePolicy.rules[0].onExitCodes.containerName", field.ErrorTypeInvalid, "must be one of the container or initContainer names"}},
		{"both requirements", job(withFailurePolicy(func() batchv1.PodFailurePolicyRule {
			r := onExit(batchv1.PodFailurePolicyActionFailJob, in, 1)
			r.OnPodConditions = disruption.OnPodConditions
			return r
		}())), &wantErr{"spec.podFailurePolicy.rules[0]", field.ErrorTypeInvalid, "specifying both OnExitCodes and OnPodConditions is not supported"}},
		{"no requirement", job(withFailurePolicy(batchv1.PodFailurePolicyRule{Action: batchv1.PodFailurePolicyActionIgnore})),
			&wantErr{"spec.podFailurePolicy.rules[0]", field.ErrorTypeInvalid, "specifying one of OnExitCodes and OnPodConditions is required"}},
		{"bad condition status", job(withFailurePolicy(batchv1.PodFailurePolicyRule{Action: batchv1.PodFailurePolicyActionIgnore,
			OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget, Status: "Maybe"}}})),
			&wantErr{"spec.podFailurePolicy.rules[0].onPodConditions[0].status", field.ErrorTypeNotSupported, ""}},
		{"failure policy needs replacement policy Failed", job(func(j *batchv1.Job) {
			withFailurePolicy(disruption)(j)
			j.Spec.PodReplacementPolicy = ptr.To(batchv1.TerminatingOrFailed)
		}), &wantErr{"spec.podReplacementPolicy", field.ErrorTypeNotSupported, ""}},
		{"maxFailedIndexes needs indexed", job(func(j *batchv1.Job) { j.Spec.MaxFailedIndexes = ptr.To[int32](1) }),
			&wantErr{"spec.maxFailedIndexes", field.ErrorTypeInvalid, "requires indexed completion mode"}},
		{"maxFailedIndexes above completions", indexed(3, perIndex, func(j *batchv1.Job) { j.Spec.MaxFailedIndexes = ptr.To[int32](4) }),
			&wantErr{"spec.maxFailedIndexes", field.ErrorTypeInvalid, "must be less than or equal to completions"}},
		{"many completions per index need maxFailedIndexes", indexed(200_000, perIndex),
			&wantErr{"spec.maxFailedIndexes", field.ErrorTypeRequired, "must be specified when completions is above 100000"}},
		{"many completions without per index", indexed(200_000), nil},
		{"success policy", indexed(5, withSuccessPolicy(batchv1.SuccessPolicyRule{SucceededIndexes: ptr.To("0,2-4"), SucceededCount: ptr.To[int32](2)},
			batchv1.SuccessPolicyRule{SucceededCount: ptr.To[int32](5)})), nil},
		{"success policy needs indexed", job(withSuccessPolicy(batchv1.SuccessPolicyRule{SucceededCount: ptr.To[int32](1)})),
			&wantErr{"spec.successPolicy", field.ErrorTypeInvalid, "requires indexed completion mode"}},
		{"success policy without rules", indexed(5, withSuccessPolicy()),
			&wantErr{"spec.successPolicy.rules", field.ErrorTypeRequired, "at least one rules must be specified"}},
		{"empty rule", indexed(5, withSuccessPolicy(batchv1.SuccessPolicyRule{})),
			&wantErr{"spec.successPolicy.rules[0]", field.ErrorTypeRequired, "at least one of succeededCount or succeededIndexes"}},
		{"index beyond completions", indexed(5, withSuccessPolicy(batchv1.SuccessPolicyRule{SucceededIndexes: ptr.To("1-5")})),
			&wantErr{"spec.successPolicy.rules[0].succeededIndexes", field.ErrorTypeInvalid, `error parsing succeededIndexes: too large index: "5"`}},
		{"indexes out of order", indexed(5, withSuccessPolicy(batchv1.SuccessPolicyRule{SucceededIndexes: ptr.To("3,1")})),
			&wantErr{"spec.successPolicy.rules[0].succeededIndexes", field.ErrorTypeInvalid, "non-increasing order, previous: 3, current: 1"}},
		{"count beyond completions", indexed(5, withSuccessPolicy(batchv1.SuccessPolicyRule{SucceededCount: ptr.To[int32](6)})),
			&wantErr{"spec.successPolicy.rules[0].succeededCount", field.ErrorTypeInvalid, "must be less than or equal to 5 (the number of specified completions)"}},
		{"count beyond indexes", indexed(5, withSuccessPolicy(batchv1.SuccessPolicyRule{SucceededIndexes: ptr.To("0,1"), SucceededCount: ptr.To[int32](3)})),
			&wantErr{"spec.successPolicy.rules[0].succeededCount", field.ErrorTypeInvalid, "must be less than or equal to 2 (the number of indexes in the specified succeededIndexes field)"}},
	}
	s := resource(t, "jobs").Strategy
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkErrs(t, s.Validate(context.Background(), tt.obj), tt.want)
		})
	}
}

func TestCountIndexes(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want int32
		err  bool
	}{{"", 0, false}, {"0", 1, false}, {"0,2-4", 4, false}, {"1-1", 0, true}, {"1-2-3", 0, true}, {"x", 0, true}, {"2,2", 0, true}, {"9", 0, true}} {
		got, err := countIndexes(tt.in, 5)
		if got != tt.want || (err != nil) != tt.err {
			t.Errorf("%q: got %d, %v", tt.in, got, err)
		}
	}
}

func TestJobUpdate(t *testing.T) {
	ctx := context.Background()
	s := resource(t, "jobs").Strategy
	old := job(func(j *batchv1.Job) { j.ResourceVersion = "3" })
	more := old.DeepCopy()
	more.Spec.Parallelism = ptr.To[int32](4)
	checkErrs(t, s.ValidateUpdate(ctx, more, old), nil)
	img := old.DeepCopy()
	img.Spec.Template.Spec.Containers[0].Image = "perl:2"
	checkErrs(t, s.ValidateUpdate(ctx, img, old), &wantErr{"spec.template", field.ErrorTypeInvalid, "field is immutable"})
	suspended := old.DeepCopy()
	suspended.Spec.Suspend = ptr.To(true)
	img = suspended.DeepCopy()
	img.Spec.Template.Spec.Containers[0].Image = "perl:2"
	checkErrs(t, s.ValidateUpdate(ctx, img, suspended), nil)
	handed := old.DeepCopy()
	handed.Spec.ManagedBy = ptr.To("example.com/custom-job-controller")
	checkErrs(t, s.ValidateUpdate(ctx, handed, old), &wantErr{"spec.managedBy", field.ErrorTypeInvalid, "field is immutable"})
	comp := old.DeepCopy()
	comp.Spec.Completions = ptr.To[int32](5)
	checkErrs(t, s.ValidateUpdate(ctx, comp, old), &wantErr{"spec.completions", field.ErrorTypeInvalid, "field is immutable"})
	oldIndexed := indexed(3, func(j *batchv1.Job) { j.ResourceVersion = "3" })
	policy := oldIndexed.DeepCopy()
	withSuccessPolicy(batchv1.SuccessPolicyRule{SucceededCount: ptr.To[int32](1)})(policy)
	checkErrs(t, s.ValidateUpdate(ctx, policy, oldIndexed), &wantErr{"spec.successPolicy", field.ErrorTypeInvalid, "field is immutable"})

	st := resource(t, "jobs").Status
	bad := old.DeepCopy()
	bad.Status.Active = -1
	checkErrs(t, st.ValidateUpdate(ctx, bad, old), &wantErr{"status.active", field.ErrorTypeInvalid, ""})
	good := old.DeepCopy()
	good.Status.Succeeded = 1
	good.Spec.Parallelism = ptr.To[int32](9)
	st.PrepareForUpdate(ctx, good, old)
	if *good.Spec.Parallelism != 1 || good.Status.Succeeded != 1 {
		t.Fatal("status update changed spec or lost status")
	}
	// /status keeps annotation changes, as upstream (conformance "Job should apply changes to a
	// job status" patches one).
	annotated := old.DeepCopy()
	annotated.Annotations = map[string]string{"patchedstatus": "true"}
	st.PrepareForUpdate(ctx, annotated, old)
	if annotated.Annotations["patchedstatus"] != "true" {
		t.Errorf("status update dropped the annotation: %v", annotated.Annotations)
	}
}

func TestCronJobDefaults(t *testing.T) {
	s := runtime.NewScheme()
	if err := batchv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := RegisterDefaultsWith(s, testPod); err != nil {
		t.Fatal(err)
	}
	cj := &batchv1.CronJob{}
	s.Default(cj)
	if cj.Spec.ConcurrencyPolicy != batchv1.AllowConcurrent || *cj.Spec.Suspend || *cj.Spec.SuccessfulJobsHistoryLimit != 3 || *cj.Spec.FailedJobsHistoryLimit != 1 {
		t.Fatalf("cronjob defaults = %+v", cj.Spec)
	}
	if cj.Spec.JobTemplate.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyAlways || cj.Spec.JobTemplate.Spec.BackoffLimit != nil {
		t.Fatalf("job template defaults = %+v", cj.Spec.JobTemplate.Spec)
	}
	jl := &batchv1.JobList{Items: []batchv1.Job{{}}}
	s.Default(jl)
	if *jl.Items[0].Spec.BackoffLimit != 6 {
		t.Fatal("job list items not defaulted")
	}
}

func TestValidateCronJob(t *testing.T) {
	tests := []struct {
		name string
		obj  *batchv1.CronJob
		want *wantErr
	}{
		{"valid", cronJob(), nil},
		{"descriptor", cronJob(func(c *batchv1.CronJob) { c.Spec.Schedule = "@hourly" }), nil},
		{"time zone", cronJob(func(c *batchv1.CronJob) { c.Spec.TimeZone = ptr.To("Europe/Berlin") }), nil},
		{"no schedule", cronJob(func(c *batchv1.CronJob) { c.Spec.Schedule = "" }), &wantErr{"spec.schedule", field.ErrorTypeRequired, ""}},
		{"bad schedule", cronJob(func(c *batchv1.CronJob) { c.Spec.Schedule = "every minute" }), &wantErr{"spec.schedule", field.ErrorTypeInvalid, "expected exactly 5 fields"}},
		{"out of range", cronJob(func(c *batchv1.CronJob) { c.Spec.Schedule = "61 * * * *" }), &wantErr{"spec.schedule", field.ErrorTypeInvalid, "above maximum"}},
		{"TZ in schedule", cronJob(func(c *batchv1.CronJob) { c.Spec.Schedule = "TZ=UTC 0 * * * *" }), &wantErr{"spec.schedule", field.ErrorTypeInvalid, "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"}},
		{"unknown zone", cronJob(func(c *batchv1.CronJob) { c.Spec.TimeZone = ptr.To("Mars/Olympus") }), &wantErr{"spec.timeZone", field.ErrorTypeInvalid, "unknown time zone Mars/Olympus"}},
		{"bad zone chars", cronJob(func(c *batchv1.CronJob) { c.Spec.TimeZone = ptr.To("../etc") }), &wantErr{"spec.timeZone", field.ErrorTypeInvalid, "unknown time zone ../etc"}},
		{"empty zone", cronJob(func(c *batchv1.CronJob) { c.Spec.TimeZone = ptr.To("") }), &wantErr{"spec.timeZone", field.ErrorTypeInvalid, "timeZone must be nil or non-empty string"}},
		{"local zone", cronJob(func(c *batchv1.CronJob) { c.Spec.TimeZone = ptr.To("Local") }), &wantErr{"spec.timeZone", field.ErrorTypeInvalid, "timeZone must be an explicit time zone"}},
		{"bad concurrency", cronJob(func(c *batchv1.CronJob) { c.Spec.ConcurrencyPolicy = "Sometimes" }), &wantErr{"spec.concurrencyPolicy", field.ErrorTypeNotSupported, ""}},
		{"negative deadline", cronJob(func(c *batchv1.CronJob) { c.Spec.StartingDeadlineSeconds = ptr.To[int64](-1) }), &wantErr{"spec.startingDeadlineSeconds", field.ErrorTypeInvalid, ""}},
		{"negative history", cronJob(func(c *batchv1.CronJob) { c.Spec.FailedJobsHistoryLimit = ptr.To[int32](-1) }), &wantErr{"spec.failedJobsHistoryLimit", field.ErrorTypeInvalid, ""}},
		{"long name", cronJob(func(c *batchv1.CronJob) { c.Name = strings.Repeat("c", 53) }), &wantErr{"metadata.name", field.ErrorTypeInvalid, "must be no more than 52 characters"}},
		{"template restart Always", cronJob(func(c *batchv1.CronJob) {
			c.Spec.JobTemplate.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways
		}), &wantErr{"spec.jobTemplate.spec.template.spec.restartPolicy", field.ErrorTypeNotSupported, ""}},
		{"template selector", cronJob(func(c *batchv1.CronJob) {
			c.Spec.JobTemplate.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}}
		}), &wantErr{"spec.jobTemplate.spec.selector", field.ErrorTypeInvalid, "`selector` will be auto-generated"}},
		{"manual selector", cronJob(func(c *batchv1.CronJob) { c.Spec.JobTemplate.Spec.ManualSelector = ptr.To(true) }), &wantErr{"spec.jobTemplate.spec.manualSelector", field.ErrorTypeNotSupported, ""}},
	}
	s := resource(t, "cronjobs").Strategy
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkErrs(t, s.Validate(context.Background(), tt.obj), tt.want)
		})
	}
}

func TestCronJobUpdateKeepsLegacyTZ(t *testing.T) {
	ctx := context.Background()
	s := resource(t, "cronjobs").Strategy
	old := cronJob(func(c *batchv1.CronJob) { c.ResourceVersion = "1"; c.Spec.Schedule = "CRON_TZ=UTC 0 * * * *" })
	upd := old.DeepCopy()
	upd.Spec.Suspend = ptr.To(true)
	checkErrs(t, s.ValidateUpdate(ctx, upd, old), nil)
	both := old.DeepCopy()
	both.Spec.TimeZone = ptr.To("UTC")
	checkErrs(t, s.ValidateUpdate(ctx, both, old), &wantErr{"spec.schedule", field.ErrorTypeInvalid, "cannot use both timeZone field and TZ or CRON_TZ in schedule"})
	plain := cronJob(func(c *batchv1.CronJob) { c.ResourceVersion = "1" })
	addTZ := plain.DeepCopy()
	addTZ.Spec.Schedule = "TZ=UTC 0 * * * *"
	checkErrs(t, s.ValidateUpdate(ctx, addTZ, plain), &wantErr{"spec.schedule", field.ErrorTypeInvalid, "use timeZone field instead"})
}
