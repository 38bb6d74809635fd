package serviceaccount

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/skiff-sh/skiff/internal/apiserver/admission"
	"github.com/skiff-sh/skiff/internal/registry"
)

// accountLookup serves ServiceAccounts by namespace/name.
type accountLookup map[string]*corev1.ServiceAccount

func (l accountLookup) Get(_ context.Context, group, resource, namespace, name string) (runtime.Object, error) {
	if sa, ok := l[namespace+"/"+name]; ok && group == "" && resource == "serviceaccounts" {
		return sa, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Group: group, Resource: resource}, name)
}

func (accountLookup) List(context.Context, string, string, string) (runtime.Object, error) {
	return &corev1.ServiceAccountList{}, nil
}

func TestServiceAccount(t *testing.T) {
	off, on := false, true
	lookup := accountLookup{
		"ns/quiet": {ObjectMeta: metav1.ObjectMeta{Name: "quiet", Namespace: "ns"}, AutomountServiceAccountToken: &off},
		"ns/bot":   {ObjectMeta: metav1.ObjectMeta{Name: "bot", Namespace: "ns"}},
	}
	pods := &registry.Resource{GroupVersion: schema.GroupVersion{Version: "v1"}, Plural: "pods", Namespaced: true}
	pod := func(f func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "init"}}, Containers: []corev1.Container{{Name: "app"}, {Name: "side"}},
		}}
		if f != nil {
			f(p)
		}
		return p
	}
	tests := []struct {
		name        string
		pod         *corev1.Pod
		subresource string
		wantAccount string
		// wantMounts are the containers (init ones first) that mount the token volume.
		wantMounts []string
	}{
		{name: "no account: default, token in every container", pod: pod(nil), wantAccount: "default", wantMounts: []string{"init", "app", "side"}},
		{name: "its account", pod: pod(func(p *corev1.Pod) { p.Spec.ServiceAccountName = "bot" }), wantAccount: "bot", wantMounts: []string{"init", "app", "side"}},
		{name: "the account turns automount off", pod: pod(func(p *corev1.Pod) { p.Spec.ServiceAccountName = "quiet" }), wantAccount: "quiet"},
		{name: "the pod's automount wins over the account's", pod: pod(func(p *corev1.Pod) {
			p.Spec.ServiceAccountName, p.Spec.AutomountServiceAccountToken = "quiet", &on
		}), wantAccount: "quiet", wantMounts: []string{"init", "app", "side"}},
		{name: "the pod turns automount off", pod: pod(func(p *corev1.Pod) { p.Spec.AutomountServiceAccountToken = &off }), wantAccount: "default"},
		{name: "a mirror pod gets no token", pod: pod(func(p *corev1.Pod) { p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x"} }), wantAccount: "default"},
		{name: "a container mounting the path already keeps its own", pod: pod(func(p *corev1.Pod) {
			p.Spec.Containers[1].VolumeMounts = []corev1.VolumeMount{{Name: "mine", MountPath: MountPath}}
		}), wantAccount: "default", wantMounts: []string{"init", "app"}},
		{name: "a pod with a kube-api-access volume is left as it is", pod: pod(func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "kube-api-access-given"}}
		}), wantAccount: "default"},
		{name: "not on a subresource", pod: pod(nil), subresource: "status"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := &admission.Attributes{Verb: "create", Resource: pods, Subresource: tt.subresource, Namespace: "ns", Name: "p", Object: tt.pod}
			if err := (Plugin{}).Admit(context.Background(), a, lookup); err != nil {
				t.Fatal(err)
			}
			spec := tt.pod.Spec
			if spec.ServiceAccountName != tt.wantAccount || spec.DeprecatedServiceAccount != tt.wantAccount {
				t.Errorf("serviceAccountName %q, serviceAccount %q, want %q", spec.ServiceAccountName, spec.DeprecatedServiceAccount, tt.wantAccount)
			}
			volume := tokenVolume(spec.Volumes)
			if (volume != "") != (len(tt.wantMounts) > 0) {
				t.Fatalf("token volume %q, want one %v", volume, len(tt.wantMounts) > 0)
			}
			var mounted []string
			for _, c := range append(append([]corev1.Container{}, spec.InitContainers...), spec.Containers...) {
				for _, m := range c.VolumeMounts {
					if volume != "" && m.Name == volume && m.MountPath == MountPath && m.ReadOnly {
						mounted = append(mounted, c.Name)
					}
				}
			}
			if strings.Join(mounted, ",") != strings.Join(tt.wantMounts, ",") {
				t.Errorf("containers mounting the token: %v, want %v", mounted, tt.wantMounts)
			}
		})
	}
}

// tokenVolume names the projected volume the plugin added (a token, the CA bundle and the
// namespace), or "".
func tokenVolume(volumes []corev1.Volume) string {
	for _, v := range volumes {
		p := v.Projected
		if !strings.HasPrefix(v.Name, "kube-api-access-") || p == nil || len(p.Sources) != 3 {
			continue
		}
		token, ca, namespace := p.Sources[0].ServiceAccountToken, p.Sources[1].ConfigMap, p.Sources[2].DownwardAPI
		if token != nil && token.Path == "token" && ca != nil && ca.Name == "kube-root-ca.crt" && namespace != nil {
			return v.Name
		}
	}
	return ""
}
