package nodelifecycle

import (
	"reflect"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-sh/skiff/internal/controller/ctrlutil"
)

// Taint keys Kubernetes uses for node conditions.
const (
	TaintNotReady           = "node.kubernetes.io/not-ready"
	TaintUnreachable        = "node.kubernetes.io/unreachable"
	TaintMemoryPressure     = "node.kubernetes.io/memory-pressure"
	TaintDiskPressure       = "node.kubernetes.io/disk-pressure"
	TaintPIDPressure        = "node.kubernetes.io/pid-pressure"
	TaintNetworkUnavailable = "node.kubernetes.io/network-unavailable"
	TaintUnschedulable      = "node.kubernetes.io/unschedulable"
)

// Plan is what Evaluate decided for one node.
type Plan struct {
	// Conditions is the node's new condition list when it changed, else nil.
	Conditions []corev1.NodeCondition
	// Taints is the node's new taint list when it changed, else nil.
	Taints []corev1.Taint
	// NotReady: the node is not ready, its pods must not be Ready either.
	NotReady bool
}

// managedTaint reports whether key is one this controller owns.
func managedTaint(key string) bool {
	switch key {
	case TaintNotReady, TaintUnreachable, TaintMemoryPressure, TaintDiskPressure, TaintPIDPressure, TaintNetworkUnavailable, TaintUnschedulable:
		return true
	}
	return false
}

// Evaluate decides a node's conditions and taints from what was last heard
// of it (node heartbeats and its Lease) at now. It performs no I/O.
func Evaluate(node *corev1.Node, lease *coordinationv1.Lease, now time.Time, grace time.Duration) Plan {
	conditions := make([]corev1.NodeCondition, len(node.Status.Conditions))
	copy(conditions, node.Status.Conditions)

	lastHeard := node.CreationTimestamp.Time
	readyIdx := -1
	for i, c := range conditions {
		if c.Type == corev1.NodeReady {
			readyIdx = i
			if c.LastHeartbeatTime.After(lastHeard) {
				lastHeard = c.LastHeartbeatTime.Time
			}
		}
	}
	if lease != nil && lease.Spec.RenewTime != nil && lease.Spec.RenewTime.After(lastHeard) {
		lastHeard = lease.Spec.RenewTime.Time
	}
	if now.Sub(lastHeard) > grace {
		ts := metav1.NewTime(now)
		if readyIdx < 0 {
			conditions = append(conditions, corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionUnknown,
				Reason: "NodeStatusNeverUpdated", Message: "Kubelet never posted node status.", LastHeartbeatTime: node.CreationTimestamp, LastTransitionTime: ts})
		}
		for i := range conditions {
			c := &conditions[i]
			switch c.Type {
			case corev1.NodeReady, corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure:
				if c.Status != corev1.ConditionUnknown {
					c.Status, c.Reason, c.Message, c.LastTransitionTime = corev1.ConditionUnknown, "NodeStatusUnknown", "Kubelet stopped posting node status.", ts
				}
			}
		}
	}

	status := map[corev1.NodeConditionType]corev1.ConditionStatus{}
	for _, c := range conditions {
		status[c.Type] = c.Status
	}
	want := map[string][]corev1.TaintEffect{}
	switch status[corev1.NodeReady] {
	case corev1.ConditionFalse:
		want[TaintNotReady] = []corev1.TaintEffect{corev1.TaintEffectNoSchedule, corev1.TaintEffectNoExecute}
	case corev1.ConditionUnknown:
		want[TaintUnreachable] = []corev1.TaintEffect{corev1.TaintEffectNoSchedule, corev1.TaintEffectNoExecute}
	case "":
		// A node that never reported is not schedulable yet.
		want[TaintNotReady] = []corev1.TaintEffect{corev1.TaintEffectNoSchedule}
	}
	for cond, key := range map[corev1.NodeConditionType]string{corev1.NodeMemoryPressure: TaintMemoryPressure, corev1.NodeDiskPressure: TaintDiskPressure,
		corev1.NodePIDPressure: TaintPIDPressure, corev1.NodeNetworkUnavailable: TaintNetworkUnavailable} {
		if status[cond] == corev1.ConditionTrue {
			want[key] = []corev1.TaintEffect{corev1.TaintEffectNoSchedule}
		}
	}
	if node.Spec.Unschedulable {
		want[TaintUnschedulable] = []corev1.TaintEffect{corev1.TaintEffectNoSchedule}
	}

	var taints []corev1.Taint
	have := map[string]bool{}
	for _, t := range node.Spec.Taints {
		if managedTaint(t.Key) {
			keep := false
			for _, e := range want[t.Key] {
				keep = keep || e == t.Effect
			}
			if !keep {
				continue
			}
		}
		have[t.Key+"/"+string(t.Effect)] = true
		taints = append(taints, t)
	}
	for _, key := range []string{TaintNotReady, TaintUnreachable, TaintMemoryPressure, TaintDiskPressure, TaintPIDPressure, TaintNetworkUnavailable, TaintUnschedulable} {
		for _, e := range want[key] {
			if have[key+"/"+string(e)] {
				continue
			}
			t := corev1.Taint{Key: key, Effect: e}
			if e == corev1.TaintEffectNoExecute {
				t.TimeAdded = &metav1.Time{Time: now}
			}
			taints = append(taints, t)
		}
	}

	plan := Plan{NotReady: status[corev1.NodeReady] != corev1.ConditionTrue}
	if !reflect.DeepEqual(conditions, node.Status.Conditions) && !(len(conditions) == 0 && len(node.Status.Conditions) == 0) {
		plan.Conditions = conditions
	}
	if !reflect.DeepEqual(taints, node.Spec.Taints) && !(len(taints) == 0 && len(node.Spec.Taints) == 0) {
		if taints == nil {
			taints = []corev1.Taint{}
		}
		plan.Taints = taints
	}
	return plan
}

// Tolerates reports whether toleration t tolerates taint.
func Tolerates(t *corev1.Toleration, taint *corev1.Taint) bool { return ctrlutil.Tolerates(t, taint) }

// EvictionTime decides, for a pod on a node with the given taints, whether it
// must go: never (ok false), now, or when its shortest matching
// tolerationSeconds since the taint was added runs out.
func EvictionTime(pod *corev1.Pod, taints []corev1.Taint, now time.Time) (at time.Time, evict bool) {
	for i := range taints {
		taint := &taints[i]
		if taint.Effect != corev1.TaintEffectNoExecute {
			continue
		}
		added := now
		if taint.TimeAdded != nil {
			added = taint.TimeAdded.Time
		}
		tolerated := false
		var limit *int64
		for j := range pod.Spec.Tolerations {
			tol := &pod.Spec.Tolerations[j]
			if !Tolerates(tol, taint) {
				continue
			}
			tolerated = true
			if tol.TolerationSeconds == nil {
				continue // tolerates forever unless a bounded toleration also matches
			}
			if limit == nil || *tol.TolerationSeconds < *limit {
				limit = tol.TolerationSeconds
			}
		}
		switch {
		case !tolerated:
			return now, true
		case limit != nil:
			deadline := added.Add(time.Duration(max(*limit, 0)) * time.Second)
			if !evict || deadline.Before(at) {
				at, evict = deadline, true
			}
		}
	}
	return at, evict
}
