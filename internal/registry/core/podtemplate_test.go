package core

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func makePodTemplate(mods ...func(*corev1.PodTemplate)) *corev1.PodTemplate {
	pod := makePod("unused").obj()
	pt := &corev1.PodTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: "web-template", Namespace: "default", ResourceVersion: "1"},
		Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
			Spec:       pod.Spec,
		},
	}
	for _, m := range mods {
		m(pt)
	}
	return pt
}

func TestValidatePodTemplate(t *testing.T) {
	ctx := context.Background()
	r := resourceByPlural(t, "podtemplates")
	requireNoErrors(t, r.Strategy.Validate(ctx, makePodTemplate()))
	tests := []struct {
		name string
		obj  *corev1.PodTemplate
		want wantErr
	}{
		{"no containers", makePodTemplate(func(pt *corev1.PodTemplate) { pt.Template.Spec.Containers = nil }), wantErr{"template.spec.containers", field.ErrorTypeRequired, ""}},
		{"bad label", makePodTemplate(func(pt *corev1.PodTemplate) { pt.Template.Labels = map[string]string{"app": "-"} }), wantErr{"template.labels", field.ErrorTypeInvalid, ""}},
		{"no image", makePodTemplate(func(pt *corev1.PodTemplate) { pt.Template.Spec.Containers[0].Image = "" }), wantErr{"template.spec.containers[0].image", field.ErrorTypeRequired, ""}},
		{"ephemeral containers", makePodTemplate(func(pt *corev1.PodTemplate) {
			pt.Template.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug", Image: "busybox"}}}
		}), wantErr{"template.spec.ephemeralContainers", field.ErrorTypeForbidden, "ephemeral containers not allowed in pod template"}},
		{"no namespace", makePodTemplate(func(pt *corev1.PodTemplate) { pt.Namespace = "" }), wantErr{"metadata.namespace", field.ErrorTypeRequired, ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			requireError(t, r.Strategy.Validate(ctx, tt.obj), tt.want)
		})
	}

	created := makePodTemplate()
	r.Strategy.PrepareForCreate(ctx, created)
	if created.Generation != 1 {
		t.Fatalf("generation on create = %d", created.Generation)
	}
	upd := created.DeepCopy()
	upd.Template.Spec.Containers[0].Image = "nginx:1.28"
	r.Strategy.PrepareForUpdate(ctx, upd, created)
	if upd.Generation != 2 {
		t.Fatalf("generation after a template change = %d", upd.Generation)
	}
	requireNoErrors(t, r.Strategy.ValidateUpdate(ctx, upd, created))
	bad := created.DeepCopy()
	bad.Template.Spec.Containers[0].Name = "Bad_Name"
	requireError(t, r.Strategy.ValidateUpdate(ctx, bad, created), wantErr{"template.spec.containers[0].name", field.ErrorTypeInvalid, ""})
}

func TestPodTemplateDefaults(t *testing.T) {
	s := newDefaultingScheme(t)
	list := &corev1.PodTemplateList{Items: []corev1.PodTemplate{{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Image: "nginx"}}}}}}}
	s.Default(list)
	if list.Items[0].Template.Spec.RestartPolicy != corev1.RestartPolicyAlways || list.Items[0].Template.Spec.DNSPolicy != corev1.DNSClusterFirst {
		t.Fatalf("template not defaulted: %+v", list.Items[0].Template.Spec)
	}
}
