package apiserver

import (
	"context"
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestCoreV1Additions drives the core/v1 resources and subresources of issue 11 through client-go:
// replicationcontrollers with /scale, the legacy bindings collection, pods/ephemeralcontainers and
// pods/resize.
func TestCoreV1Additions(t *testing.T) {
	c := startTestCluster(t)
	ctx := context.Background()

	t.Run("replicationcontrollers and their scale", func(t *testing.T) {
		ns := c.namespace(t, "rc")
		rcs := c.client.CoreV1().ReplicationControllers(ns)
		rc, err := rcs.Create(ctx, &corev1.ReplicationController{
			ObjectMeta: metav1.ObjectMeta{Name: "web"},
			Spec: corev1.ReplicationControllerSpec{Template: &corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx"}}},
			}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if rc.Spec.Selector["app"] != "web" || rc.Labels["app"] != "web" || ptr.Deref(rc.Spec.Replicas, 0) != 1 || rc.Generation != 1 {
			t.Fatalf("created RC not defaulted: %+v", rc)
		}
		scale, err := rcs.GetScale(ctx, "web", metav1.GetOptions{})
		if err != nil || scale.Spec.Replicas != 1 || scale.Status.Selector != "app=web" {
			t.Fatalf("get scale: %v %+v", err, scale)
		}
		if _, err := rcs.UpdateScale(ctx, "web", &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: autoscalingv1.ScaleSpec{Replicas: 3}}, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		rc, err = rcs.Get(ctx, "web", metav1.GetOptions{})
		if err != nil || *rc.Spec.Replicas != 3 || rc.Generation != 2 {
			t.Fatalf("after scale: %v replicas %v generation %d", err, rc.Spec.Replicas, rc.Generation)
		}
		rc.Status = corev1.ReplicationControllerStatus{Replicas: 3, ReadyReplicas: 4}
		_, err = rcs.UpdateStatus(ctx, rc, metav1.UpdateOptions{})
		wantStatus(t, err, 422, "status.readyReplicas: Invalid value: 4: cannot be greater than the number of replicas")
	})

	t.Run("legacy bindings collection", func(t *testing.T) {
		ns := c.namespace(t, "bindings")
		pods := c.client.CoreV1().Pods(ns)
		if _, err := pods.Create(ctx, makePod("web").ns(ns).obj(), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		post := func(b *corev1.Binding) error {
			return c.client.CoreV1().RESTClient().Post().Namespace(ns).Resource("bindings").Body(b).Do(ctx).Error()
		}
		err := post(&corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Target: corev1.ObjectReference{Kind: "Pod", Name: "n1"}})
		wantStatus(t, err, 422, `target.kind: Unsupported value: "Pod"`)
		if err := post(&corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Target: corev1.ObjectReference{Kind: "Node", Name: "n1"}}); err != nil {
			t.Fatal(err)
		}
		pod, err := pods.Get(ctx, "web", metav1.GetOptions{})
		if err != nil || pod.Spec.NodeName != "n1" {
			t.Fatalf("bound through bindings: %v %q", err, pod.Spec.NodeName)
		}
		wantStatus(t, post(&corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Target: corev1.ObjectReference{Name: "n2"}}), 409, `already assigned to node "n1"`)
		wantStatus(t, post(&corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "missing"}, Target: corev1.ObjectReference{Name: "n2"}}), 404, `pods "missing" not found`)
		err = c.client.CoreV1().RESTClient().Get().Namespace(ns).Resource("bindings").Do(ctx).Error()
		wantStatus(t, err, 405, "")
	})

	t.Run("ephemeral containers and resize", func(t *testing.T) {
		ns := c.namespace(t, "debug")
		pods := c.client.CoreV1().Pods(ns)
		pod := makePod("web").ns(ns).obj()
		pod.Spec.Containers[0].Resources = corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")},
		}
		created, err := pods.Create(ctx, pod, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		debug := created.DeepCopy()
		debug.Spec.EphemeralContainers = []corev1.EphemeralContainer{{
			EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debugger", Image: "busybox", Stdin: true, TTY: true},
			TargetContainerName:      "app",
		}}
		debugged, err := pods.UpdateEphemeralContainers(ctx, "web", debug, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(debugged.Spec.EphemeralContainers) != 1 || debugged.Spec.EphemeralContainers[0].TerminationMessagePath == "" {
			t.Fatalf("ephemeral container not added or not defaulted: %+v", debugged.Spec.EphemeralContainers)
		}
		bad := debugged.DeepCopy()
		bad.Spec.EphemeralContainers = append(bad.Spec.EphemeralContainers, corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
			Name: "web", Image: "busybox", Ports: []corev1.ContainerPort{{ContainerPort: 80}},
		}})
		_, err = pods.UpdateEphemeralContainers(ctx, "web", bad, metav1.UpdateOptions{})
		wantStatus(t, err, 422, "spec.ephemeralContainers[1].ports: Forbidden: cannot be set for an Ephemeral Container")

		resize := debugged.DeepCopy()
		resize.Spec.Containers[0].Resources.Limits[corev1.ResourceCPU] = resource.MustParse("1")
		resized, err := pods.UpdateResize(ctx, "web", resize, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := resized.Spec.Containers[0].Resources.Limits[corev1.ResourceCPU]; got.String() != "1" {
			t.Fatalf("cpu limit after resize = %s", got.String())
		}
		removal := resized.DeepCopy()
		delete(removal.Spec.Containers[0].Resources.Limits, corev1.ResourceCPU)
		_, err = pods.UpdateResize(ctx, "web", removal, metav1.UpdateOptions{})
		wantStatus(t, err, 422, "resource limits cannot be removed")
	})
}
