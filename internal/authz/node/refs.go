package node

import corev1 "k8s.io/api/core/v1"

// References are the objects a pod needs its kubelet to read.
type References struct {
	Secrets, ConfigMaps, PVCs []string
	ServiceAccount            string
}

// PodReferences lists what a pod references: image pull secrets, volume sources (secret,
// configMap, projected, claims, CSI and flex secret refs), env and envFrom, in every container kind.
func PodReferences(pod *corev1.Pod) References {
	var r References
	r.ServiceAccount = pod.Spec.ServiceAccountName
	if r.ServiceAccount == "" {
		r.ServiceAccount = "default"
	}
	for _, s := range pod.Spec.ImagePullSecrets {
		r.Secrets = append(r.Secrets, s.Name)
	}
	for _, v := range pod.Spec.Volumes {
		switch {
		case v.Secret != nil:
			r.Secrets = append(r.Secrets, v.Secret.SecretName)
		case v.ConfigMap != nil:
			r.ConfigMaps = append(r.ConfigMaps, v.ConfigMap.Name)
		case v.PersistentVolumeClaim != nil:
			r.PVCs = append(r.PVCs, v.PersistentVolumeClaim.ClaimName)
		case v.Ephemeral != nil:
			// The ephemeral volume controller names the claim <pod>-<volume>.
			r.PVCs = append(r.PVCs, pod.Name+"-"+v.Name)
		case v.Projected != nil:
			for _, src := range v.Projected.Sources {
				if src.Secret != nil {
					r.Secrets = append(r.Secrets, src.Secret.Name)
				}
				if src.ConfigMap != nil {
					r.ConfigMaps = append(r.ConfigMaps, src.ConfigMap.Name)
				}
			}
		case v.CSI != nil && v.CSI.NodePublishSecretRef != nil:
			r.Secrets = append(r.Secrets, v.CSI.NodePublishSecretRef.Name)
		case v.FlexVolume != nil && v.FlexVolume.SecretRef != nil:
			r.Secrets = append(r.Secrets, v.FlexVolume.SecretRef.Name)
		}
	}
	env := func(c []corev1.EnvVar, from []corev1.EnvFromSource) {
		for _, e := range c {
			if e.ValueFrom == nil {
				continue
			}
			if e.ValueFrom.SecretKeyRef != nil {
				r.Secrets = append(r.Secrets, e.ValueFrom.SecretKeyRef.Name)
			}
			if e.ValueFrom.ConfigMapKeyRef != nil {
				r.ConfigMaps = append(r.ConfigMaps, e.ValueFrom.ConfigMapKeyRef.Name)
			}
		}
		for _, f := range from {
			if f.SecretRef != nil {
				r.Secrets = append(r.Secrets, f.SecretRef.Name)
			}
			if f.ConfigMapRef != nil {
				r.ConfigMaps = append(r.ConfigMaps, f.ConfigMapRef.Name)
			}
		}
	}
	for _, c := range pod.Spec.InitContainers {
		env(c.Env, c.EnvFrom)
	}
	for _, c := range pod.Spec.Containers {
		env(c.Env, c.EnvFrom)
	}
	for _, c := range pod.Spec.EphemeralContainers {
		env(c.Env, c.EnvFrom)
	}
	return r
}
