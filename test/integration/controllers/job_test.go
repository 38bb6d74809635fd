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

// testJobs plays the kubelet for Job pods bound to a node no simulator plays (its empty
// allocatable keeps the scheduler away): a FailJob rule of the podFailurePolicy fails the Job with
// Kubernetes' conditions; the pods of a Job deleted with propagationPolicy=Orphan lose the tracking
// finalizer (which would block their namespace's deletion forever); backoffLimitPerIndex fails an
// index and then the Job with FailedIndexes; a successPolicy completes the Job with SuccessPolicy
// once the other indexes are stopped.
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
	// indexPods waits for one pod per index of an Indexed Job.
	indexPods := func(t *testing.T, job string, completions int) map[string]*corev1.Pod {
		t.Helper()
		var byIndex map[string]*corev1.Pod
		waitFor(t, 30*time.Second, func() error {
			pods, err := e.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=" + job})
			if err != nil {
				return err
			}
			byIndex = map[string]*corev1.Pod{}
			for i := range pods.Items {
				byIndex[pods.Items[i].Annotations[batchv1.JobCompletionIndexAnnotation]] = &pods.Items[i]
			}
			if len(byIndex) != completions {
				return fmt.Errorf("pods of job %s by index: %d, want %d", job, len(byIndex), completions)
			}
			return nil
		})
		return byIndex
	}
	// finish plays the kubelet: the pod's container exits with code.
	finish := func(t *testing.T, pod *corev1.Pod, code int32) {
		t.Helper()
		waitFor(t, 10*time.Second, func() error {
			cur, err := e.client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			cur.Status.Phase = corev1.PodSucceeded
			if code != 0 {
				cur.Status.Phase = corev1.PodFailed
			}
			cur.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", Image: "registry.example/job:v1",
				State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, FinishedAt: metav1.Now()}}}}
			_, err = e.client.CoreV1().Pods(ns).UpdateStatus(ctx, cur, metav1.UpdateOptions{})
			return err
		})
	}
	// conditions are the Job's true conditions as type/reason/message.
	conditions := func(job *batchv1.Job) []string {
		var out []string
		for _, c := range job.Status.Conditions {
			if c.Status == corev1.ConditionTrue {
				out = append(out, fmt.Sprintf("%s/%s/%s", c.Type, c.Reason, c.Message))
			}
		}
		return out
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
		finish(t, pod, 42)
		want := fmt.Sprintf("Container main for pod %s/%s failed with exit code 42 matching FailJob rule at index 0", ns, pod.Name)
		waitFor(t, 30*time.Second, func() error {
			cur, err := jobs.Get(ctx, job.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			got := conditions(cur)
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

	t.Run("backoffLimitPerIndex", func(t *testing.T) {
		job := newJob("per-index")
		job.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
		job.Spec.Parallelism = ptr.To[int32](2)
		job.Spec.BackoffLimitPerIndex = ptr.To[int32](0)
		_, err := jobs.Create(ctx, job, metav1.CreateOptions{})
		must(t, err, "create job")
		pods := indexPods(t, job.Name, 2)
		finish(t, pods["0"], 1)
		finish(t, pods["1"], 0)
		const want = "Job has failed indexes"
		waitFor(t, 30*time.Second, func() error {
			cur, err := jobs.Get(ctx, job.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			got := conditions(cur)
			wantConds := []string{"FailureTarget/FailedIndexes/" + want, "Failed/FailedIndexes/" + want}
			if !slices.Equal(got, wantConds) || ptr.Deref(cur.Status.FailedIndexes, "") != "0" || cur.Status.CompletedIndexes != "1" ||
				cur.Status.Failed != 1 || cur.Status.Succeeded != 1 {
				return fmt.Errorf("conditions %q failedIndexes %v completedIndexes %q failed %d succeeded %d",
					got, ptr.Deref(cur.Status.FailedIndexes, "<nil>"), cur.Status.CompletedIndexes, cur.Status.Failed, cur.Status.Succeeded)
			}
			return nil
		})
	})

	t.Run("successPolicy", func(t *testing.T) {
		job := newJob("leader")
		job.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
		job.Spec.Completions = ptr.To[int32](3)
		job.Spec.Parallelism = ptr.To[int32](3)
		job.Spec.SuccessPolicy = &batchv1.SuccessPolicy{Rules: []batchv1.SuccessPolicyRule{{SucceededIndexes: ptr.To("0")}}}
		_, err := jobs.Create(ctx, job, metav1.CreateOptions{})
		must(t, err, "create job")
		pods := indexPods(t, job.Name, 3)
		finish(t, pods["0"], 0)
		// The Job stops the other indexes; play their kubelet and let them go.
		const want = "Matched rules at index 0"
		waitFor(t, 30*time.Second, func() error {
			for _, ix := range []string{"1", "2"} {
				cur, err := e.client.CoreV1().Pods(ns).Get(ctx, pods[ix].Name, metav1.GetOptions{})
				if err != nil {
					if err := gone(err, pods[ix].Name); err != nil {
						return err
					}
					continue
				}
				if cur.DeletionTimestamp == nil {
					return fmt.Errorf("pod %s of index %s not stopped", cur.Name, ix)
				}
				if err := e.client.CoreV1().Pods(ns).Delete(ctx, cur.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
					return err
				}
			}
			cur, err := jobs.Get(ctx, job.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			got := conditions(cur)
			wantConds := []string{"SuccessCriteriaMet/SuccessPolicy/" + want, "Complete/SuccessPolicy/" + want}
			if !slices.Equal(got, wantConds) || cur.Status.CompletedIndexes != "0" || cur.Status.Failed != 0 || cur.Status.CompletionTime == nil {
				return fmt.Errorf("conditions %q completedIndexes %q failed %d", got, cur.Status.CompletedIndexes, cur.Status.Failed)
			}
			return nil
		})
	})
}
