package apps

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/internal/registry"
	vu "github.com/skiff-sh/skiff/internal/registry/validationutil"
)

// testPod stands in for the core group's pod rules: it defaults restartPolicy and rejects
// containers without an image, so tests can see the hooks are called with the template's path.
var testPod = vu.PodTemplate{
	Default: func(t *corev1.PodTemplateSpec) {
		if t.Spec.RestartPolicy == "" {
			t.Spec.RestartPolicy = corev1.RestartPolicyAlways
		}
	},
	Validate: func(t *corev1.PodTemplateSpec, p *field.Path) field.ErrorList {
		var errs field.ErrorList
		for i, c := range t.Spec.Containers {
			if c.Image == "" {
				errs = append(errs, field.Required(p.Child("spec", "containers").Index(i).Child("image"), ""))
			}
		}
		return errs
	},
}

func template(labels map[string]string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
	}
}

var appLabels = map[string]string{"app": "web"}

func deployment(mods ...func(*appsv1.Deployment)) *appsv1.Deployment {
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: appLabels},
			Template: template(appLabels),
		},
	}
	DefaultDeployment(d, testPod)
	for _, m := range mods {
		m(d)
	}
	return d
}

func statefulSet(mods ...func(*appsv1.StatefulSet)) *appsv1.StatefulSet {
	ss := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "default"},
		Spec: appsv1.StatefulSetSpec{
			ServiceName: "db",
			Selector:    &metav1.LabelSelector{MatchLabels: appLabels},
			Template:    template(appLabels),
		},
	}
	DefaultStatefulSet(ss, testPod)
	for _, m := range mods {
		m(ss)
	}
	return ss
}

func daemonSet(mods ...func(*appsv1.DaemonSet)) *appsv1.DaemonSet {
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "default"},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: appLabels},
			Template: template(appLabels),
		},
	}
	DefaultDaemonSet(ds, testPod)
	for _, m := range mods {
		m(ds)
	}
	return ds
}

func replicaSet(mods ...func(*appsv1.ReplicaSet)) *appsv1.ReplicaSet {
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "default"},
		Spec: appsv1.ReplicaSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: appLabels},
			Template: template(appLabels),
		},
	}
	DefaultReplicaSet(rs, testPod)
	for _, m := range mods {
		m(rs)
	}
	return rs
}

func resource(t *testing.T, plural string) *registry.Resource {
	t.Helper()
	for _, r := range ResourcesWith(testPod) {
		if r.Plural == plural {
			return r
		}
	}
	t.Fatalf("no resource %q", plural)
	return nil
}

// wantErr describes one expected field error; an empty want means the object is valid.
type wantErr struct {
	field  string
	typ    field.ErrorType
	detail string // substring of the detail, optional
}

func checkErrs(t *testing.T, errs field.ErrorList, want *wantErr) {
	t.Helper()
	if want == nil {
		if len(errs) != 0 {
			t.Fatalf("want valid, got %v", errs)
		}
		return
	}
	for _, e := range errs {
		if e.Field == want.field && e.Type == want.typ && strings.Contains(e.Detail, want.detail) {
			return
		}
	}
	t.Fatalf("want %s %s %q, got %v", want.field, want.typ, want.detail, errs)
}

func TestDeploymentDefaults(t *testing.T) {
	d := deployment()
	if *d.Spec.Replicas != 1 || *d.Spec.RevisionHistoryLimit != 10 || *d.Spec.ProgressDeadlineSeconds != 600 {
		t.Fatalf("replicas/revisionHistoryLimit/progressDeadlineSeconds = %d/%d/%d", *d.Spec.Replicas, *d.Spec.RevisionHistoryLimit, *d.Spec.ProgressDeadlineSeconds)
	}
	ru := d.Spec.Strategy.RollingUpdate
	if d.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType || ru.MaxSurge.String() != "25%" || ru.MaxUnavailable.String() != "25%" {
		t.Fatalf("strategy = %+v", d.Spec.Strategy)
	}
	if d.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		t.Fatalf("pod template defaults not applied")
	}
	recreate := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}, Replicas: ptr.To[int32](3)}}
	DefaultDeployment(recreate, vu.PodTemplate{})
	if recreate.Spec.Strategy.RollingUpdate != nil || *recreate.Spec.Replicas != 3 {
		t.Fatalf("recreate defaults = %+v", recreate.Spec)
	}
}

func TestDefaultsThroughScheme(t *testing.T) {
	s := runtime.NewScheme()
	if err := appsv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := RegisterDefaultsWith(s, testPod); err != nil {
		t.Fatal(err)
	}
	list := &appsv1.StatefulSetList{Items: []appsv1.StatefulSet{{}}}
	s.Default(list)
	ss := list.Items[0]
	if ss.Spec.PodManagementPolicy != appsv1.OrderedReadyPodManagement || *ss.Spec.UpdateStrategy.RollingUpdate.Partition != 0 ||
		ss.Spec.PersistentVolumeClaimRetentionPolicy.WhenDeleted != appsv1.RetainPersistentVolumeClaimRetentionPolicyType ||
		ss.Spec.PersistentVolumeClaimRetentionPolicy.WhenScaled != appsv1.RetainPersistentVolumeClaimRetentionPolicyType ||
		*ss.Spec.Replicas != 1 || *ss.Spec.RevisionHistoryLimit != 10 || ss.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		t.Fatalf("statefulset defaults = %+v", ss.Spec)
	}
	ds := &appsv1.DaemonSet{}
	s.Default(ds)
	if ds.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable.IntValue() != 1 || ds.Spec.UpdateStrategy.RollingUpdate.MaxSurge.IntValue() != 0 || *ds.Spec.RevisionHistoryLimit != 10 {
		t.Fatalf("daemonset defaults = %+v", ds.Spec)
	}
	rs := &appsv1.ReplicaSet{}
	s.Default(rs)
	if *rs.Spec.Replicas != 1 {
		t.Fatalf("replicaset replicas = %d", *rs.Spec.Replicas)
	}
	if err := RegisterDefaultsWith(nil, testPod); err == nil {
		t.Fatal("nil scheme accepted")
	}
}

func TestStatefulSetClaimTemplateDefaults(t *testing.T) {
	ss := statefulSet(func(ss *appsv1.StatefulSet) {
		ss.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}}}
	})
	DefaultStatefulSet(ss, testPod)
	c := ss.Spec.VolumeClaimTemplates[0]
	if *c.Spec.VolumeMode != corev1.PersistentVolumeFilesystem || c.Status.Phase != corev1.ClaimPending {
		t.Fatalf("claim template = %+v", c)
	}
	if ss.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable.IntValue() != 1 {
		t.Fatalf("maxUnavailable = %v", ss.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable)
	}
	onDelete := &appsv1.StatefulSet{Spec: appsv1.StatefulSetSpec{UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}}}
	DefaultStatefulSet(onDelete, vu.PodTemplate{})
	if onDelete.Spec.UpdateStrategy.RollingUpdate != nil {
		t.Fatal("OnDelete got a rollingUpdate")
	}
}

func TestValidateDeployment(t *testing.T) {
	tests := []struct {
		name string
		obj  *appsv1.Deployment
		want *wantErr
	}{
		{"valid", deployment(), nil},
		{"bad name", deployment(func(d *appsv1.Deployment) { d.Name = "Web_1" }), &wantErr{"metadata.name", field.ErrorTypeInvalid, "RFC 1123"}},
		{"no namespace", deployment(func(d *appsv1.Deployment) { d.Namespace = "" }), &wantErr{"metadata.namespace", field.ErrorTypeRequired, ""}},
		{"negative replicas", deployment(func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To[int32](-1) }), &wantErr{"spec.replicas", field.ErrorTypeInvalid, "must be greater than or equal to 0"}},
		{"no selector", deployment(func(d *appsv1.Deployment) { d.Spec.Selector = nil }), &wantErr{"spec.selector", field.ErrorTypeRequired, ""}},
		{"empty selector", deployment(func(d *appsv1.Deployment) { d.Spec.Selector = &metav1.LabelSelector{} }), &wantErr{"spec.selector", field.ErrorTypeInvalid, "empty selector is invalid for deployment"}},
		{"selector mismatch", deployment(func(d *appsv1.Deployment) { d.Spec.Template.Labels = map[string]string{"app": "other"} }), &wantErr{"spec.template.metadata.labels", field.ErrorTypeInvalid, "`selector` does not match template `labels`"}},
		{"bad selector operator", deployment(func(d *appsv1.Deployment) {
			d.Spec.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Near"}}
		}), &wantErr{"spec.selector.matchExpressions[0].operator", field.ErrorTypeInvalid, "not a valid selector operator"}},
		{"restartPolicy Never", deployment(func(d *appsv1.Deployment) { d.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever }), &wantErr{"spec.template.spec.restartPolicy", field.ErrorTypeNotSupported, `"Always"`}},
		{"activeDeadlineSeconds", deployment(func(d *appsv1.Deployment) { d.Spec.Template.Spec.ActiveDeadlineSeconds = ptr.To[int64](5) }), &wantErr{"spec.template.spec.activeDeadlineSeconds", field.ErrorTypeForbidden, "activeDeadlineSeconds in Deployment is not Supported"}},
		{"pod hook", deployment(func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "" }), &wantErr{"spec.template.spec.containers[0].image", field.ErrorTypeRequired, ""}},
		{"both zero", deployment(func(d *appsv1.Deployment) {
			d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxSurge: ptr.To(intstr.FromInt32(0)), MaxUnavailable: ptr.To(intstr.FromString("0%"))}
		}), &wantErr{"spec.strategy.rollingUpdate.maxUnavailable", field.ErrorTypeInvalid, "may not be 0 when `maxSurge` is 0"}},
		{"over 100%", deployment(func(d *appsv1.Deployment) {
			d.Spec.Strategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromString("101%"))
		}), &wantErr{"spec.strategy.rollingUpdate.maxUnavailable", field.ErrorTypeInvalid, "must not be greater than 100%"}},
		{"bad percent", deployment(func(d *appsv1.Deployment) { d.Spec.Strategy.RollingUpdate.MaxSurge = ptr.To(intstr.FromString("ten")) }), &wantErr{"spec.strategy.rollingUpdate.maxSurge", field.ErrorTypeInvalid, ""}},
		{"negative surge", deployment(func(d *appsv1.Deployment) { d.Spec.Strategy.RollingUpdate.MaxSurge = ptr.To(intstr.FromInt32(-1)) }), &wantErr{"spec.strategy.rollingUpdate.maxSurge", field.ErrorTypeInvalid, "must be greater than or equal to 0"}},
		{"recreate with rollingUpdate", deployment(func(d *appsv1.Deployment) { d.Spec.Strategy.Type = appsv1.RecreateDeploymentStrategyType }), &wantErr{"spec.strategy.rollingUpdate", field.ErrorTypeForbidden, "may not be specified when strategy `type` is 'Recreate'"}},
		{"unknown strategy", deployment(func(d *appsv1.Deployment) { d.Spec.Strategy.Type = "Blue" }), &wantErr{"spec.strategy.type", field.ErrorTypeNotSupported, ""}},
		{"progress deadline <= minReady", deployment(func(d *appsv1.Deployment) { d.Spec.MinReadySeconds = 600 }), &wantErr{"spec.progressDeadlineSeconds", field.ErrorTypeInvalid, "must be greater than minReadySeconds"}},
		{"negative history", deployment(func(d *appsv1.Deployment) { d.Spec.RevisionHistoryLimit = ptr.To[int32](-2) }), &wantErr{"spec.revisionHistoryLimit", field.ErrorTypeInvalid, ""}},
	}
	s := resource(t, "deployments").Strategy
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkErrs(t, s.Validate(context.Background(), tt.obj), tt.want)
		})
	}
}

func TestDeploymentUpdate(t *testing.T) {
	ctx := context.Background()
	r := resource(t, "deployments")
	old := deployment(func(d *appsv1.Deployment) {
		d.ResourceVersion = "5"
		d.Generation = 3
		d.Status.Replicas = 1
	})
	// Changing only labels keeps the generation; a status in the request is ignored.
	relabel := old.DeepCopy()
	relabel.Labels = map[string]string{"x": "y"}
	relabel.Status.Replicas = 9
	r.Strategy.PrepareForUpdate(ctx, relabel, old)
	if relabel.Generation != 3 || relabel.Status.Replicas != 1 {
		t.Fatalf("generation %d status %d", relabel.Generation, relabel.Status.Replicas)
	}
	annotated := old.DeepCopy()
	annotated.Annotations = map[string]string{"team": "web"}
	r.Strategy.PrepareForUpdate(ctx, annotated, old)
	if annotated.Generation != 4 {
		t.Fatalf("generation after annotation change = %d", annotated.Generation)
	}
	scaled := old.DeepCopy()
	scaled.Spec.Replicas = ptr.To[int32](4)
	r.Strategy.PrepareForUpdate(ctx, scaled, old)
	if scaled.Generation != 4 {
		t.Fatalf("generation after spec change = %d", scaled.Generation)
	}
	checkErrs(t, r.Strategy.ValidateUpdate(ctx, scaled, old), nil)

	moved := old.DeepCopy()
	moved.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web", "tier": "front"}}
	moved.Spec.Template.Labels = map[string]string{"app": "web", "tier": "front"}
	checkErrs(t, r.Strategy.ValidateUpdate(ctx, moved, old), &wantErr{"spec.selector", field.ErrorTypeInvalid, "field is immutable"})

	created := deployment(func(d *appsv1.Deployment) { d.Status.Replicas = 7; d.Generation = 9 })
	r.Strategy.PrepareForCreate(ctx, created)
	if created.Generation != 1 || created.Status.Replicas != 0 {
		t.Fatalf("create: generation %d status %+v", created.Generation, created.Status)
	}
}

func TestDeploymentStatus(t *testing.T) {
	ctx := context.Background()
	r := resource(t, "deployments")
	old := deployment(func(d *appsv1.Deployment) {
		d.ResourceVersion = "5"
		d.Generation = 2
		d.Labels = map[string]string{"a": "b"}
	})
	upd := old.DeepCopy()
	upd.Spec.Replicas = ptr.To[int32](50)
	upd.Labels = nil
	upd.Status = appsv1.DeploymentStatus{Replicas: 1, ReadyReplicas: 1, AvailableReplicas: 1, ObservedGeneration: 2}
	r.Status.PrepareForUpdate(ctx, upd, old)
	if *upd.Spec.Replicas != 1 || upd.Labels["a"] != "b" || upd.Status.Replicas != 1 {
		t.Fatalf("status update changed spec or metadata: %+v %v", upd.Spec.Replicas, upd.Labels)
	}
	checkErrs(t, r.Status.ValidateUpdate(ctx, upd, old), nil)

	tests := []struct {
		name   string
		status appsv1.DeploymentStatus
		want   *wantErr
	}{
		{"negative", appsv1.DeploymentStatus{Replicas: -1}, &wantErr{"status.replicas", field.ErrorTypeInvalid, "must be greater than or equal to 0"}},
		{"ready above replicas", appsv1.DeploymentStatus{Replicas: 1, ReadyReplicas: 2}, &wantErr{"status.readyReplicas", field.ErrorTypeInvalid, "cannot be greater than status.replicas"}},
		{"available above ready", appsv1.DeploymentStatus{Replicas: 2, ReadyReplicas: 1, AvailableReplicas: 2}, &wantErr{"status.availableReplicas", field.ErrorTypeInvalid, "cannot be greater than readyReplicas"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bad := old.DeepCopy()
			bad.Status = tt.status
			checkErrs(t, r.Status.ValidateUpdate(ctx, bad, old), tt.want)
		})
	}
	withCollisions := old.DeepCopy()
	withCollisions.Status.CollisionCount = ptr.To[int32](3)
	lower := withCollisions.DeepCopy()
	lower.Status.CollisionCount = ptr.To[int32](2)
	checkErrs(t, r.Status.ValidateUpdate(ctx, lower, withCollisions), &wantErr{"status.collisionCount", field.ErrorTypeInvalid, "cannot be decremented"})
}

func TestScale(t *testing.T) {
	for _, plural := range []string{"deployments", "replicasets", "statefulsets"} {
		t.Run(plural, func(t *testing.T) {
			r := resource(t, plural)
			if r.Scale == nil {
				t.Fatal("no scale accessor")
			}
			obj := r.New()
			switch o := obj.(type) {
			case *appsv1.Deployment:
				*o = *deployment(func(d *appsv1.Deployment) { d.Status.Replicas = 2 })
			case *appsv1.ReplicaSet:
				*o = *replicaSet(func(rs *appsv1.ReplicaSet) { rs.Status.Replicas = 2 })
			case *appsv1.StatefulSet:
				*o = *statefulSet(func(ss *appsv1.StatefulSet) { ss.Status.Replicas = 2 })
			}
			sc, err := r.Scale.Get(obj)
			if err != nil {
				t.Fatal(err)
			}
			if sc.Spec.Replicas != 1 || sc.Status.Replicas != 2 || sc.Status.Selector != "app=web" || sc.Namespace != "default" {
				t.Fatalf("scale = %+v", sc)
			}
			if err := r.Scale.SetReplicas(obj, 5); err != nil {
				t.Fatal(err)
			}
			if sc, _ := r.Scale.Get(obj); sc.Spec.Replicas != 5 {
				t.Fatalf("replicas after set = %d", sc.Spec.Replicas)
			}
			if _, err := r.Scale.Get(&appsv1.DaemonSet{}); err == nil {
				t.Fatal("wrong type accepted")
			}
		})
	}
}

func TestValidateStatefulSet(t *testing.T) {
	tests := []struct {
		name string
		obj  *appsv1.StatefulSet
		want *wantErr
	}{
		{"valid", statefulSet(), nil},
		{"bad policy", statefulSet(func(ss *appsv1.StatefulSet) { ss.Spec.PodManagementPolicy = "Random" }), &wantErr{"spec.podManagementPolicy", field.ErrorTypeInvalid, "must be 'OrderedReady' or 'Parallel'"}},
		{"bad strategy", statefulSet(func(ss *appsv1.StatefulSet) { ss.Spec.UpdateStrategy.Type = "Swap" }), &wantErr{"spec.updateStrategy", field.ErrorTypeInvalid, "must be 'RollingUpdate' or 'OnDelete'"}},
		{"OnDelete with rollingUpdate", statefulSet(func(ss *appsv1.StatefulSet) { ss.Spec.UpdateStrategy.Type = appsv1.OnDeleteStatefulSetStrategyType }), &wantErr{"spec.updateStrategy.rollingUpdate", field.ErrorTypeInvalid, "only allowed for updateStrategy 'RollingUpdate'"}},
		{"negative partition", statefulSet(func(ss *appsv1.StatefulSet) { ss.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To[int32](-1) }), &wantErr{"spec.updateStrategy.rollingUpdate.partition", field.ErrorTypeInvalid, ""}},
		{"zero maxUnavailable", statefulSet(func(ss *appsv1.StatefulSet) {
			ss.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromInt32(0))
		}), &wantErr{"spec.updateStrategy.rollingUpdate.maxUnavailable", field.ErrorTypeInvalid, "cannot be 0"}},
		{"bad retention", statefulSet(func(ss *appsv1.StatefulSet) { ss.Spec.PersistentVolumeClaimRetentionPolicy.WhenScaled = "Keep" }), &wantErr{"spec.persistentVolumeClaimRetentionPolicy.whenScaled", field.ErrorTypeNotSupported, ""}},
		{"selector mismatch", statefulSet(func(ss *appsv1.StatefulSet) { ss.Spec.Template.Labels = nil }), &wantErr{"spec.template.metadata.labels", field.ErrorTypeInvalid, "`selector` does not match template `labels`"}},
		{"empty selector", statefulSet(func(ss *appsv1.StatefulSet) { ss.Spec.Selector = &metav1.LabelSelector{} }), &wantErr{"spec.selector", field.ErrorTypeInvalid, "empty selector is invalid for statefulset"}},
		{"restart never", statefulSet(func(ss *appsv1.StatefulSet) { ss.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever }), &wantErr{"spec.template.spec.restartPolicy", field.ErrorTypeNotSupported, ""}},
	}
	s := resource(t, "statefulsets").Strategy
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkErrs(t, s.Validate(context.Background(), tt.obj), tt.want)
		})
	}
}

func TestStatefulSetUpdate(t *testing.T) {
	ctx := context.Background()
	s := resource(t, "statefulsets").Strategy
	old := statefulSet(func(ss *appsv1.StatefulSet) { ss.ResourceVersion = "1" })
	scaled := old.DeepCopy()
	scaled.Spec.Replicas = ptr.To[int32](3)
	scaled.Spec.Template.Spec.Containers[0].Image = "nginx:2"
	checkErrs(t, s.ValidateUpdate(ctx, scaled, old), nil)
	renamed := old.DeepCopy()
	renamed.Spec.ServiceName = "other"
	checkErrs(t, s.ValidateUpdate(ctx, renamed, old), &wantErr{"spec", field.ErrorTypeForbidden, "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden"})
}

func TestValidateDaemonSet(t *testing.T) {
	tests := []struct {
		name string
		obj  *appsv1.DaemonSet
		want *wantErr
	}{
		{"valid", daemonSet(), nil},
		{"surge instead", daemonSet(func(ds *appsv1.DaemonSet) {
			ds.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateDaemonSet{MaxUnavailable: ptr.To(intstr.FromInt32(0)), MaxSurge: ptr.To(intstr.FromString("10%"))}
		}), nil},
		{"both set", daemonSet(func(ds *appsv1.DaemonSet) {
			ds.Spec.UpdateStrategy.RollingUpdate.MaxSurge = ptr.To(intstr.FromInt32(1))
		}), &wantErr{"spec.updateStrategy.rollingUpdate.maxSurge", field.ErrorTypeInvalid, "may not be set when maxUnavailable is non-zero"}},
		{"both zero", daemonSet(func(ds *appsv1.DaemonSet) {
			ds.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromInt32(0))
		}), &wantErr{"spec.updateStrategy.rollingUpdate.maxUnavailable", field.ErrorTypeRequired, "cannot be 0 when maxSurge is 0"}},
		{"no rollingUpdate", daemonSet(func(ds *appsv1.DaemonSet) { ds.Spec.UpdateStrategy.RollingUpdate = nil }), &wantErr{"spec.updateStrategy.rollingUpdate", field.ErrorTypeRequired, ""}},
		{"bad type", daemonSet(func(ds *appsv1.DaemonSet) { ds.Spec.UpdateStrategy.Type = "Now" }), &wantErr{"spec.updateStrategy.type", field.ErrorTypeNotSupported, ""}},
		{"deadline", daemonSet(func(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.ActiveDeadlineSeconds = ptr.To[int64](1) }), &wantErr{"spec.template.spec.activeDeadlineSeconds", field.ErrorTypeForbidden, "activeDeadlineSeconds in DaemonSet is not Supported"}},
	}
	s := resource(t, "daemonsets").Strategy
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkErrs(t, s.Validate(context.Background(), tt.obj), tt.want)
		})
	}
}

func TestValidateReplicaSet(t *testing.T) {
	s := resource(t, "replicasets").Strategy
	checkErrs(t, s.Validate(context.Background(), replicaSet()), nil)
	checkErrs(t, s.Validate(context.Background(), replicaSet(func(rs *appsv1.ReplicaSet) { rs.Spec.Selector = nil })), &wantErr{"spec.selector", field.ErrorTypeRequired, ""})
	st := resource(t, "replicasets").Status
	old := replicaSet()
	bad := old.DeepCopy()
	bad.Status = appsv1.ReplicaSetStatus{Replicas: 1, FullyLabeledReplicas: 2}
	checkErrs(t, st.ValidateUpdate(context.Background(), bad, old), &wantErr{"status.fullyLabeledReplicas", field.ErrorTypeInvalid, "cannot be greater than the number of replicas"})
}

func TestControllerRevision(t *testing.T) {
	ctx := context.Background()
	s := resource(t, "controllerrevisions").Strategy
	cr := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "web-abc", Namespace: "default", ResourceVersion: "1"}, Data: runtime.RawExtension{Raw: []byte(`{"a":1}`)}, Revision: 1}
	checkErrs(t, s.Validate(ctx, cr), nil)
	noData := cr.DeepCopy()
	noData.Data = runtime.RawExtension{}
	checkErrs(t, s.Validate(ctx, noData), &wantErr{"data", field.ErrorTypeRequired, ""})
	changed := cr.DeepCopy()
	changed.Data.Raw = []byte(`{"a":2}`)
	checkErrs(t, s.ValidateUpdate(ctx, changed, cr), &wantErr{"data", field.ErrorTypeInvalid, "field is immutable"})
	checkErrs(t, s.Validate(ctx, deployment()), &wantErr{"<nil>", field.ErrorTypeInternal, "expected"})
}

func TestResourceDescriptions(t *testing.T) {
	want := map[string]struct {
		short  string
		status bool
		scale  bool
	}{
		"deployments":         {"deploy", true, true},
		"replicasets":         {"rs", true, true},
		"statefulsets":        {"sts", true, true},
		"daemonsets":          {"ds", true, false},
		"controllerrevisions": {"", false, false},
	}
	for _, r := range ResourcesWith(testPod) {
		w, ok := want[r.Plural]
		if !ok {
			t.Fatalf("unexpected resource %s", r.Plural)
		}
		if (w.short != "") != (len(r.ShortNames) == 1 && r.ShortNames[0] == w.short) && w.short != "" {
			t.Errorf("%s short names %v", r.Plural, r.ShortNames)
		}
		if (r.Status != nil) != w.status || (r.Scale != nil) != w.scale || !r.Namespaced || r.Strategy == nil {
			t.Errorf("%s: status %v scale %v namespaced %v", r.Plural, r.Status != nil, r.Scale != nil, r.Namespaced)
		}
		if w.short != "" && (len(r.Categories) != 1 || r.Categories[0] != "all") {
			t.Errorf("%s categories %v", r.Plural, r.Categories)
		}
		if r.New().GetObjectKind() == nil || r.NewList() == nil {
			t.Errorf("%s constructors", r.Plural)
		}
	}
}

func TestDaemonSetTemplateGeneration(t *testing.T) {
	ctx := context.Background()
	s := resource(t, "daemonsets").Strategy
	ds := daemonSet()
	s.PrepareForCreate(ctx, ds)
	if ds.Annotations[templateGenerationAnnotation] != "1" || ds.Generation != 1 {
		t.Fatalf("create: annotations %v generation %d", ds.Annotations, ds.Generation)
	}
	ds.ResourceVersion = "1"
	relabeled := ds.DeepCopy()
	relabeled.Labels = map[string]string{"a": "b"}
	s.PrepareForUpdate(ctx, relabeled, ds)
	if relabeled.Annotations[templateGenerationAnnotation] != "1" {
		t.Fatalf("metadata change bumped template generation: %v", relabeled.Annotations)
	}
	// A client that drops the annotation gets it back.
	newImage := ds.DeepCopy()
	newImage.Annotations = nil
	newImage.Spec.Template.Spec.Containers[0].Image = "nginx:2"
	s.PrepareForUpdate(ctx, newImage, ds)
	if newImage.Annotations[templateGenerationAnnotation] != "2" || newImage.Generation != 2 {
		t.Fatalf("template change: annotations %v generation %d", newImage.Annotations, newImage.Generation)
	}
}
