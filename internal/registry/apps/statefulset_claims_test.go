package apps

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	vu "github.com/skiff-sh/skiff/internal/registry/validationutil"
)

// mountChecker validates only that every volume mount names a volume of the template, as the
// pod validation the server wires in does.
var mountChecker = vu.PodTemplate{Validate: func(t *corev1.PodTemplateSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, c := range t.Spec.Containers {
		for j, m := range c.VolumeMounts {
			found := false
			for _, v := range t.Spec.Volumes {
				found = found || v.Name == m.Name
			}
			if !found {
				errs = append(errs, field.NotFound(p.Child("spec", "containers").Index(i).Child("volumeMounts").Index(j).Child("name"), m.Name))
			}
		}
	}
	return errs
}}

func TestStatefulSetMountsOfClaimTemplates(t *testing.T) {
	mounting := func(name string) func(*appsv1.StatefulSet) {
		return func(ss *appsv1.StatefulSet) {
			ss.Spec.Template.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: name, MountPath: "/data"}}
			ss.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}}}
		}
	}
	tests := []struct {
		name string
		obj  *appsv1.StatefulSet
		want *wantErr
	}{
		{"mount of a claim template", statefulSet(mounting("data")), nil},
		{"mount of nothing", statefulSet(mounting("missing")), &wantErr{"spec.template.spec.containers[0].volumeMounts[0].name", field.ErrorTypeNotFound, ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := tt.obj.DeepCopy()
			checkErrs(t, ValidateStatefulSet(tt.obj, mountChecker), tt.want)
			if len(tt.obj.Spec.Template.Spec.Volumes) != len(before.Spec.Template.Spec.Volumes) {
				t.Fatal("validation changed the stored template's volumes")
			}
		})
	}
}
