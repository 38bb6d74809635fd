package apps

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// With the real core hooks: decoding defaults reach the containers, and core's pod rules report
// their errors under spec.template.
func TestWithCorePodRules(t *testing.T) {
	s := runtime.NewScheme()
	if err := appsv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := RegisterDefaults(s); err != nil {
		t.Fatal(err)
	}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: appLabels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: appLabels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx", Ports: []corev1.ContainerPort{{ContainerPort: 80}}}}},
			},
		},
	}
	s.Default(d)
	spec := d.Spec.Template.Spec
	c := spec.Containers[0]
	if spec.RestartPolicy != corev1.RestartPolicyAlways || spec.DNSPolicy != corev1.DNSClusterFirst || *spec.TerminationGracePeriodSeconds != 30 ||
		c.TerminationMessagePath != "/dev/termination-log" || c.ImagePullPolicy != corev1.PullAlways || c.Ports[0].Protocol != corev1.ProtocolTCP {
		t.Fatalf("pod template defaults missing: %+v", spec)
	}
	var deployments = Resources()[0]
	checkErrs(t, deployments.Strategy.Validate(context.Background(), d), nil)

	bad := d.DeepCopy()
	bad.Spec.Template.Spec.Containers[0].Name = "Not_A_Label"
	checkErrs(t, deployments.Strategy.Validate(context.Background(), bad), &wantErr{"spec.template.spec.containers[0].name", field.ErrorTypeInvalid, ""})

	ss := &appsv1.StatefulSet{Spec: appsv1.StatefulSetSpec{VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{}}}}
	s.Default(ss)
	claim := ss.Spec.VolumeClaimTemplates[0]
	if *claim.Spec.VolumeMode != corev1.PersistentVolumeFilesystem || claim.Status.Phase != corev1.ClaimPending {
		t.Fatalf("claim template defaults = %+v", claim)
	}
}
