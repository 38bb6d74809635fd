package batch

import (
	"context"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// With the real core hooks a Job without restartPolicy gets Always from the pod defaults and is
// refused, as Kubernetes refuses it; with Never it is valid.
func TestJobWithCorePodRules(t *testing.T) {
	s := runtime.NewScheme()
	if err := batchv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := RegisterDefaults(s); err != nil {
		t.Fatal(err)
	}
	jobs := Resources()[0]
	ctx := context.Background()
	j := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "pi", Namespace: "default", UID: "u-1"},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "pi", Image: "perl:5.34"}},
		}}},
	}
	s.Default(j)
	jobs.Strategy.PrepareForCreate(ctx, j)
	checkErrs(t, jobs.Strategy.Validate(ctx, j), &wantErr{"spec.template.spec.restartPolicy", field.ErrorTypeNotSupported, `supported values: "OnFailure", "Never"`})

	j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
	checkErrs(t, jobs.Strategy.Validate(ctx, j), nil)
	if j.Spec.Template.Spec.Containers[0].ImagePullPolicy != corev1.PullIfNotPresent {
		t.Fatalf("pull policy = %q", j.Spec.Template.Spec.Containers[0].ImagePullPolicy)
	}
}
