package job

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// podFailure is the Job's judgement of one failed pod under spec.podFailurePolicy.
type podFailure struct {
	// action is the matched rule's action; nil when no rule matched.
	action *batchv1.PodFailurePolicyAction
	// failJobMsg is set when a FailJob rule matched, worded as Kubernetes
	// words it: conformance specs and users read it from the Failed condition.
	failJobMsg string
	// count says whether the failure counts against backoffLimit (and
	// backoffLimitPerIndex); only an Ignore rule makes it false.
	count bool
}

// matchPodFailurePolicy applies the first matching rule of policy to a
// failed pod. Without a policy, or when no rule matches, the failure counts.
func matchPodFailurePolicy(policy *batchv1.PodFailurePolicy, pod *corev1.Pod) podFailure {
	if policy == nil {
		return podFailure{count: true}
	}
	for i, rule := range policy.Rules {
		var msg string
		switch {
		case rule.OnExitCodes != nil:
			cs := matchOnExitCodes(&pod.Status, rule.OnExitCodes)
			if cs == nil {
				continue
			}
			msg = fmt.Sprintf("Container %s for pod %s/%s failed with exit code %v matching %v rule at index %d",
				cs.Name, pod.Namespace, pod.Name, cs.State.Terminated.ExitCode, rule.Action, i)
		case rule.OnPodConditions != nil:
			cond := matchOnPodConditions(&pod.Status, rule.OnPodConditions)
			if cond == nil {
				continue
			}
			msg = fmt.Sprintf("Pod %s/%s has condition %v matching %v rule at index %d",
				pod.Namespace, pod.Name, cond.Type, rule.Action, i)
		default:
			continue
		}
		action := rule.Action
		switch action {
		case batchv1.PodFailurePolicyActionIgnore:
			return podFailure{action: &action}
		case batchv1.PodFailurePolicyActionCount, batchv1.PodFailurePolicyActionFailIndex:
			return podFailure{action: &action, count: true}
		case batchv1.PodFailurePolicyActionFailJob:
			return podFailure{action: &action, failJobMsg: msg, count: true}
		}
		// An action this version does not know matches nothing, as in
		// Kubernetes: the next rule is tried.
	}
	return podFailure{count: true}
}

// matchOnExitCodes finds a terminated container (app containers first, then
// init containers) with a non-zero exit code satisfying req.
func matchOnExitCodes(status *corev1.PodStatus, req *batchv1.PodFailurePolicyOnExitCodesRequirement) *corev1.ContainerStatus {
	for _, list := range [][]corev1.ContainerStatus{status.ContainerStatuses, status.InitContainerStatuses} {
		for i := range list {
			cs := &list[i]
			t := cs.State.Terminated
			// A container still running has no exit code to judge; exit code 0 is never a failure.
			if t == nil || t.ExitCode == 0 {
				continue
			}
			if req.ContainerName != nil && *req.ContainerName != cs.Name {
				continue
			}
			in := slices.Contains(req.Values, t.ExitCode)
			if (req.Operator == batchv1.PodFailurePolicyOnExitCodesOpIn && in) || (req.Operator == batchv1.PodFailurePolicyOnExitCodesOpNotIn && !in) {
				return cs
			}
		}
	}
	return nil
}

func matchOnPodConditions(status *corev1.PodStatus, patterns []batchv1.PodFailurePolicyOnPodConditionsPattern) *corev1.PodCondition {
	for i := range status.Conditions {
		c := &status.Conditions[i]
		for _, p := range patterns {
			if c.Type == p.Type && c.Status == p.Status {
				return c
			}
		}
	}
	return nil
}

// matchSuccessPolicy reports whether the succeeded indexes satisfy a rule of
// an Indexed Job's successPolicy, with Kubernetes' condition message.
func matchSuccessPolicy(policy *batchv1.SuccessPolicy, completions int, succeeded map[int]bool) (string, bool) {
	if policy == nil || len(succeeded) == 0 {
		return "", false
	}
	for i, rule := range policy.Rules {
		matched := false
		if rule.SucceededIndexes != nil {
			required := parseIndexes(*rule.SucceededIndexes, completions)
			if len(required) == 0 {
				// Nothing within completions: the rule can never be met.
				continue
			}
			have := 0
			for ix := range required {
				if succeeded[ix] {
					have++
				}
			}
			matched = have == len(required) || (rule.SucceededCount != nil && have >= int(*rule.SucceededCount))
		} else if rule.SucceededCount != nil {
			matched = len(succeeded) >= int(*rule.SucceededCount)
		}
		if matched {
			return fmt.Sprintf("Matched rules at index %d", i), true
		}
	}
	return "", false
}

// annotationCount reads a non-negative int32 pod annotation; anything
// missing or malformed (e.g. edited by a user) reads as 0.
func annotationCount(p *corev1.Pod, key string) int32 {
	v, err := strconv.Atoi(p.Annotations[key])
	if err != nil || v < 0 || v > math.MaxInt32 {
		return 0
	}
	return int32(v)
}

// indexFailed reports whether a failed pod of a Job with backoffLimitPerIndex
// fails its index: a FailIndex rule matched, or the counted failures of the
// index (this one included) exceed backoffLimitPerIndex.
func indexFailed(job *batchv1.Job, p *corev1.Pod) bool {
	pf := matchPodFailurePolicy(job.Spec.PodFailurePolicy, p)
	if pf.action != nil && *pf.action == batchv1.PodFailurePolicyActionFailIndex {
		return true
	}
	return pf.count && annotationCount(p, batchv1.JobIndexFailureCountAnnotation) >= *job.Spec.BackoffLimitPerIndex
}

// replacementFailureCounts are the failure-count annotations of the pod that
// replaces failed pod `replaced` in its index: the counted failures so far,
// and the failures an Ignore rule left uncounted.
func replacementFailureCounts(job *batchv1.Job, replaced *corev1.Pod) (counted, ignored int32) {
	if replaced == nil {
		return 0, 0
	}
	counted = annotationCount(replaced, batchv1.JobIndexFailureCountAnnotation)
	ignored = annotationCount(replaced, batchv1.JobIndexIgnoredFailureCountAnnotation)
	if matchPodFailurePolicy(job.Spec.PodFailurePolicy, replaced).count {
		counted++
	} else {
		ignored++
	}
	return counted, ignored
}

// finishedTime is when a pod finished: its containers' last exit, else when
// it went not-Ready, else when it was deleted, else when it was created.
func finishedTime(p *corev1.Pod) time.Time {
	var last time.Time
	all := len(p.Status.ContainerStatuses) > 0
	for _, cs := range p.Status.ContainerStatuses {
		t := cs.State.Terminated
		if t == nil || t.FinishedAt.IsZero() {
			all = false
			break
		}
		if t.FinishedAt.After(last) {
			last = t.FinishedAt.Time
		}
	}
	if all {
		return last
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionFalse && !c.LastTransitionTime.IsZero() {
			return c.LastTransitionTime.Time
		}
	}
	if p.DeletionTimestamp != nil {
		var grace int64
		if p.DeletionGracePeriodSeconds != nil {
			grace = *p.DeletionGracePeriodSeconds
		}
		return p.DeletionTimestamp.Add(-time.Duration(grace) * time.Second)
	}
	return p.CreationTimestamp.Time
}

// backoffDelay is the wait before recreating a pod after `failures`
// consecutive failures: initialBackoff doubling per failure, capped.
func backoffDelay(failures int) time.Duration {
	delay := initialBackoff
	for i := 1; i < failures && delay < maxBackoff; i++ {
		delay *= 2
	}
	return min(delay, maxBackoff)
}
