package serviceaccount

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"

	"github.com/skiff-sh/skiff/internal/apiserver/admission"
)

// Name is Kubernetes' name of the plugin.
const Name = "ServiceAccount"

// MountPath is where pods find their token, CA bundle and namespace.
const MountPath = "/var/run/secrets/kubernetes.io/serviceaccount"

// Plugin gives pods without a service account the namespace's "default" one, and mounts its token.
type Plugin struct{}

func (Plugin) Name() string { return Name }

func (Plugin) Admit(ctx context.Context, a *admission.Attributes, lookup admission.Lookup) error {
	pod, ok := a.PodCreate()
	if !ok {
		return nil
	}
	if pod.Spec.ServiceAccountName == "" {
		pod.Spec.ServiceAccountName = "default"
	}
	if pod.Spec.DeprecatedServiceAccount == "" {
		pod.Spec.DeprecatedServiceAccount = pod.Spec.ServiceAccountName
	}
	if _, mirror := pod.Annotations[corev1.MirrorPodAnnotationKey]; mirror {
		return nil
	}
	automount := pod.Spec.AutomountServiceAccountToken == nil || *pod.Spec.AutomountServiceAccountToken
	if pod.Spec.AutomountServiceAccountToken == nil {
		if obj, err := lookup.Get(ctx, "", "serviceaccounts", a.Namespace, pod.Spec.ServiceAccountName); err == nil {
			if sa, ok := obj.(*corev1.ServiceAccount); ok && sa.AutomountServiceAccountToken != nil {
				automount = *sa.AutomountServiceAccountToken
			}
		}
	}
	if automount {
		mountToken(pod)
	}
	return nil
}

func (Plugin) Validate(context.Context, *admission.Attributes, admission.Lookup) error { return nil }

// mountToken adds the projected kube-api-access volume (a bound token the kubelet refreshes, the
// cluster CA bundle and the namespace) and mounts it in every container that does not already
// mount something there, as Kubernetes' ServiceAccount admission does.
func mountToken(pod *corev1.Pod) {
	for _, v := range pod.Spec.Volumes {
		if strings.HasPrefix(v.Name, "kube-api-access-") {
			return
		}
	}
	name := "kube-api-access-" + utilrand.String(5)
	expiration := int64(3607)
	mode := int32(0o644)
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		DefaultMode: &mode,
		Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{ExpirationSeconds: &expiration, Path: "token"}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}, Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
		},
	}}})
	mount := func(containers []corev1.Container) {
		for i := range containers {
			c := &containers[i]
			has := false
			for _, m := range c.VolumeMounts {
				has = has || m.MountPath == MountPath
			}
			if !has {
				c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: name, ReadOnly: true, MountPath: MountPath})
			}
		}
	}
	mount(pod.Spec.InitContainers)
	mount(pod.Spec.Containers)
}
