package controllers

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// testJobs plays the kubelet for Job pods bound to a node no simulator plays: a FailJob rule of
// the podFailurePolicy fails the Job with Kubernetes' conditions, and the pods of a Job deleted
// with propagationPolicy=Orphan lose the tracking finalizer (which would block their namespace's
// deletion forever).
func testJobs(t *testing.T, e *env) {
	ctx := context.Background()
	ns := e.namespace(t, "jobs")
	manualNode(ctx, t, e, "manual-jobs")
	jobs := e.client.BatchV1().Jobs(ns)
	newJob := func(name string) *batchv1.Job {
		return &batchv1.Job{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: batchv1.JobSpec{
				Completions: ptr.To[int32](2),
				Parallelism: ptr.To[int32](1),
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					NodeName:      "manual-jobs",
					Containers:    []corev1.Container{{Name: "main", Image: "registry.example/job:v1"}},
				}},
			},
		}
	}
	// podOf waits for the Job's pod holding the tracking finalizer.
	podOf := func(t *testing.T, job string) *corev1.Pod {
		t.Helper()
		var pod *corev1.Pod
		waitFor(t, 30*time.Second, func() error {
			pods, err := e.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=" + job})
			if err != nil {
				return err
			}
			if len(pods.Items) == 0 || !slices.Contains(pods.Items[0].Finalizers, batchv1.JobTrackingFinalizer) {
				return fmt.Errorf("no pod of job %s with the tracking finalizer: %d pods", job, len(pods.Items))
			}
			pod = &pods.Items[0]
			return nil
		})
		return pod
	}
	finalizerGone := func(pod *corev1.Pod) func() error {
		return func() error {
			cur, err := e.client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if slices.Contains(cur.Finalizers, batchv1.JobTrackingFinalizer) {
				return fmt.Errorf("pod %s still holds %s (owners %v)", pod.Name, batchv1.JobTrackingFinalizer, cur.OwnerReferences)
			}
			return nil
		}
	}

	t.Run("podFailurePolicy FailJob", func(t *testing.T) {
		job := newJob("fail-fast")
		job.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
			Action:      batchv1.PodFailurePolicyActionFailJob,
			OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{42}},
		}}}
		_, err := jobs.Create(ctx, job, metav1.CreateOptions{})
		must(t, err, "create job")
		pod := podOf(t, job.Name)
		waitFor(t, 10*time.Second, func() error {
			cur, err := e.client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			cur.Status.Phase = corev1.PodFailed
			cur.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", Image: "registry.example/job:v1",
				State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 42, FinishedAt: metav1.Now()}}}}
			_, err = e.client.CoreV1().Pods(ns).UpdateStatus(ctx, cur, metav1.UpdateOptions{})
			return err
		})
		want := fmt.Sprintf("Container main for pod %s/%s failed with exit code 42 matching FailJob rule at index 0", ns, pod.Name)
		waitFor(t, 30*time.Second, func() error {
			cur, err := jobs.Get(ctx, job.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			var got []string
			for _, c := range cur.Status.Conditions {
				if c.Status == corev1.ConditionTrue {
					got = append(got, fmt.Sprintf("%s/%s/%s", c.Type, c.Reason, c.Message))
				}
			}
			wantConds := []string{"FailureTarget/PodFailurePolicy/" + want, "Failed/PodFailurePolicy/" + want}
			if !slices.Equal(got, wantConds) || cur.Status.Failed != 1 {
				return fmt.Errorf("conditions %q failed=%d, want %q failed=1", got, cur.Status.Failed, wantConds)
			}
			return nil
		})
		waitFor(t, 10*time.Second, finalizerGone(pod))
	})

	t.Run("orphaned pods are released", func(t *testing.T) {
		job, err := jobs.Create(ctx, newJob("left-behind"), metav1.CreateOptions{})
		must(t, err, "create job")
		pod := podOf(t, job.Name)
		must(t, jobs.Delete(ctx, job.Name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationOrphan)}), "delete job")
		waitFor(t, 30*time.Second, finalizerGone(pod))
	})
}
