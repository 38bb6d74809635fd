package job

import (
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/internal/controller/ctrltest"
)

func exited(name string, code int32) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}}}
}

func failedPod(name string, statuses ...corev1.ContainerStatus) *corev1.Pod {
	p := ctrltest.MakePod(name).Phase(corev1.PodFailed).Obj()
	p.Status.ContainerStatuses = statuses
	return p
}

func TestMatchPodFailurePolicy(t *testing.T) {
	onExit := func(action batchv1.PodFailurePolicyAction, op batchv1.PodFailurePolicyOnExitCodesOperator, container *string, codes ...int32) batchv1.PodFailurePolicyRule {
		return batchv1.PodFailurePolicyRule{Action: action, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{ContainerName: container, Operator: op, Values: codes}}
	}
	onCond := func(action batchv1.PodFailurePolicyAction, typ corev1.PodConditionType) batchv1.PodFailurePolicyRule {
		return batchv1.PodFailurePolicyRule{Action: action, OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: typ, Status: corev1.ConditionTrue}}}
	}
	disrupted := failedPod("d", exited("main", 137))
	disrupted.Status.Conditions = []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}}
	initFailed := failedPod("i")
	initFailed.Status.InitContainerStatuses = []corev1.ContainerStatus{exited("setup", 3)}
	tests := []struct {
		name       string
		rules      []batchv1.PodFailurePolicyRule
		pod        *corev1.Pod
		wantAction string
		wantCount  bool
		wantMsg    string
	}{
		{name: "no policy counts", pod: failedPod("p", exited("main", 1)), wantCount: true},
		{
			name:  "FailJob on exit code In",
			rules: []batchv1.PodFailurePolicyRule{onExit(batchv1.PodFailurePolicyActionFailJob, batchv1.PodFailurePolicyOnExitCodesOpIn, nil, 42)},
			pod:   failedPod("p", exited("main", 42)), wantAction: "FailJob", wantCount: true,
			wantMsg: "Container main for pod default/p failed with exit code 42 matching FailJob rule at index 0",
		},
		{
			name:  "exit code 0 never matches NotIn",
			rules: []batchv1.PodFailurePolicyRule{onExit(batchv1.PodFailurePolicyActionFailJob, batchv1.PodFailurePolicyOnExitCodesOpNotIn, nil, 1)},
			pod:   failedPod("p", exited("main", 0)), wantCount: true,
		},
		{
			name:  "NotIn matches another code",
			rules: []batchv1.PodFailurePolicyRule{onExit(batchv1.PodFailurePolicyActionIgnore, batchv1.PodFailurePolicyOnExitCodesOpNotIn, nil, 1, 2)},
			pod:   failedPod("p", exited("main", 3)), wantAction: "Ignore",
		},
		{
			name:  "containerName restricts the match",
			rules: []batchv1.PodFailurePolicyRule{onExit(batchv1.PodFailurePolicyActionFailJob, batchv1.PodFailurePolicyOnExitCodesOpIn, ptr.To("side"), 1)},
			pod:   failedPod("p", exited("main", 1)), wantCount: true,
		},
		{
			name:  "a running container has no exit code",
			rules: []batchv1.PodFailurePolicyRule{onExit(batchv1.PodFailurePolicyActionFailJob, batchv1.PodFailurePolicyOnExitCodesOpNotIn, nil, 0)},
			pod:   failedPod("p", corev1.ContainerStatus{Name: "main", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}), wantCount: true,
		},
		{
			name:  "init containers are matched too",
			rules: []batchv1.PodFailurePolicyRule{onExit(batchv1.PodFailurePolicyActionFailJob, batchv1.PodFailurePolicyOnExitCodesOpIn, nil, 3)},
			pod:   initFailed, wantAction: "FailJob", wantCount: true,
			wantMsg: "Container setup for pod default/i failed with exit code 3 matching FailJob rule at index 0",
		},
		{
			name: "first matching rule wins",
			rules: []batchv1.PodFailurePolicyRule{
				onCond(batchv1.PodFailurePolicyActionIgnore, corev1.DisruptionTarget),
				onExit(batchv1.PodFailurePolicyActionFailJob, batchv1.PodFailurePolicyOnExitCodesOpIn, nil, 137),
			},
			pod: disrupted, wantAction: "Ignore",
		},
		{
			name: "FailJob on a pod condition",
			rules: []batchv1.PodFailurePolicyRule{
				onExit(batchv1.PodFailurePolicyActionCount, batchv1.PodFailurePolicyOnExitCodesOpIn, nil, 1),
				onCond(batchv1.PodFailurePolicyActionFailJob, corev1.DisruptionTarget),
			},
			pod: disrupted, wantAction: "FailJob", wantCount: true,
			wantMsg: "Pod default/d has condition DisruptionTarget matching FailJob rule at index 1",
		},
		{
			name:  "FailIndex counts",
			rules: []batchv1.PodFailurePolicyRule{onExit(batchv1.PodFailurePolicyActionFailIndex, batchv1.PodFailurePolicyOnExitCodesOpIn, nil, 5)},
			pod:   failedPod("p", exited("main", 5)), wantAction: "FailIndex", wantCount: true,
		},
		{
			name:  "Count",
			rules: []batchv1.PodFailurePolicyRule{onExit(batchv1.PodFailurePolicyActionCount, batchv1.PodFailurePolicyOnExitCodesOpIn, nil, 5)},
			pod:   failedPod("p", exited("main", 5)), wantAction: "Count", wantCount: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var policy *batchv1.PodFailurePolicy
			if tt.rules != nil {
				policy = &batchv1.PodFailurePolicy{Rules: tt.rules}
			}
			got := matchPodFailurePolicy(policy, tt.pod)
			action := ""
			if got.action != nil {
				action = string(*got.action)
			}
			if action != tt.wantAction || got.count != tt.wantCount || got.failJobMsg != tt.wantMsg {
				t.Fatalf("got action %q count %v msg %q, want %q %v %q", action, got.count, got.failJobMsg, tt.wantAction, tt.wantCount, tt.wantMsg)
			}
		})
	}
}

func TestMatchSuccessPolicy(t *testing.T) {
	set := func(ix ...int) map[int]bool {
		m := map[int]bool{}
		for _, i := range ix {
			m[i] = true
		}
		return m
	}
	tests := []struct {
		name      string
		rules     []batchv1.SuccessPolicyRule
		succeeded map[int]bool
		wantMsg   string
	}{
		{name: "nothing succeeded", rules: []batchv1.SuccessPolicyRule{{SucceededCount: ptr.To[int32](0)}}, succeeded: set()},
		{name: "indexes all succeeded", rules: []batchv1.SuccessPolicyRule{{SucceededIndexes: ptr.To("0,2-3")}}, succeeded: set(0, 2, 3), wantMsg: "Matched rules at index 0"},
		{name: "indexes partly succeeded", rules: []batchv1.SuccessPolicyRule{{SucceededIndexes: ptr.To("0,2-3")}}, succeeded: set(0, 1, 2)},
		{name: "count within indexes", rules: []batchv1.SuccessPolicyRule{{SucceededIndexes: ptr.To("0-3"), SucceededCount: ptr.To[int32](2)}}, succeeded: set(1, 3, 4), wantMsg: "Matched rules at index 0"},
		{name: "count outside indexes does not help", rules: []batchv1.SuccessPolicyRule{{SucceededIndexes: ptr.To("0-3"), SucceededCount: ptr.To[int32](2)}}, succeeded: set(1, 4)},
		{name: "count alone", rules: []batchv1.SuccessPolicyRule{{SucceededIndexes: ptr.To("7-9")}, {SucceededCount: ptr.To[int32](2)}}, succeeded: set(1, 4), wantMsg: "Matched rules at index 1"},
		{name: "indexes beyond completions never match", rules: []batchv1.SuccessPolicyRule{{SucceededIndexes: ptr.To("10-12")}}, succeeded: set(1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg, ok := matchSuccessPolicy(&batchv1.SuccessPolicy{Rules: tt.rules}, 5, tt.succeeded)
			if msg != tt.wantMsg || ok != (tt.wantMsg != "") {
				t.Fatalf("got %q %v, want %q", msg, ok, tt.wantMsg)
			}
		})
	}
}

func TestDecideTerminal(t *testing.T) {
	now := ctrltest.Epoch()
	indexed := func(completions int32) *batchv1.Job {
		j := started(makeJob(completions, completions), time.Minute)
		j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
		return j
	}
	set := func(ix ...int) map[int]bool {
		m := map[int]bool{}
		for _, i := range ix {
			m[i] = true
		}
		return m
	}
	tests := []struct {
		name string
		job  *batchv1.Job
		s    syncState
		want string
	}{
		{name: "nothing", job: started(makeJob(3, 1), time.Minute), want: ""},
		{name: "FailJob message", job: started(makeJob(3, 1), time.Minute), s: syncState{failJobMsg: "m"}, want: "FailureTarget/PodFailurePolicy/m"},
		{name: "backoff", job: started(makeJob(3, 1), time.Minute), s: syncState{failed: 7}, want: "FailureTarget/BackoffLimitExceeded/" + msgBackoffExceeded},
		{
			name: "a recorded FailureTarget stands",
			job: func() *batchv1.Job {
				j := started(makeJob(3, 1), time.Minute)
				j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: "PodFailurePolicy", Message: "old"}}
				return j
			}(),
			s: syncState{failed: 7}, want: "FailureTarget/PodFailurePolicy/old",
		},
		{
			name: "a recorded SuccessCriteriaMet wins over later failures",
			job: func() *batchv1.Job {
				j := started(makeJob(3, 1), time.Minute)
				j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, Reason: "SuccessPolicy", Message: "Matched rules at index 0"}}
				return j
			}(),
			s: syncState{failJobMsg: "m"}, want: "SuccessCriteriaMet/SuccessPolicy/Matched rules at index 0",
		},
		{
			name: "max failed indexes exceeded",
			job: func() *batchv1.Job {
				j := indexed(5)
				j.Spec.BackoffLimitPerIndex, j.Spec.MaxFailedIndexes = ptr.To[int32](1), ptr.To[int32](1)
				return j
			}(),
			s: syncState{failedIdx: set(0, 3)}, want: "FailureTarget/MaxFailedIndexesExceeded/" + msgMaxFailedIndexes,
		},
		{
			name: "failed indexes once every index is done",
			job:  func() *batchv1.Job { j := indexed(3); j.Spec.BackoffLimitPerIndex = ptr.To[int32](1); return j }(),
			s:    syncState{failedIdx: set(1), completed: set(0, 2)}, want: "FailureTarget/FailedIndexes/" + msgFailedIndexes,
		},
		{
			name: "failed indexes wait for the others",
			job:  func() *batchv1.Job { j := indexed(3); j.Spec.BackoffLimitPerIndex = ptr.To[int32](1); return j }(),
			s:    syncState{failedIdx: set(1), completed: set(0)}, want: "",
		},
		{
			name: "success policy",
			job: func() *batchv1.Job {
				j := indexed(5)
				j.Spec.SuccessPolicy = &batchv1.SuccessPolicy{Rules: []batchv1.SuccessPolicyRule{{SucceededIndexes: ptr.To("0")}}}
				return j
			}(),
			s: syncState{completed: set(0)}, want: "SuccessCriteriaMet/SuccessPolicy/Matched rules at index 0",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := decideTerminal(tt.job, &tt.job.Status, &tt.s, now)
			got := ""
			if v.interim != "" {
				got = string(v.interim) + "/" + v.reason + "/" + v.message
			}
			if got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestIsPodFailed(t *testing.T) {
	deleting := ctrltest.MakePod("p").Running().Deleting(ctrltest.Epoch()).Obj()
	plain := makeJob(1, 1)
	withPolicy := makeJob(1, 1)
	withPolicy.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{}
	replaceFailed := makeJob(1, 1)
	replaceFailed.Spec.PodReplacementPolicy = ptr.To(batchv1.Failed)
	if !isPodFailed(deleting, plain) {
		t.Error("a deleted pod is a failure when terminating pods are replaced")
	}
	if isPodFailed(deleting, withPolicy) || isPodFailed(deleting, replaceFailed) {
		t.Error("a terminating pod was judged before it was terminal")
	}
	if !isPodFailed(failedPod("f"), withPolicy) {
		t.Error("a Failed pod is a failure")
	}
}

func TestReplacementFailureCounts(t *testing.T) {
	j := makeJob(3, 3)
	j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{Action: batchv1.PodFailurePolicyActionIgnore,
		OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{9}}}}}
	counted := failedPod("c", exited("main", 1))
	counted.Annotations = map[string]string{batchv1.JobIndexFailureCountAnnotation: "1"}
	ignored := failedPod("i", exited("main", 9))
	ignored.Annotations = map[string]string{batchv1.JobIndexFailureCountAnnotation: "2", batchv1.JobIndexIgnoredFailureCountAnnotation: "x"}
	for _, tt := range []struct {
		pod         *corev1.Pod
		wantCounted int32
		wantIgnored int32
	}{{nil, 0, 0}, {counted, 2, 0}, {ignored, 2, 1}} {
		if c, i := replacementFailureCounts(j, tt.pod); c != tt.wantCounted || i != tt.wantIgnored {
			t.Errorf("replacing %v: got %d/%d, want %d/%d", tt.pod != nil, c, i, tt.wantCounted, tt.wantIgnored)
		}
	}
}

func TestReadyIndexes(t *testing.T) {
	now := ctrltest.Epoch()
	failedAt := func(ago time.Duration, failures string) *corev1.Pod {
		p := failedPod("p", corev1.ContainerStatus{Name: "main", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: 1, FinishedAt: metav1.NewTime(now.Add(-ago))}}})
		p.Annotations = map[string]string{batchv1.JobIndexFailureCountAnnotation: failures}
		return p
	}
	// Index 1 failed for the first time 4s ago (10s backoff), index 2 for the
	// second time 15s ago (20s backoff): neither may run yet.
	delayed := map[int]*corev1.Pod{1: failedAt(4*time.Second, "0"), 2: failedAt(15*time.Second, "1")}
	ready, wait := readyIndexes([]int{1, 2}, delayed, now)
	if len(ready) != 0 || wait != 5*time.Second {
		t.Fatalf("ready %v wait %v, want none and 5s", ready, wait)
	}
	ready, wait = readyIndexes([]int{0, 1, 2}, delayed, now)
	if len(ready) != 1 || ready[0] != 0 || wait != 0 {
		t.Fatalf("ready %v wait %v, want [0]", ready, wait)
	}
}
