package core

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var webLabels = map[string]string{"app": "web"}

// makeRC returns a defaulted, valid ReplicationController after mods.
func makeRC(mods ...func(*corev1.ReplicationController)) *corev1.ReplicationController {
	pod := makePod("unused").obj()
	rc := &corev1.ReplicationController{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", ResourceVersion: "1"},
		Spec: corev1.ReplicationControllerSpec{
			Template: &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: webLabels}, Spec: pod.Spec},
		},
	}
	DefaultReplicationController(rc)
	for _, m := range mods {
		m(rc)
	}
	return rc
}

func TestReplicationControllerDefaults(t *testing.T) {
	s := newDefaultingScheme(t)
	rc := &corev1.ReplicationController{Spec: corev1.ReplicationControllerSpec{Template: &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: webLabels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Image: "nginx"}}},
	}}}
	s.Default(rc)
	if rc.Spec.Replicas == nil || *rc.Spec.Replicas != 1 {
		t.Errorf("replicas = %v, want 1", rc.Spec.Replicas)
	}
	if rc.Spec.Selector["app"] != "web" || rc.Labels["app"] != "web" {
		t.Errorf("selector %v and labels %v not taken from the template", rc.Spec.Selector, rc.Labels)
	}
	if rc.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		t.Errorf("template not defaulted: %+v", rc.Spec.Template.Spec)
	}
	// A selector or labels the client gave are kept.
	own := &corev1.ReplicationController{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"tier": "x"}},
		Spec: corev1.ReplicationControllerSpec{Selector: map[string]string{"app": "web"}, Template: &corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web", "v": "2"}},
		}},
	}
	s.Default(own)
	if len(own.Spec.Selector) != 1 || own.Labels["tier"] != "x" || len(own.Labels) != 1 {
		t.Errorf("given selector %v or labels %v changed", own.Spec.Selector, own.Labels)
	}
}

func TestValidateReplicationController(t *testing.T) {
	ctx := context.Background()
	r := resourceByPlural(t, "replicationcontrollers")
	requireNoErrors(t, r.Strategy.Validate(ctx, makeRC()))
	tests := []struct {
		name string
		obj  *corev1.ReplicationController
		want wantErr
	}{
		{"no selector", makeRC(func(rc *corev1.ReplicationController) { rc.Spec.Selector = nil }), wantErr{"spec.selector", field.ErrorTypeRequired, ""}},
		{"selector does not match", makeRC(func(rc *corev1.ReplicationController) { rc.Spec.Selector = map[string]string{"app": "db"} }),
			wantErr{"spec.template.metadata.labels", field.ErrorTypeInvalid, "`selector` does not match template `labels`"}},
		{"negative replicas", makeRC(func(rc *corev1.ReplicationController) { rc.Spec.Replicas = ptrTo[int32](-1) }), wantErr{"spec.replicas", field.ErrorTypeInvalid, "must be greater than or equal to 0"}},
		{"negative minReadySeconds", makeRC(func(rc *corev1.ReplicationController) { rc.Spec.MinReadySeconds = -1 }), wantErr{"spec.minReadySeconds", field.ErrorTypeInvalid, ""}},
		{"no template", makeRC(func(rc *corev1.ReplicationController) { rc.Spec.Template = nil }), wantErr{"spec.template", field.ErrorTypeRequired, ""}},
		{"restartPolicy Never", makeRC(func(rc *corev1.ReplicationController) {
			rc.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
		}),
			wantErr{"spec.template.spec.restartPolicy", field.ErrorTypeNotSupported, ""}},
		{"activeDeadlineSeconds", makeRC(func(rc *corev1.ReplicationController) { rc.Spec.Template.Spec.ActiveDeadlineSeconds = ptrTo[int64](5) }),
			wantErr{"spec.template.spec.activeDeadlineSeconds", field.ErrorTypeForbidden, "activeDeadlineSeconds in ReplicationController is not Supported"}},
		{"no image", makeRC(func(rc *corev1.ReplicationController) { rc.Spec.Template.Spec.Containers[0].Image = "" }), wantErr{"spec.template.spec.containers[0].image", field.ErrorTypeRequired, ""}},
		{"bad name", makeRC(func(rc *corev1.ReplicationController) { rc.Name = "Web" }), wantErr{"metadata.name", field.ErrorTypeInvalid, ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			requireError(t, r.Strategy.Validate(ctx, tt.obj), tt.want)
		})
	}
}

func TestReplicationControllerUpdateAndStatus(t *testing.T) {
	ctx := context.Background()
	r := resourceByPlural(t, "replicationcontrollers")
	created := makeRC(func(rc *corev1.ReplicationController) { rc.Status.Replicas = 5 })
	r.Strategy.PrepareForCreate(ctx, created)
	if created.Generation != 1 || created.Status.Replicas != 0 {
		t.Fatalf("after create: generation %d, status %+v", created.Generation, created.Status)
	}
	// The selector of an RC may change (unlike a ReplicaSet's), and the status is kept.
	upd := created.DeepCopy()
	upd.Spec.Selector = map[string]string{}
	upd.Spec.Template.Labels = map[string]string{"app": "web2"}
	upd.Spec.Selector["app"] = "web2"
	upd.Status.Replicas = 3
	r.Strategy.PrepareForUpdate(ctx, upd, created)
	if upd.Generation != 2 || upd.Status.Replicas != 0 {
		t.Fatalf("after update: generation %d, status %+v", upd.Generation, upd.Status)
	}
	requireNoErrors(t, r.Strategy.ValidateUpdate(ctx, upd, created))

	// /status changes only the status and checks its counters.
	st := created.DeepCopy()
	st.Spec.Replicas = ptrTo[int32](9)
	st.Status = corev1.ReplicationControllerStatus{Replicas: 2, ReadyReplicas: 2, AvailableReplicas: 1, FullyLabeledReplicas: 2}
	r.Status.PrepareForUpdate(ctx, st, created)
	if *st.Spec.Replicas != *created.Spec.Replicas || st.Status.Replicas != 2 {
		t.Fatalf("status update kept spec %v, status %+v", *st.Spec.Replicas, st.Status)
	}
	requireNoErrors(t, r.Status.ValidateUpdate(ctx, st, created))
	bad := st.DeepCopy()
	bad.Status.ReadyReplicas = 3
	requireError(t, r.Status.ValidateUpdate(ctx, bad, created), wantErr{"status.readyReplicas", field.ErrorTypeInvalid, "cannot be greater than the number of replicas"})
	bad = st.DeepCopy()
	bad.Status.AvailableReplicas = 2
	bad.Status.ReadyReplicas = 1
	requireError(t, r.Status.ValidateUpdate(ctx, bad, created), wantErr{"status.availableReplicas", field.ErrorTypeInvalid, "cannot be greater than readyReplicas"})

	// /scale reads and writes spec.replicas; the selector is the map's string form.
	scale, err := r.Scale.Get(created)
	if err != nil {
		t.Fatal(err)
	}
	if scale.Spec.Replicas != 1 || scale.Status.Selector != "app=web" {
		t.Fatalf("scale = %+v", scale)
	}
	if err := r.Scale.SetReplicas(created, 4); err != nil || *created.Spec.Replicas != 4 {
		t.Fatalf("set replicas: %v, %v", err, *created.Spec.Replicas)
	}
}
