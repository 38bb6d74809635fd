package apps

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A Deployment's /status may change annotations (the controller records the revision there without
// bumping the generation) but not labels, as in Kubernetes.
func TestDeploymentStatusKeepsAnnotationChanges(t *testing.T) {
	for _, r := range Resources() {
		if r.Kind != "Deployment" {
			continue
		}
		old := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "d", Labels: map[string]string{"a": "1"}, Generation: 4}}
		next := old.DeepCopy()
		next.Annotations = map[string]string{"deployment.kubernetes.io/revision": "2"}
		next.Labels = map[string]string{"a": "changed"}
		next.Status.Replicas = 3
		r.Status.PrepareForUpdate(context.Background(), next, old)
		if next.Annotations["deployment.kubernetes.io/revision"] != "2" {
			t.Fatalf("annotation change dropped: %v", next.Annotations)
		}
		if next.Labels["a"] != "1" || next.Generation != 4 || next.Status.Replicas != 3 {
			t.Fatalf("labels %v generation %d replicas %d", next.Labels, next.Generation, next.Status.Replicas)
		}
		return
	}
	t.Fatal("no Deployment resource")
}
