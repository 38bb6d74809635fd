package job

import (
	"context"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/internal/controller/ctrltest"
)

// failedWith makes a pod Failed with its container exiting with code, a minute ago.
func failedWith(b *ctrltest.PodBuilder, code int32) *corev1.Pod {
	p := b.Phase(corev1.PodFailed).Obj()
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "pi", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
		ExitCode: code, FinishedAt: metav1.NewTime(ctrltest.Epoch().Add(-time.Minute))}}}}
	return p
}

func exitRule(action batchv1.PodFailurePolicyAction, codes ...int32) batchv1.PodFailurePolicyRule {
	return batchv1.PodFailurePolicyRule{Action: action, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{
		Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: codes}}
}

func indexedJob(completions, parallelism int32) *batchv1.Job {
	j := started(makeJob(completions, parallelism), time.Minute)
	j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
	return j
}

func indexPod(j *batchv1.Job, name string, index string) *ctrltest.PodBuilder {
	return jobPod(j, name).Annotation(batchv1.JobCompletionIndexAnnotation, index)
}

// after is the Job as the next sync sees it: the status the controller wrote.
func after(j *batchv1.Job, s batchv1.JobStatus) *batchv1.Job {
	j = j.DeepCopy()
	j.Status = s
	return j
}

func describe(t *testing.T, actions []clienttesting.Action, want ...string) {
	t.Helper()
	if got := ctrltest.Describe(actions); !slices.Equal(got, want) {
		t.Fatalf("actions:\n got %q\nwant %q", got, want)
	}
}

func TestPodFailurePolicyFailJob(t *testing.T) {
	j := started(makeJob(3, 2), time.Minute)
	j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{exitRule(batchv1.PodFailurePolicyActionFailJob, 42)}}
	f := newFixture(t, j, failedWith(jobPod(j, "f"), 42), jobPod(j, "run").Running().Obj())
	actions := f.sync(t)
	// The running pod is stopped, FailureTarget recorded with the failures,
	// then the finalizers go; Failed waits for the stopped pod to be gone.
	describe(t, actions, "delete pods run", "update jobs/status pi", "patch pods f", "patch pods run", "update jobs/status pi")
	s := statuses(actions)[0]
	if !slices.Equal(conditionTypes(s), []string{"FailureTarget/PodFailurePolicy"}) || len(s.UncountedTerminatedPods.Failed) != 2 {
		t.Fatalf("first write %+v", s)
	}
	const msg = "Container pi for pod default/f failed with exit code 42 matching FailJob rule at index 0"
	if c := getCondition(&s, batchv1.JobFailureTarget); c.Message != msg {
		t.Fatalf("message %q, want %q", c.Message, msg)
	}
	s = lastStatus(t, actions)
	if s.Failed != 2 || ptr.Deref(s.Terminating, 0) != 1 || slices.Contains(conditionTypes(s), "Failed/PodFailurePolicy") {
		t.Fatalf("status %+v", s)
	}

	f = newFixture(t, after(j, s))
	s = lastStatus(t, f.sync(t))
	if !slices.Equal(conditionTypes(s), []string{"FailureTarget/PodFailurePolicy", "Failed/PodFailurePolicy"}) {
		t.Fatalf("conditions %q", conditionTypes(s))
	}
	if c := getCondition(&s, batchv1.JobFailed); c.Message != msg {
		t.Fatalf("Failed message %q", c.Message)
	}
	if ev := f.env.Events(); !slices.Contains(ev, "Warning PodFailurePolicy "+msg) {
		t.Fatalf("events %q", ev)
	}
}

func TestPodFailurePolicyIgnoreIsNotCounted(t *testing.T) {
	j := started(makeJob(1, 1), time.Minute)
	j.Spec.BackoffLimit = ptr.To[int32](0)
	j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
		{Action: batchv1.PodFailurePolicyActionIgnore, OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}}},
	}}
	evicted := failedWith(jobPod(j, "evicted"), 137)
	evicted.Status.Conditions = []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}}
	f := newFixture(t, j, evicted)
	actions := f.sync(t)
	describe(t, actions, "create pods pi-*", "update jobs/status pi", "patch pods evicted")
	s := lastStatus(t, actions)
	if s.Failed != 0 || len(conditionTypes(s)) != 0 || s.Active != 1 {
		t.Fatalf("status %+v", s)
	}
}

func TestPodFailurePolicyJudgesTerminatingPodsOnceTerminal(t *testing.T) {
	j := started(makeJob(1, 1), time.Minute)
	j.Spec.BackoffLimit = ptr.To[int32](0)
	j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{exitRule(batchv1.PodFailurePolicyActionIgnore, 137)}}
	j.Spec.PodReplacementPolicy = ptr.To(batchv1.Failed)
	f := newFixture(t, j, jobPod(j, "t").Running().Deleting(ctrltest.Epoch()).Obj())
	actions := f.sync(t)
	// Neither counted, released nor replaced while it terminates.
	describe(t, actions, "update jobs/status pi")
	if s := lastStatus(t, actions); ptr.Deref(s.Terminating, 0) != 1 || s.Active != 0 || s.Failed != 0 || len(conditionTypes(s)) != 0 {
		t.Fatalf("status %+v", s)
	}

	done := failedWith(jobPod(j, "t").Deleting(ctrltest.Epoch()), 137)
	f = newFixture(t, j, done)
	actions = f.sync(t)
	describe(t, actions, "create pods pi-*", "update jobs/status pi", "patch pods t")
	if s := lastStatus(t, actions); s.Failed != 0 || len(conditionTypes(s)) != 0 {
		t.Fatalf("status %+v", s)
	}
}

func TestBackoffLimitPerIndexReplacesWithFailureCount(t *testing.T) {
	j := indexedJob(3, 3)
	j.Spec.BackoffLimitPerIndex = ptr.To[int32](1)
	j.Spec.BackoffLimit = ptr.To[int32](1 << 30)
	f := newFixture(t, j,
		indexPod(j, "pi-0-a", "0").Running().Obj(),
		failedWith(indexPod(j, "pi-1-a", "1").Annotation(batchv1.JobIndexFailureCountAnnotation, "0"), 1),
		indexPod(j, "pi-2-a", "2").Running().Obj(),
	)
	actions := f.sync(t)
	// The failed pod keeps its finalizer until its replacement exists.
	describe(t, actions, "create pods pi-1-*", "update jobs/status pi")
	created := actions[0].(clienttesting.CreateAction).GetObject().(*corev1.Pod)
	if created.Annotations[batchv1.JobIndexFailureCountAnnotation] != "1" || created.Annotations[batchv1.JobCompletionIndexAnnotation] != "1" {
		t.Fatalf("replacement annotations %v", created.Annotations)
	}
	if s := lastStatus(t, actions); ptr.Deref(s.FailedIndexes, "x") != "" || s.Failed != 0 {
		t.Fatalf("status %+v", s)
	}

	// With the replacement running, the failed pod is counted and released.
	f = newFixture(t, j,
		indexPod(j, "pi-0-a", "0").Running().Obj(),
		failedWith(indexPod(j, "pi-1-a", "1").Annotation(batchv1.JobIndexFailureCountAnnotation, "0"), 1),
		indexPod(j, "pi-1-b", "1").Annotation(batchv1.JobIndexFailureCountAnnotation, "1").Running().Obj(),
		indexPod(j, "pi-2-a", "2").Running().Obj(),
	)
	actions = f.sync(t)
	describe(t, actions, "update jobs/status pi", "patch pods pi-1-a", "update jobs/status pi")
	if s := lastStatus(t, actions); s.Failed != 1 || ptr.Deref(s.FailedIndexes, "x") != "" || len(conditionTypes(s)) != 0 {
		t.Fatalf("status %+v", s)
	}

	// The replacement fails too: the index is out of retries and fails; the
	// others keep running.
	f = newFixture(t, after(j, batchv1.JobStatus{StartTime: j.Status.StartTime, Failed: 1, UncountedTerminatedPods: &batchv1.UncountedTerminatedPods{}}),
		indexPod(j, "pi-0-a", "0").Running().Obj(),
		failedWith(indexPod(j, "pi-1-b", "1").Annotation(batchv1.JobIndexFailureCountAnnotation, "1"), 1),
		indexPod(j, "pi-2-a", "2").Running().Obj(),
	)
	actions = f.sync(t)
	describe(t, actions, "update jobs/status pi", "patch pods pi-1-b", "update jobs/status pi")
	if s := lastStatus(t, actions); s.Failed != 2 || ptr.Deref(s.FailedIndexes, "") != "1" || len(conditionTypes(s)) != 0 || s.Active != 2 {
		t.Fatalf("status %+v", s)
	}
}

func TestFailIndexAndMaxFailedIndexes(t *testing.T) {
	j := indexedJob(3, 2)
	j.Spec.BackoffLimitPerIndex = ptr.To[int32](2)
	j.Spec.MaxFailedIndexes = ptr.To[int32](0)
	j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{exitRule(batchv1.PodFailurePolicyActionFailIndex, 3)}}
	f := newFixture(t, j,
		failedWith(indexPod(j, "pi-0-a", "0").Annotation(batchv1.JobIndexFailureCountAnnotation, "0"), 3),
		indexPod(j, "pi-1-a", "1").Running().Obj(),
	)
	actions := f.sync(t)
	describe(t, actions, "delete pods pi-1-a", "update jobs/status pi", "patch pods pi-0-a", "patch pods pi-1-a", "update jobs/status pi")
	s := lastStatus(t, actions)
	if ptr.Deref(s.FailedIndexes, "") != "0" || !slices.Equal(conditionTypes(s), []string{"FailureTarget/MaxFailedIndexesExceeded"}) {
		t.Fatalf("status %+v", s)
	}
	if c := getCondition(&s, batchv1.JobFailureTarget); c.Message != "Job has exceeded the specified maximal number of failed indexes" {
		t.Fatalf("message %q", c.Message)
	}
}

func TestFailedIndexesWhenAllIndexesDone(t *testing.T) {
	j := indexedJob(2, 2)
	j.Spec.BackoffLimitPerIndex = ptr.To[int32](0)
	j.Status.CompletedIndexes = "0"
	j.Status.Succeeded = 1
	f := newFixture(t, j, failedWith(indexPod(j, "pi-1-a", "1").Annotation(batchv1.JobIndexFailureCountAnnotation, "0"), 1))
	actions := f.sync(t)
	describe(t, actions, "update jobs/status pi", "patch pods pi-1-a", "update jobs/status pi")
	s := lastStatus(t, actions)
	if !slices.Equal(conditionTypes(s), []string{"FailureTarget/FailedIndexes", "Failed/FailedIndexes"}) || ptr.Deref(s.FailedIndexes, "") != "1" || s.Failed != 1 {
		t.Fatalf("status %+v", s)
	}
	if c := getCondition(&s, batchv1.JobFailed); c.Message != "Job has failed indexes" {
		t.Fatalf("message %q", c.Message)
	}
}

func TestSuccessPolicy(t *testing.T) {
	j := indexedJob(3, 3)
	j.Spec.SuccessPolicy = &batchv1.SuccessPolicy{Rules: []batchv1.SuccessPolicyRule{{SucceededIndexes: ptr.To("0")}}}
	f := newFixture(t, j,
		indexPod(j, "pi-0-a", "0").Phase(corev1.PodSucceeded).Obj(),
		indexPod(j, "pi-1-a", "1").Running().Obj(),
		indexPod(j, "pi-2-a", "2").Running().Obj(),
	)
	actions := f.sync(t)
	describe(t, actions, "delete pods pi-1-a", "delete pods pi-2-a", "update jobs/status pi",
		"patch pods pi-0-a", "patch pods pi-1-a", "patch pods pi-2-a")
	s := lastStatus(t, actions)
	if !slices.Equal(conditionTypes(s), []string{"SuccessCriteriaMet/SuccessPolicy"}) || s.CompletedIndexes != "0" || s.Succeeded != 1 || s.Failed != 0 ||
		ptr.Deref(s.Terminating, 0) != 2 || s.CompletionTime != nil {
		t.Fatalf("status %+v", s)
	}
	if c := getCondition(&s, batchv1.JobSuccessCriteriaMet); c.Message != "Matched rules at index 0" {
		t.Fatalf("message %q", c.Message)
	}

	f = newFixture(t, after(j, s))
	s = lastStatus(t, f.sync(t))
	if !slices.Equal(conditionTypes(s), []string{"SuccessCriteriaMet/SuccessPolicy", "Complete/SuccessPolicy"}) || s.CompletionTime == nil || s.Failed != 0 {
		t.Fatalf("status %+v", s)
	}
}

func TestOrphanPodsAreReleased(t *testing.T) {
	j := started(makeJob(1, 1), time.Minute)
	gone := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "gone", Namespace: "default", UID: "uid-gone"}}
	rs := ctrltest.MakeReplicaSet("rs", 1, map[string]string{"app": "x"})
	finished := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "old", Namespace: "default", UID: "uid-old"},
		Status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}}}
	withFinalizer := func(p *corev1.Pod) *corev1.Pod {
		p.Finalizers = []string{batchv1.JobTrackingFinalizer}
		return p
	}
	pods := []*corev1.Pod{
		withFinalizer(ctrltest.MakePod("job-gone").OwnedBy(gone, "batch/v1", "Job").Obj()),
		withFinalizer(ctrltest.MakePod("no-owner").Obj()),
		withFinalizer(ctrltest.MakePod("job-finished").OwnedBy(finished, "batch/v1", "Job").Obj()),
		jobPod(j, "live").Running().Obj(),
		withFinalizer(ctrltest.MakePod("not-a-job").OwnedBy(rs, "apps/v1", "ReplicaSet").Obj()),
	}
	f := newFixture(t, j, pods...)
	ctrltest.Seed(t, f.env.Factory.Batch().V1().Jobs().Informer(), finished)
	for _, p := range pods {
		f.ctrl.addPod(p)
	}
	var orphans []string
	for f.ctrl.loop.Queue.Len() > 0 {
		key, _ := f.ctrl.loop.Queue.Get()
		f.ctrl.loop.Queue.Done(key)
		if err := f.ctrl.Sync(context.Background(), key); err != nil {
			t.Fatal(err)
		}
		// Job keys (the finished Job's sync releases its pods too) are not orphan keys.
		if strings.HasPrefix(key, orphanKeyPrefix) {
			orphans = append(orphans, key)
		}
	}
	sort.Strings(orphans)
	if want := []string{"orphan-pod:default/job-finished", "orphan-pod:default/job-gone", "orphan-pod:default/no-owner"}; !slices.Equal(orphans, want) {
		t.Fatalf("queued %q, want %q", orphans, want)
	}
	var patched []string
	for _, a := range f.env.Writes() {
		if a.GetVerb() == "patch" {
			patched = append(patched, a.(clienttesting.PatchAction).GetName())
		}
	}
	sort.Strings(patched)
	patched = slices.Compact(patched)
	if want := []string{"job-finished", "job-gone", "no-owner"}; !slices.Equal(patched, want) {
		t.Fatalf("released %q, want %q", patched, want)
	}
}

func TestDeletedJobHandsItsPodsToTheOrphanPath(t *testing.T) {
	j := started(makeJob(2, 2), time.Minute)
	f := newFixture(t, j, jobPod(j, "a").Running().Obj(), withoutFinalizer(jobPod(j, "b").Running().Obj()))
	// The Job is gone from the cache, as when it was deleted with propagationPolicy=Orphan.
	if err := f.env.Factory.Batch().V1().Jobs().Informer().GetIndexer().Delete(j); err != nil {
		t.Fatal(err)
	}
	f.ctrl.deleteJob(j)
	if n := f.ctrl.loop.Queue.Len(); n != 1 {
		t.Fatalf("queued %d keys, want 1", n)
	}
	key, _ := f.ctrl.loop.Queue.Get()
	f.ctrl.loop.Queue.Done(key)
	if key != "orphan-pod:default/a" {
		t.Fatalf("queued %q", key)
	}
	if err := f.ctrl.Sync(context.Background(), key); err != nil {
		t.Fatal(err)
	}
	describe(t, f.env.Writes(), "patch pods a")
	// A sync of a live Job's pod through the orphan path changes nothing.
	f = newFixture(t, j, jobPod(j, "a").Running().Obj())
	if err := f.ctrl.Sync(context.Background(), "orphan-pod:default/a"); err != nil {
		t.Fatal(err)
	}
	describe(t, f.env.Writes())
}

func TestReleasedPodIsNotCountedTwiceFromAStaleCache(t *testing.T) {
	j := started(makeJob(3, 1), time.Minute)
	j.Status.Failed = 1
	// The previous sync counted "f" and removed its finalizer; the cache has
	// not caught up and still shows the finalizer.
	f := newFixture(t, j, failedWith(jobPod(j, "f"), 1), jobPod(j, "run").Running().Obj())
	f.ctrl.releasing.expect("default/pi", "uid-f")
	actions := f.sync(t)
	for _, a := range actions {
		if a.GetVerb() == "patch" {
			t.Fatalf("released again: %q", ctrltest.Describe(actions))
		}
	}
	for _, s := range statuses(actions) {
		if s.Failed != 1 || len(s.UncountedTerminatedPods.Failed) != 0 {
			t.Fatalf("counted again: %+v", s)
		}
	}
	// Once the cache shows the finalizer gone, the expectation is cleared.
	released := withoutFinalizer(failedWith(jobPod(j, "f"), 1))
	f.ctrl.updatePod(failedWith(jobPod(j, "f"), 1), released)
	if f.ctrl.releasing.get("default/pi").Len() != 0 {
		t.Fatal("expectation kept after the finalizer was seen gone")
	}
}

func TestJobFailingInItsFirstSyncHasStarted(t *testing.T) {
	j := makeJob(1, 1)
	j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{exitRule(batchv1.PodFailurePolicyActionFailJob, 42)}}
	f := newFixture(t, j, failedWith(jobPod(j, "f"), 42))
	s := lastStatus(t, f.sync(t))
	if !slices.Contains(conditionTypes(s), "Failed/PodFailurePolicy") || s.StartTime == nil {
		t.Fatalf("status %+v", s)
	}
}

func TestAdoptionPutsTheTrackingFinalizerBack(t *testing.T) {
	j := started(makeJob(2, 1), time.Minute)
	orphan := withoutFinalizer(ctrltest.MakePod("orphan").Labels(jobLabels()).Running().Obj())
	f := newFixture(t, j, orphan)
	actions := f.sync(t)
	describe(t, actions, "patch pods orphan", "update jobs/status pi")
	patch := string(actions[0].(clienttesting.PatchAction).GetPatch())
	if !strings.Contains(patch, batchv1.JobTrackingFinalizer) || !strings.Contains(patch, `"uid":"uid-pi"`) {
		t.Fatalf("adopt patch %s", patch)
	}
	if s := lastStatus(t, actions); s.Active != 1 {
		t.Fatalf("adopted pod not active: %+v", s)
	}
	pod, err := f.env.Client.CoreV1().Pods("default").Get(context.Background(), "orphan", metav1.GetOptions{})
	if err != nil || !slices.Contains(pod.Finalizers, batchv1.JobTrackingFinalizer) || metav1.GetControllerOf(pod) == nil {
		t.Fatalf("pod after adoption %+v, %v", pod.ObjectMeta, err)
	}
}
