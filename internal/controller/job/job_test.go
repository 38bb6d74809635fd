package job

import (
	"context"
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

func jobLabels() map[string]string {
	return map[string]string{batchv1.ControllerUidLabel: "uid-pi", batchv1.JobNameLabel: "pi"}
}

// makeJob is a defaulted Job as the API server stores it.
func makeJob(completions, parallelism int32) *batchv1.Job {
	return &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Name: "pi", Namespace: "default", UID: "uid-pi"},
		Spec: batchv1.JobSpec{
			Completions:    ptr.To(completions),
			Parallelism:    ptr.To(parallelism),
			BackoffLimit:   ptr.To[int32](6),
			CompletionMode: ptr.To(batchv1.NonIndexedCompletion),
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{batchv1.ControllerUidLabel: "uid-pi"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: jobLabels()},
				Spec:       corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "pi", Image: "perl"}}},
			},
		},
	}
}

func started(j *batchv1.Job, ago time.Duration) *batchv1.Job {
	j.Status.StartTime = ptr.To(metav1.NewTime(ctrltest.Epoch().Add(-ago)))
	j.Status.UncountedTerminatedPods = &batchv1.UncountedTerminatedPods{}
	return j
}

func jobPod(j *batchv1.Job, name string) *ctrltest.PodBuilder {
	b := ctrltest.MakePod(name).Labels(jobLabels()).OwnedBy(j, "batch/v1", "Job")
	b.Obj().Finalizers = []string{batchv1.JobTrackingFinalizer}
	return b
}

func withoutFinalizer(p *corev1.Pod) *corev1.Pod {
	p.Finalizers = nil
	return p
}

type fixture struct {
	env  *ctrltest.Env
	ctrl *Controller
}

func newFixture(t *testing.T, j *batchv1.Job, pods ...*corev1.Pod) *fixture {
	t.Helper()
	objs := []runtime.Object{j}
	for _, p := range pods {
		objs = append(objs, p)
	}
	env := ctrltest.NewEnv(objs...)
	ctrl, err := New(env.Deps)
	if err != nil {
		t.Fatal(err)
	}
	ctrltest.Seed(t, env.Factory.Batch().V1().Jobs().Informer(), j)
	for _, p := range pods {
		ctrltest.Seed(t, env.Factory.Core().V1().Pods().Informer(), p)
	}
	return &fixture{env: env, ctrl: ctrl}
}

func (f *fixture) sync(t *testing.T) []clienttesting.Action {
	t.Helper()
	if err := f.ctrl.Sync(context.Background(), "default/pi"); err != nil {
		t.Fatal(err)
	}
	return f.env.Writes()
}

func statuses(actions []clienttesting.Action) []batchv1.JobStatus {
	var out []batchv1.JobStatus
	for _, a := range actions {
		if u, ok := a.(clienttesting.UpdateAction); ok && a.GetVerb() == "update" && a.GetSubresource() == "status" {
			out = append(out, u.GetObject().(*batchv1.Job).Status)
		}
	}
	return out
}

func lastStatus(t *testing.T, actions []clienttesting.Action) batchv1.JobStatus {
	t.Helper()
	s := statuses(actions)
	if len(s) == 0 {
		t.Fatalf("no status update in %q", ctrltest.Describe(actions))
	}
	return s[len(s)-1]
}

func conditionTypes(s batchv1.JobStatus) []string {
	var out []string
	for _, c := range s.Conditions {
		if c.Status == corev1.ConditionTrue {
			out = append(out, string(c.Type)+"/"+c.Reason)
		}
	}
	return out
}

func TestSyncActions(t *testing.T) {
	now := ctrltest.Epoch()
	tests := []struct {
		name      string
		job       func() *batchv1.Job
		pods      func(j *batchv1.Job) []*corev1.Pod
		want      []string
		wantConds []string
		check     func(t *testing.T, s batchv1.JobStatus)
	}{
		{
			name: "new job starts parallelism pods",
			job:  func() *batchv1.Job { return makeJob(3, 2) },
			want: []string{"create pods pi-*", "create pods pi-*", "update jobs/status pi"},
			check: func(t *testing.T, s batchv1.JobStatus) {
				if s.Active != 2 || s.StartTime == nil || !s.StartTime.Time.Equal(now) {
					t.Fatalf("status %+v", s)
				}
			},
		},
		{
			name: "never more than the completions left",
			job:  func() *batchv1.Job { j := started(makeJob(3, 5), time.Minute); j.Status.Succeeded = 2; return j },
			want: []string{"create pods pi-*", "update jobs/status pi"},
		},
		{
			name: "a succeeded pod is recorded, released, then counted",
			job:  func() *batchv1.Job { return started(makeJob(2, 1), time.Minute) },
			pods: func(j *batchv1.Job) []*corev1.Pod {
				return []*corev1.Pod{jobPod(j, "done").Phase(corev1.PodSucceeded).Obj()}
			},
			// Pods are managed first, then the finished pod is recorded, released and counted.
			want: []string{"create pods pi-*", "update jobs/status pi", "patch pods done", "update jobs/status pi"},
			check: func(t *testing.T, s batchv1.JobStatus) {
				if s.Succeeded != 1 || len(s.UncountedTerminatedPods.Succeeded) != 0 || s.Active != 1 {
					t.Fatalf("status %+v", s)
				}
			},
		},
		{
			name: "already released pods are counted without a second record",
			job: func() *batchv1.Job {
				j := started(makeJob(2, 1), time.Minute)
				j.Status.UncountedTerminatedPods.Succeeded = []types.UID{"uid-done"}
				return j
			},
			pods: func(j *batchv1.Job) []*corev1.Pod {
				return []*corev1.Pod{withoutFinalizer(jobPod(j, "done").Phase(corev1.PodSucceeded).Obj()), jobPod(j, "run").Running().Obj()}
			},
			want: []string{"update jobs/status pi"},
			check: func(t *testing.T, s batchv1.JobStatus) {
				if s.Succeeded != 1 || s.UncountedTerminatedPods.Succeeded != nil {
					t.Fatalf("status %+v", s)
				}
			},
		},
		{
			name: "completions reached",
			job:  func() *batchv1.Job { return started(makeJob(1, 1), time.Minute) },
			pods: func(j *batchv1.Job) []*corev1.Pod {
				return []*corev1.Pod{jobPod(j, "done").Phase(corev1.PodSucceeded).Obj()}
			},
			want:      []string{"update jobs/status pi", "patch pods done", "update jobs/status pi"},
			wantConds: []string{"SuccessCriteriaMet/CompletionsReached", "Complete/CompletionsReached"},
			check: func(t *testing.T, s batchv1.JobStatus) {
				if s.Succeeded != 1 || s.CompletionTime == nil {
					t.Fatalf("status %+v", s)
				}
				for _, c := range s.Conditions {
					if c.Message != "Reached expected number of succeeded pods" {
						t.Fatalf("condition message %q", c.Message)
					}
				}
			},
		},
		{
			name: "backoff limit exceeded: active pods deleted, Failed waits for them",
			job: func() *batchv1.Job {
				j := started(makeJob(5, 1), time.Minute)
				j.Spec.BackoffLimit = ptr.To[int32](1)
				return j
			},
			pods: func(j *batchv1.Job) []*corev1.Pod {
				return []*corev1.Pod{jobPod(j, "f1").Phase(corev1.PodFailed).Obj(), jobPod(j, "f2").Phase(corev1.PodFailed).Obj(), jobPod(j, "run").Running().Obj()}
			},
			// The running pod is deleted with its finalizer, counted as failed, then released.
			want:      []string{"delete pods run", "update jobs/status pi", "patch pods f1", "patch pods f2", "patch pods run", "update jobs/status pi"},
			wantConds: []string{"FailureTarget/BackoffLimitExceeded"},
			check: func(t *testing.T, s batchv1.JobStatus) {
				if s.Failed != 3 || ptr.Deref(s.Terminating, 0) != 1 || s.Active != 0 {
					t.Fatalf("status %+v", s)
				}
			},
		},
		{
			name: "backoff limit exceeded with nothing running: Failed at once",
			job: func() *batchv1.Job {
				j := started(makeJob(5, 1), time.Minute)
				j.Spec.BackoffLimit = ptr.To[int32](0)
				return j
			},
			pods: func(j *batchv1.Job) []*corev1.Pod {
				return []*corev1.Pod{jobPod(j, "f1").Phase(corev1.PodFailed).Obj()}
			},
			want:      []string{"update jobs/status pi", "patch pods f1", "update jobs/status pi"},
			wantConds: []string{"FailureTarget/BackoffLimitExceeded", "Failed/BackoffLimitExceeded"},
		},
		{
			name: "active deadline exceeded",
			job: func() *batchv1.Job {
				j := started(makeJob(5, 1), 11*time.Second)
				j.Spec.ActiveDeadlineSeconds = ptr.To[int64](10)
				return j
			},
			pods:      func(j *batchv1.Job) []*corev1.Pod { return []*corev1.Pod{jobPod(j, "run").Running().Obj()} },
			want:      []string{"delete pods run", "update jobs/status pi", "patch pods run", "update jobs/status pi"},
			wantConds: []string{"FailureTarget/DeadlineExceeded"},
		},
		{
			name: "suspend deletes active pods",
			job:  func() *batchv1.Job { j := started(makeJob(5, 2), time.Minute); j.Spec.Suspend = ptr.To(true); return j },
			pods: func(j *batchv1.Job) []*corev1.Pod {
				return []*corev1.Pod{jobPod(j, "a").Running().Obj(), jobPod(j, "b").Obj()}
			},
			// Stopped, not failed: the finalizer goes before the delete so the pods are never counted.
			want:      []string{"patch pods a", "delete pods a", "patch pods b", "delete pods b", "update jobs/status pi"},
			wantConds: []string{"Suspended/JobSuspended"},
			check: func(t *testing.T, s batchv1.JobStatus) {
				if s.StartTime != nil || s.Active != 0 {
					t.Fatalf("status %+v", s)
				}
			},
		},
		{
			name: "finished job only releases pods",
			job: func() *batchv1.Job {
				j := started(makeJob(1, 1), time.Minute)
				j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}
				return j
			},
			pods: func(j *batchv1.Job) []*corev1.Pod {
				return []*corev1.Pod{jobPod(j, "late").Phase(corev1.PodSucceeded).Obj()}
			},
			want: []string{"patch pods late"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := tt.job()
			var pods []*corev1.Pod
			if tt.pods != nil {
				pods = tt.pods(j)
			}
			f := newFixture(t, j, pods...)
			actions := f.sync(t)
			if got := ctrltest.Describe(actions); !slices.Equal(got, tt.want) {
				t.Fatalf("actions:\n got %q\nwant %q", got, tt.want)
			}
			if tt.wantConds == nil && tt.check == nil {
				return
			}
			s := lastStatus(t, actions)
			if tt.wantConds != nil && !slices.Equal(conditionTypes(s), tt.wantConds) {
				t.Fatalf("conditions %q, want %q", conditionTypes(s), tt.wantConds)
			}
			if tt.check != nil {
				tt.check(t, s)
			}
		})
	}
}

func TestCreatedPodsCarryFinalizerAndOwner(t *testing.T) {
	f := newFixture(t, makeJob(1, 1))
	pod := f.sync(t)[0].(clienttesting.CreateAction).GetObject().(*corev1.Pod)
	if !slices.Contains(pod.Finalizers, batchv1.JobTrackingFinalizer) || pod.Labels[batchv1.ControllerUidLabel] != "uid-pi" {
		t.Fatalf("pod %+v", pod.ObjectMeta)
	}
	if ref := metav1.GetControllerOf(pod); ref == nil || ref.Kind != "Job" || ref.UID != "uid-pi" {
		t.Fatalf("controllerRef %+v", ref)
	}
}

// TestManagedByAnotherController: a Job whose spec.managedBy names another controller gets no
// pods and no status from this one (e2e "should allow to delegate reconciliation to external
// controller"); one that names this controller is synced as usual.
func TestManagedByAnotherController(t *testing.T) {
	external := makeJob(1, 1)
	external.Spec.ManagedBy = ptr.To("example.com/custom-job-controller")
	if writes := newFixture(t, external).sync(t); len(writes) != 0 {
		t.Fatalf("writes %q for a Job another controller manages, want none", ctrltest.Describe(writes))
	}
	own := makeJob(1, 1)
	own.Spec.ManagedBy = ptr.To(JobControllerName)
	if writes := newFixture(t, own).sync(t); len(writes) == 0 {
		t.Fatal("no writes for a Job naming this controller")
	}
}

func TestIndexedCreatesMissingIndexes(t *testing.T) {
	j := started(makeJob(4, 3), time.Minute)
	j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
	j.Status.CompletedIndexes = "1"
	j.Status.Succeeded = 1
	running := jobPod(j, "pi-3-x").Annotation(batchv1.JobCompletionIndexAnnotation, "3").Running().Obj()
	f := newFixture(t, j, running)
	actions := f.sync(t)
	var created []*corev1.Pod
	for _, a := range actions {
		if a.GetVerb() == "create" {
			created = append(created, a.(clienttesting.CreateAction).GetObject().(*corev1.Pod))
		}
	}
	var got []string
	for _, p := range created {
		got = append(got, p.GenerateName+"|"+p.Annotations[batchv1.JobCompletionIndexAnnotation]+"|"+p.Labels[batchv1.JobCompletionIndexAnnotation]+"|"+p.Spec.Hostname)
		env := p.Spec.Containers[0].Env
		if len(env) != 1 || env[0].Name != "JOB_COMPLETION_INDEX" || !strings.Contains(env[0].ValueFrom.FieldRef.FieldPath, batchv1.JobCompletionIndexAnnotation) {
			t.Fatalf("env %+v", env)
		}
	}
	slices.Sort(got)
	want := []string{"pi-0-|0|0|pi-0", "pi-2-|2|2|pi-2"}
	if !slices.Equal(got, want) {
		t.Fatalf("created %q, want %q", got, want)
	}
}

func TestIndexedCompletion(t *testing.T) {
	j := started(makeJob(2, 2), time.Minute)
	j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
	j.Status.CompletedIndexes = "0"
	j.Status.Succeeded = 1
	done := jobPod(j, "pi-1-x").Annotation(batchv1.JobCompletionIndexAnnotation, "1").Phase(corev1.PodSucceeded).Obj()
	f := newFixture(t, j, done)
	s := lastStatus(t, f.sync(t))
	if s.CompletedIndexes != "0,1" || s.Succeeded != 2 || !slices.Contains(conditionTypes(s), "Complete/CompletionsReached") {
		t.Fatalf("status %+v", s)
	}
}

func TestFailedWhenTerminatingPodsAreGone(t *testing.T) {
	j := started(makeJob(5, 1), time.Minute)
	j.Status.Failed = 2
	j.Spec.BackoffLimit = ptr.To[int32](1)
	j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue,
		Reason: batchv1.JobReasonBackoffLimitExceeded, Message: "Job has reached the specified backoff limit"}}
	terminatingPod := jobPod(j, "run").Running().Deleting(ctrltest.Epoch()).Obj()
	f := newFixture(t, j, terminatingPod)
	s := lastStatus(t, f.sync(t))
	if slices.Contains(conditionTypes(s), "Failed/BackoffLimitExceeded") || ptr.Deref(s.Terminating, 0) != 1 {
		t.Fatalf("failed before the terminating pod was gone: %+v", s)
	}
	f = newFixture(t, j)
	s = lastStatus(t, f.sync(t))
	if !slices.Contains(conditionTypes(s), "Failed/BackoffLimitExceeded") {
		t.Fatalf("conditions %q", conditionTypes(s))
	}
}

func TestBackoffDelaysReplacement(t *testing.T) {
	j := started(makeJob(3, 1), time.Minute)
	failedPod := withoutFinalizer(jobPod(j, "f").Phase(corev1.PodFailed).Obj())
	failedPod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "pi", State: corev1.ContainerState{
		Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, FinishedAt: metav1.NewTime(ctrltest.Epoch().Add(-3 * time.Second))}}}}
	j.Status.Failed = 1
	f := newFixture(t, j, failedPod)
	for _, a := range f.sync(t) {
		if a.GetVerb() == "create" {
			t.Fatal("replaced a failed pod before its 10s backoff")
		}
	}
	f.env.Clock.Step(8 * time.Second)
	if err := f.ctrl.Sync(context.Background(), "default/pi"); err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(f.env.Writes(), func(a clienttesting.Action) bool { return a.GetVerb() == "create" }) {
		t.Fatal("no replacement after the backoff")
	}
}

func TestIndexesRoundTrip(t *testing.T) {
	tests := []struct {
		in, out string
		limit   int
	}{
		{"", "", 10}, {"0", "0", 10}, {"0,1,2,5", "0-2,5", 10}, {"3-5,1", "1,3-5", 10}, {"0-9", "0-4", 5}, {"x,2", "2", 10},
		{"0-1", "0,1", 10}, {"1,2,4,5,6", "1,2,4-6", 10},
	}
	for _, tt := range tests {
		if got := formatIndexes(parseIndexes(tt.in, tt.limit)); got != tt.out {
			t.Errorf("%q -> %q, want %q", tt.in, got, tt.out)
		}
	}
}
