package ctrltest

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// PodBuilder builds test pods: MakePod("p1").Labels(l).Node("n1").Ready(t).Obj().
type PodBuilder struct{ pod *corev1.Pod }

// MakePod starts a Pending pod in namespace "default" with uid "uid-<name>".
func MakePod(name string) *PodBuilder {
	return &PodBuilder{pod: &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name),
			CreationTimestamp: metav1.NewTime(Epoch().Add(-time.Hour))},
		Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "img"}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}}
}

func (b *PodBuilder) Namespace(ns string) *PodBuilder { b.pod.Namespace = ns; return b }
func (b *PodBuilder) Labels(l map[string]string) *PodBuilder {
	b.pod.Labels = l
	return b
}
func (b *PodBuilder) Annotation(k, v string) *PodBuilder {
	if b.pod.Annotations == nil {
		b.pod.Annotations = map[string]string{}
	}
	b.pod.Annotations[k] = v
	return b
}
func (b *PodBuilder) Node(n string) *PodBuilder { b.pod.Spec.NodeName = n; return b }
func (b *PodBuilder) Phase(p corev1.PodPhase) *PodBuilder {
	b.pod.Status.Phase = p
	return b
}
func (b *PodBuilder) Created(t time.Time) *PodBuilder {
	b.pod.CreationTimestamp = metav1.NewTime(t)
	return b
}
func (b *PodBuilder) Restarts(n int32) *PodBuilder {
	b.pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", RestartCount: n}}
	return b
}

// Ready makes the pod Running and Ready since t (scheduled to "node-1" if unscheduled).
func (b *PodBuilder) Ready(since time.Time) *PodBuilder {
	if b.pod.Spec.NodeName == "" {
		b.pod.Spec.NodeName = "node-1"
	}
	b.pod.Status.Phase = corev1.PodRunning
	b.pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(since)}}
	return b
}

// Running makes the pod Running but not Ready.
func (b *PodBuilder) Running() *PodBuilder {
	if b.pod.Spec.NodeName == "" {
		b.pod.Spec.NodeName = "node-1"
	}
	b.pod.Status.Phase = corev1.PodRunning
	b.pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}
	return b
}

func (b *PodBuilder) Deleting(at time.Time) *PodBuilder {
	t := metav1.NewTime(at)
	b.pod.DeletionTimestamp = &t
	return b
}

// Sidecar adds a restartable init container (restartPolicy Always) with ports.
func (b *PodBuilder) Sidecar(name string, ports ...corev1.ContainerPort) *PodBuilder {
	b.pod.Spec.InitContainers = append(b.pod.Spec.InitContainers, corev1.Container{Name: name, Image: "img",
		RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways), Ports: ports})
	return b
}

// OwnedBy sets a controller ownerReference to owner of the given kind.
func (b *PodBuilder) OwnedBy(owner metav1.Object, apiVersion, kind string) *PodBuilder {
	b.pod.OwnerReferences = append(b.pod.OwnerReferences, metav1.OwnerReference{APIVersion: apiVersion, Kind: kind,
		Name: owner.GetName(), UID: owner.GetUID(), Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)})
	return b
}

func (b *PodBuilder) Obj() *corev1.Pod { return b.pod }

// MakeReplicaSet returns a ReplicaSet in "default" selecting labels, with a
// template carrying them, generation 1.
func MakeReplicaSet(name string, replicas int32, labels map[string]string) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{
		TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "ReplicaSet"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name), Generation: 1,
			CreationTimestamp: metav1.NewTime(Epoch().Add(-2 * time.Hour))},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "img"}}},
			},
		},
	}
}
