package replication

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/skiff-sh/skiff/internal/controller/ctrlutil"
	"github.com/skiff-sh/skiff/internal/controller/replicaset"
)

// Name is the controller's name in --controllers and in metrics, as kube-controller-manager spells it.
const Name = "replicationcontroller"

// New builds the ReplicationController controller: the ReplicaSet controller with Owner.
func New(deps ctrlutil.Deps) (*replicaset.Controller, error) {
	return replicaset.NewFor(deps, Owner(deps))
}

// Owner reads ReplicationControllers as ReplicaSets and writes their status back.
func Owner(deps ctrlutil.Deps) replicaset.Owner {
	informer := deps.Informers.Core().V1().ReplicationControllers()
	lister := informer.Lister()
	return replicaset.Owner{
		Name:     Name,
		Kind:     corev1.SchemeGroupVersion.WithKind("ReplicationController"),
		Informer: informer.Informer(),
		Get: func(namespace, name string) (*appsv1.ReplicaSet, error) {
			rc, err := lister.ReplicationControllers(namespace).Get(name)
			if err != nil {
				return nil, err
			}
			return ToReplicaSet(rc), nil
		},
		List: func(namespace string) ([]*appsv1.ReplicaSet, error) {
			rcs, err := lister.ReplicationControllers(namespace).List(labels.Everything())
			if err != nil {
				return nil, err
			}
			out := make([]*appsv1.ReplicaSet, len(rcs))
			for i, rc := range rcs {
				out[i] = ToReplicaSet(rc)
			}
			return out, nil
		},
		GetLive: func(ctx context.Context, namespace, name string) (*appsv1.ReplicaSet, error) {
			rc, err := deps.Client.CoreV1().ReplicationControllers(namespace).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return nil, err
			}
			return ToReplicaSet(rc), nil
		},
		UpdateStatus: func(ctx context.Context, rs *appsv1.ReplicaSet) error {
			rc, err := FromReplicaSet(rs)
			if err != nil {
				return err
			}
			_, err = deps.Client.CoreV1().ReplicationControllers(rc.Namespace).UpdateStatus(ctx, rc, metav1.UpdateOptions{})
			return err
		},
		EventObject: func(rs *appsv1.ReplicaSet) runtime.Object {
			rc, err := FromReplicaSet(rs)
			if err != nil {
				// Only an unconvertible selector fails, and an RC's map selector always converts.
				return rs
			}
			return rc
		},
	}
}

// ToReplicaSet converts rc into the ReplicaSet the controller decides on: the same metadata (name,
// uid, resourceVersion), the map selector as matchLabels, the template, and the status.
func ToReplicaSet(rc *corev1.ReplicationController) *appsv1.ReplicaSet {
	rs := &appsv1.ReplicaSet{
		ObjectMeta: *rc.ObjectMeta.DeepCopy(),
		Spec: appsv1.ReplicaSetSpec{
			MinReadySeconds: rc.Spec.MinReadySeconds,
			Selector:        &metav1.LabelSelector{MatchLabels: copyMap(rc.Spec.Selector)},
		},
		Status: appsv1.ReplicaSetStatus{
			Replicas:             rc.Status.Replicas,
			FullyLabeledReplicas: rc.Status.FullyLabeledReplicas,
			ReadyReplicas:        rc.Status.ReadyReplicas,
			AvailableReplicas:    rc.Status.AvailableReplicas,
			ObservedGeneration:   rc.Status.ObservedGeneration,
		},
	}
	if rc.Spec.Replicas != nil {
		n := *rc.Spec.Replicas
		rs.Spec.Replicas = &n
	}
	if rc.Spec.Template != nil {
		rs.Spec.Template = *rc.Spec.Template.DeepCopy()
	}
	for _, c := range rc.Status.Conditions {
		rs.Status.Conditions = append(rs.Status.Conditions, appsv1.ReplicaSetCondition{
			Type: appsv1.ReplicaSetConditionType(c.Type), Status: c.Status,
			LastTransitionTime: c.LastTransitionTime, Reason: c.Reason, Message: c.Message,
		})
	}
	return rs
}

// FromReplicaSet converts back. A selector with expressions has no RC form; ToReplicaSet never
// makes one.
func FromReplicaSet(rs *appsv1.ReplicaSet) (*corev1.ReplicationController, error) {
	rc := &corev1.ReplicationController{
		ObjectMeta: *rs.ObjectMeta.DeepCopy(),
		Spec: corev1.ReplicationControllerSpec{
			MinReadySeconds: rs.Spec.MinReadySeconds,
			Template:        rs.Spec.Template.DeepCopy(),
		},
		Status: corev1.ReplicationControllerStatus{
			Replicas:             rs.Status.Replicas,
			FullyLabeledReplicas: rs.Status.FullyLabeledReplicas,
			ReadyReplicas:        rs.Status.ReadyReplicas,
			AvailableReplicas:    rs.Status.AvailableReplicas,
			ObservedGeneration:   rs.Status.ObservedGeneration,
		},
	}
	if rs.Spec.Replicas != nil {
		n := *rs.Spec.Replicas
		rc.Spec.Replicas = &n
	}
	if sel := rs.Spec.Selector; sel != nil {
		if len(sel.MatchExpressions) > 0 {
			return nil, fmt.Errorf("replicaset %s/%s: a selector with matchExpressions has no ReplicationController form", rs.Namespace, rs.Name)
		}
		rc.Spec.Selector = copyMap(sel.MatchLabels)
	}
	for _, c := range rs.Status.Conditions {
		rc.Status.Conditions = append(rc.Status.Conditions, corev1.ReplicationControllerCondition{
			Type: corev1.ReplicationControllerConditionType(c.Type), Status: c.Status,
			LastTransitionTime: c.LastTransitionTime, Reason: c.Reason, Message: c.Message,
		})
	}
	return rc, nil
}

func copyMap(in map[string]string) map[string]string {
	if in == nil {
		return nil
	}
	out := make(map[string]string, len(in))
	for k, v := range in {
		out[k] = v
	}
	return out
}
