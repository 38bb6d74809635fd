package ctrlutil

import (
	"sort"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PodDeletionCostAnnotation lets users rank pods for scale-down (lower first).
const PodDeletionCostAnnotation = "controller.kubernetes.io/pod-deletion-cost"

// IsPodActive: not terminated and not being deleted.
func IsPodActive(p *corev1.Pod) bool {
	return p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed && p.DeletionTimestamp == nil
}

// PodReadyCondition returns the pod's Ready condition, or nil.
func PodReadyCondition(p *corev1.Pod) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == corev1.PodReady {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// IsPodReady reports Ready=True.
func IsPodReady(p *corev1.Pod) bool {
	c := PodReadyCondition(p)
	return c != nil && c.Status == corev1.ConditionTrue
}

// IsPodAvailable reports whether p has been ready for at least minReadySeconds at now.
func IsPodAvailable(p *corev1.Pod, minReadySeconds int32, now time.Time) bool {
	c := PodReadyCondition(p)
	if c == nil || c.Status != corev1.ConditionTrue {
		return false
	}
	if minReadySeconds == 0 {
		return true
	}
	return !c.LastTransitionTime.IsZero() && c.LastTransitionTime.Add(time.Duration(minReadySeconds)*time.Second).Before(now)
}

// AvailableIn returns how long until a ready pod becomes available (0 if it
// already is or is not ready), so a controller can requeue at that moment.
func AvailableIn(p *corev1.Pod, minReadySeconds int32, now time.Time) time.Duration {
	c := PodReadyCondition(p)
	if c == nil || c.Status != corev1.ConditionTrue || minReadySeconds == 0 {
		return 0
	}
	d := c.LastTransitionTime.Add(time.Duration(minReadySeconds)*time.Second).Sub(now) + time.Second
	return max(d, 0)
}

// SoonestAvailable is how long until the first of pods that is ready but not yet available becomes
// available (0: none is waiting), for a controller to look again then: nothing else changes when
// minReadySeconds pass.
func SoonestAvailable(pods []*corev1.Pod, minReadySeconds int32, now time.Time) time.Duration {
	var soonest time.Duration
	for _, p := range pods {
		if d := AvailableIn(p, minReadySeconds, now); d > 0 && (soonest == 0 || d < soonest) {
			soonest = d
		}
	}
	return soonest
}

// PodFromTemplate builds a pod for owner from its template: labels,
// annotations, spec, generateName "<owner>-" and the controllerRef.
func PodFromTemplate(template *corev1.PodTemplateSpec, namespace, ownerName string, ref *metav1.OwnerReference) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:    namespace,
			GenerateName: ownerName + "-",
			Labels:       copyMap(template.Labels),
			Annotations:  copyMap(template.Annotations),
			Finalizers:   append([]string(nil), template.Finalizers...),
		},
		Spec: *template.Spec.DeepCopy(),
	}
	if ref != nil {
		pod.OwnerReferences = []metav1.OwnerReference{*ref}
	}
	return pod
}

func copyMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// SortPodsForDeletion orders pods so the ones best deleted first come first,
// following Kubernetes' preference: unscheduled before scheduled; Pending
// before Unknown before Running; not ready before ready; lower deletion cost;
// more pods of the same owner on the node (colocated, given by podsOnNode);
// ready for a shorter time; more restarts; newer.
func SortPodsForDeletion(pods []*corev1.Pod, podsOnNode map[string]int) {
	sort.SliceStable(pods, func(i, j int) bool { return deleteBefore(pods[i], pods[j], podsOnNode) })
}

var phaseRank = map[corev1.PodPhase]int{corev1.PodPending: 0, corev1.PodUnknown: 1, corev1.PodRunning: 2}

func deleteBefore(a, b *corev1.Pod, podsOnNode map[string]int) bool {
	if (a.Spec.NodeName == "") != (b.Spec.NodeName == "") {
		return a.Spec.NodeName == ""
	}
	if phaseRank[a.Status.Phase] != phaseRank[b.Status.Phase] {
		return phaseRank[a.Status.Phase] < phaseRank[b.Status.Phase]
	}
	if IsPodReady(a) != IsPodReady(b) {
		return !IsPodReady(a)
	}
	if ca, cb := deletionCost(a), deletionCost(b); ca != cb {
		return ca < cb
	}
	if ra, rb := podsOnNode[a.Spec.NodeName], podsOnNode[b.Spec.NodeName]; a.Spec.NodeName != "" && ra != rb {
		return ra > rb
	}
	if IsPodReady(a) && IsPodReady(b) {
		ta, tb := PodReadyCondition(a).LastTransitionTime, PodReadyCondition(b).LastTransitionTime
		if !ta.Equal(&tb) {
			return afterOrZero(&ta, &tb)
		}
	}
	if ra, rb := maxRestarts(a), maxRestarts(b); ra != rb {
		return ra > rb
	}
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return afterOrZero(&a.CreationTimestamp, &b.CreationTimestamp)
	}
	return a.Name < b.Name
}

// afterOrZero: a zero time counts as newest.
func afterOrZero(a, b *metav1.Time) bool {
	if a.IsZero() || b.IsZero() {
		return a.IsZero() && !b.IsZero()
	}
	return a.After(b.Time)
}

func deletionCost(p *corev1.Pod) int64 {
	v, ok := p.Annotations[PodDeletionCostAnnotation]
	if !ok {
		return 0
	}
	c, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return 0
	}
	return c
}

func maxRestarts(p *corev1.Pod) int32 {
	var m int32
	for _, s := range p.Status.ContainerStatuses {
		m = max(m, s.RestartCount)
	}
	return m
}
