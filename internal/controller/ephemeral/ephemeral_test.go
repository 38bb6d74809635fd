package ephemeral

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/internal/controller/ctrltest"
)

func withEphemeral(pod *corev1.Pod, vol string) *corev1.Pod {
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: vol, VolumeSource: corev1.VolumeSource{
		Ephemeral: &corev1.EphemeralVolumeSource{VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}, Annotations: map[string]string{"note": "x"}},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				StorageClassName: ptr.To("csi-hostpath-sc"),
				Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Mi")}},
			},
		}},
	}})
	return pod
}

func claimOf(name string, owner *corev1.Pod) *corev1.PersistentVolumeClaim {
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}}
	if owner != nil {
		pvc.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: owner.Name, UID: owner.UID, Controller: ptr.To(true)}}
	}
	return pvc
}

func TestDecide(t *testing.T) {
	pod := withEphemeral(withEphemeral(ctrltest.MakePod("web").Obj(), "scratch"), "cache")
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}})
	deleting := ctrltest.MakePod("web").Deleting(ctrltest.Epoch()).Obj()
	withEphemeral(deleting, "scratch")
	tests := []struct {
		name      string
		pod       *corev1.Pod
		claims    []*corev1.PersistentVolumeClaim
		create    []string
		conflicts []string
	}{
		{"every ephemeral volume gets its claim", pod, nil, []string{"web-scratch", "web-cache"}, nil},
		{"a claim the pod owns is kept", pod, []*corev1.PersistentVolumeClaim{claimOf("web-scratch", pod)}, []string{"web-cache"}, nil},
		{"a claim the pod does not own is a conflict", pod, []*corev1.PersistentVolumeClaim{claimOf("web-scratch", nil)}, []string{"web-cache"}, []string{"scratch"}},
		{"a pod being deleted gets nothing", deleting, nil, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan := Decide(tt.pod, func(name string) *corev1.PersistentVolumeClaim {
				i := slices.IndexFunc(tt.claims, func(c *corev1.PersistentVolumeClaim) bool { return c.Name == name })
				if i < 0 {
					return nil
				}
				return tt.claims[i]
			})
			var created, conflicts []string
			for _, c := range plan.Create {
				created = append(created, c.Name)
				if !metav1.IsControlledBy(c, tt.pod) || !*c.OwnerReferences[0].BlockOwnerDeletion || c.Namespace != "default" {
					t.Errorf("claim %s owners %+v", c.Name, c.OwnerReferences)
				}
				if c.Labels["app"] != "web" || c.Annotations["note"] != "x" || *c.Spec.StorageClassName != "csi-hostpath-sc" || c.Spec.Resources.Requests.Storage().String() != "1Mi" {
					t.Errorf("claim %s not from its template: %+v", c.Name, c)
				}
			}
			for _, c := range plan.Conflicts {
				conflicts = append(conflicts, c.Volume)
			}
			if !slices.Equal(created, tt.create) || !slices.Equal(conflicts, tt.conflicts) {
				t.Fatalf("created %q conflicts %q, want %q %q", created, conflicts, tt.create, tt.conflicts)
			}
		})
	}
}

func TestSync(t *testing.T) {
	pod := withEphemeral(ctrltest.MakePod("web").Obj(), "scratch")
	foreign := claimOf("web-cache", nil)
	withEphemeral(pod, "cache")
	env := ctrltest.NewEnv(pod, foreign)
	c, err := New(env.Deps)
	if err != nil {
		t.Fatal(err)
	}
	ctrltest.Seed(t, env.Factory.Core().V1().Pods().Informer(), pod)
	ctrltest.Seed(t, env.Factory.Core().V1().PersistentVolumeClaims().Informer(), foreign)
	err = c.Sync(context.Background(), "default/web")
	if err == nil || !strings.Contains(err.Error(), "was not created for pod default/web") {
		t.Fatalf("conflict not reported: %v", err)
	}
	writes := env.Writes()
	if got := ctrltest.Describe(writes); !slices.Equal(got, []string{"create persistentvolumeclaims web-scratch"}) {
		t.Fatalf("writes %q", got)
	}
	if obj := writes[0].(clienttesting.CreateAction).GetObject().(*corev1.PersistentVolumeClaim); !metav1.IsControlledBy(obj, pod) {
		t.Fatalf("created claim not owned: %+v", obj.OwnerReferences)
	}
	events := env.Events()
	if len(events) != 1 || !strings.HasPrefix(events[0], "Warning FailedBinding ephemeral volume cache: PVC default/web-cache was not created") {
		t.Fatalf("events %q", events)
	}
	// The pod is gone: nothing to do.
	env = ctrltest.NewEnv([]runtime.Object{}...)
	c, _ = New(env.Deps)
	if err := c.Sync(context.Background(), "default/web"); err != nil || len(env.Writes()) != 0 {
		t.Fatalf("gone pod: %v", err)
	}
}
