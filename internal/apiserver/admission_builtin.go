package apiserver

import (
	"context"
	"fmt"
	"strings"

	utilrand "k8s.io/apimachinery/pkg/util/rand"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// DefaultAdmission is the built-in admission chain, in Kubernetes' order.
func DefaultAdmission() []AdmissionPlugin {
	return DefaultAdmissionTolerating(DefaultTolerationSecondsValue, DefaultTolerationSecondsValue)
}

// DefaultTolerationSecondsValue is kube-apiserver's default of --default-not-ready-toleration-seconds
// and --default-unreachable-toleration-seconds.
const DefaultTolerationSecondsValue = 300

// DefaultAdmissionTolerating is the built-in chain with DefaultTolerationSeconds adding the given
// tolerations (kube-apiserver's --default-not-ready-toleration-seconds and
// --default-unreachable-toleration-seconds).
func DefaultAdmissionTolerating(notReadySeconds, unreachableSeconds int64) []AdmissionPlugin {
	return []AdmissionPlugin{NamespaceLifecycle{}, ServiceAccountDefault{}, DefaultTolerationSeconds{NotReady: notReadySeconds, Unreachable: unreachableSeconds},
		Priority{}, RuntimeClass{}, DefaultStorageClass{}}
}

func isPodCreate(a *AdmissionAttributes) (*corev1.Pod, bool) {
	if a.Verb != "create" || a.Subresource != "" || a.Resource.GroupResource() != (schema.GroupResource{Resource: "pods"}) {
		return nil, false
	}
	pod, ok := a.Object.(*corev1.Pod)
	return pod, ok
}

// NamespaceLifecycle refuses new objects in a namespace that does not exist or is being terminated.
type NamespaceLifecycle struct{}

func (NamespaceLifecycle) Name() string { return "NamespaceLifecycle" }

func (NamespaceLifecycle) Admit(context.Context, *AdmissionAttributes, Lookup) error { return nil }

func (NamespaceLifecycle) Validate(ctx context.Context, a *AdmissionAttributes, lookup Lookup) error {
	if a.Verb != "create" || !a.Resource.Namespaced || a.Namespace == "" {
		return nil
	}
	obj, err := lookup.Get(ctx, "", "namespaces", "", a.Namespace)
	if err != nil {
		return err
	}
	ns, ok := obj.(*corev1.Namespace)
	if !ok || ns.Status.Phase != corev1.NamespaceTerminating {
		return nil
	}
	// Events about a terminating namespace's last objects are still welcome.
	if a.Resource.Plural == "events" {
		return nil
	}
	forbidden := apierrors.NewForbidden(a.Resource.GroupResource(), a.Name,
		fmt.Errorf("unable to create new content in namespace %s because it is being terminated", a.Namespace))
	forbidden.ErrStatus.Details.Causes = append(forbidden.ErrStatus.Details.Causes, metav1.StatusCause{
		Type: corev1.NamespaceTerminatingCause, Message: fmt.Sprintf("namespace %s is being terminated", a.Namespace), Field: "metadata.namespace",
	})
	return forbidden
}

// ServiceAccountDefault gives pods without a service account the namespace's "default" one.
type ServiceAccountDefault struct{}

func (ServiceAccountDefault) Name() string { return "ServiceAccount" }

func (ServiceAccountDefault) Admit(ctx context.Context, a *AdmissionAttributes, lookup Lookup) error {
	pod, ok := isPodCreate(a)
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
		mountServiceAccountToken(pod)
	}
	return nil
}

// ServiceAccountMountPath is where pods find their token, CA bundle and namespace.
const ServiceAccountMountPath = "/var/run/secrets/kubernetes.io/serviceaccount"

// mountServiceAccountToken adds the projected kube-api-access volume (a bound token the kubelet
// refreshes, the cluster CA bundle and the namespace) and mounts it in every container that does
// not already mount something there, as Kubernetes' ServiceAccount admission does.
func mountServiceAccountToken(pod *corev1.Pod) {
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
				has = has || m.MountPath == ServiceAccountMountPath
			}
			if !has {
				c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: name, ReadOnly: true, MountPath: ServiceAccountMountPath})
			}
		}
	}
	mount(pod.Spec.InitContainers)
	mount(pod.Spec.Containers)
}

func (ServiceAccountDefault) Validate(context.Context, *AdmissionAttributes, Lookup) error {
	return nil
}

// DefaultTolerationSeconds lets pods ride out a short node outage: NoExecute tolerations for the
// not-ready taint (for NotReady seconds) and the unreachable one (Unreachable seconds), unless the
// pod already has its own.
type DefaultTolerationSeconds struct{ NotReady, Unreachable int64 }

func (DefaultTolerationSeconds) Name() string { return "DefaultTolerationSeconds" }

func (d DefaultTolerationSeconds) Admit(_ context.Context, a *AdmissionAttributes, _ Lookup) error {
	pod, ok := isPodCreate(a)
	if !ok {
		return nil
	}
	for _, def := range []struct {
		key  string
		secs int64
	}{{corev1.TaintNodeNotReady, d.NotReady}, {corev1.TaintNodeUnreachable, d.Unreachable}} {
		key, secs := def.key, def.secs
		tolerated := false
		for _, t := range pod.Spec.Tolerations {
			if (t.Key == key || t.Key == "") && (t.Effect == corev1.TaintEffectNoExecute || t.Effect == "") {
				tolerated = true
				break
			}
		}
		if !tolerated {
			pod.Spec.Tolerations = append(pod.Spec.Tolerations, corev1.Toleration{
				Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &secs,
			})
		}
	}
	return nil
}

func (DefaultTolerationSeconds) Validate(context.Context, *AdmissionAttributes, Lookup) error {
	return nil
}

// Priority resolves a pod's priorityClassName into spec.priority and spec.preemptionPolicy.
type Priority struct{}

func (Priority) Name() string { return "Priority" }

func (Priority) Admit(ctx context.Context, a *AdmissionAttributes, lookup Lookup) error {
	pod, ok := isPodCreate(a)
	if !ok {
		return nil
	}
	forbidden := func(msg string) error {
		return apierrors.NewForbidden(a.Resource.GroupResource(), a.Name, fmt.Errorf("%s", msg))
	}
	var value int32
	var policy *corev1.PreemptionPolicy
	if pod.Spec.PriorityClassName == "" {
		list, err := lookup.List(ctx, "scheduling.k8s.io", "priorityclasses", "")
		if err == nil {
			if pcs, ok := list.(*schedulingv1.PriorityClassList); ok {
				for i := range pcs.Items {
					if pcs.Items[i].GlobalDefault {
						pod.Spec.PriorityClassName = pcs.Items[i].Name
						value, policy = pcs.Items[i].Value, pcs.Items[i].PreemptionPolicy
						break
					}
				}
			}
		}
	} else {
		obj, err := lookup.Get(ctx, "scheduling.k8s.io", "priorityclasses", "", pod.Spec.PriorityClassName)
		if apierrors.IsNotFound(err) {
			return forbidden(fmt.Sprintf("no PriorityClass with name %s was found", pod.Spec.PriorityClassName))
		}
		if err != nil {
			return err
		}
		pc := obj.(*schedulingv1.PriorityClass)
		value, policy = pc.Value, pc.PreemptionPolicy
	}
	if pod.Spec.Priority != nil && *pod.Spec.Priority != value {
		return forbidden(fmt.Sprintf("the integer value of priority (%d) must not be provided in pod spec; priority admission controller computed %d from the given PriorityClass name", *pod.Spec.Priority, value))
	}
	pod.Spec.Priority = &value
	if policy != nil {
		if pod.Spec.PreemptionPolicy != nil && *pod.Spec.PreemptionPolicy != *policy {
			return forbidden(fmt.Sprintf("the string value of PreemptionPolicy (%s) must not be provided in pod spec; priority admission controller computed %s from the given PriorityClass name", *pod.Spec.PreemptionPolicy, *policy))
		}
		pod.Spec.PreemptionPolicy = policy
	} else if pod.Spec.PreemptionPolicy == nil {
		p := corev1.PreemptLowerPriority
		pod.Spec.PreemptionPolicy = &p
	}
	return nil
}

func (Priority) Validate(context.Context, *AdmissionAttributes, Lookup) error { return nil }

// DefaultStorageClass gives a claim created without spec.storageClassName the cluster's default
// StorageClass, as Kubernetes' admission plugin of that name does. An explicit "" asks for no class
// and is left alone. With several defaults the newest wins (then the first by name), as upstream.
type DefaultStorageClass struct{}

func (DefaultStorageClass) Name() string { return "DefaultStorageClass" }

func (DefaultStorageClass) Admit(ctx context.Context, a *AdmissionAttributes, lookup Lookup) error {
	if a.Verb != "create" || a.Subresource != "" || a.Resource.GroupResource() != (schema.GroupResource{Resource: "persistentvolumeclaims"}) {
		return nil
	}
	pvc, ok := a.Object.(*corev1.PersistentVolumeClaim)
	if !ok || pvc.Spec.StorageClassName != nil {
		return nil
	}
	list, err := lookup.List(ctx, "storage.k8s.io", "storageclasses", "")
	if apierrors.IsNotFound(err) {
		// StorageClasses are not served (a server built without storage.k8s.io): no default.
		return nil
	}
	if err != nil {
		return apierrors.NewInternalError(fmt.Errorf("list storage classes: %w", err))
	}
	classes, ok := list.(*storagev1.StorageClassList)
	if !ok {
		return nil
	}
	if def := DefaultClass(classes.Items); def != nil {
		name := def.Name
		pvc.Spec.StorageClassName = &name
	}
	return nil
}

func (DefaultStorageClass) Validate(context.Context, *AdmissionAttributes, Lookup) error { return nil }

// DefaultClass picks the default among classes: those annotated
// storageclass.kubernetes.io/is-default-class (or the beta key) "true", newest first, then by name.
func DefaultClass(classes []storagev1.StorageClass) *storagev1.StorageClass {
	var best *storagev1.StorageClass
	for i := range classes {
		sc := &classes[i]
		if sc.Annotations["storageclass.kubernetes.io/is-default-class"] != "true" && sc.Annotations["storageclass.beta.kubernetes.io/is-default-class"] != "true" {
			continue
		}
		switch {
		case best == nil, sc.CreationTimestamp.After(best.CreationTimestamp.Time):
			best = sc
		case sc.CreationTimestamp.Equal(&best.CreationTimestamp) && sc.Name < best.Name:
			best = sc
		}
	}
	return best
}
