package statefulset

import (
	"context"
	"errors"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/internal/controller/ctrlutil"
)

var podKind = corev1.SchemeGroupVersion.WithKind("Pod")

// ClaimOwnerRefs is the ownerReferences a claim of pod should carry under the set's
// persistentVolumeClaimRetentionPolicy, as upstream's StatefulSet controller keeps them, and
// whether the claim must be written:
//
//	WhenScaled Retain, WhenDeleted Retain: no reference to the set or the pod
//	WhenScaled Retain, WhenDeleted Delete: the set as controller (the garbage collector deletes
//	  the claim with the set)
//	WhenScaled Delete: the pod as controller once its ordinal is scaled away (the claim goes
//	  with the pod), and with WhenDeleted Delete the set while it is not
//
// Other owners are kept. A claim is left alone when it names a previous set or pod of the same
// name (another UID: an earlier incarnation manages it), and the set adds no controller where
// another controller owns the claim (it only drops its own references then).
func ClaimOwnerRefs(claim *corev1.PersistentVolumeClaim, set *appsv1.StatefulSet, pod *corev1.Pod) ([]metav1.OwnerReference, bool) {
	refs := claim.OwnerReferences
	if staleRef(refs, set, controllerKind()) || staleRef(refs, pod, podKind) {
		return refs, false
	}
	ours := func(r metav1.OwnerReference) bool {
		return (r.UID == set.UID && set.UID != "") || (r.UID == pod.UID && pod.UID != "")
	}
	foreignController := slices.ContainsFunc(refs, func(r metav1.OwnerReference) bool {
		return ptr.Deref(r.Controller, false) && !ours(r)
	})
	want := slices.DeleteFunc(slices.Clone(refs), ours)
	if !foreignController {
		policy := retentionPolicy(set)
		const del = appsv1.DeletePersistentVolumeClaimRetentionPolicyType
		ord, _ := ordinalOf(set, pod)
		scaledDown := ord < startOrdinal(set) || ord >= startOrdinal(set)+int(ptr.Deref(set.Spec.Replicas, 1))
		if policy.WhenScaled == del && scaledDown && pod.UID != "" {
			want = append(want, *ctrlutil.NewControllerRef(pod, podKind))
		}
		if policy.WhenDeleted == del && !(policy.WhenScaled == del && scaledDown) {
			want = append(want, *ctrlutil.NewControllerRef(set, controllerKind()))
		}
	}
	return want, !sameRefs(refs, want)
}

// retentionPolicy is the set's policy with Retain for what is unset.
func retentionPolicy(set *appsv1.StatefulSet) appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy {
	p := appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
		WhenDeleted: appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
		WhenScaled:  appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
	}
	if s := set.Spec.PersistentVolumeClaimRetentionPolicy; s != nil {
		if s.WhenDeleted != "" {
			p.WhenDeleted = s.WhenDeleted
		}
		if s.WhenScaled != "" {
			p.WhenScaled = s.WhenScaled
		}
	}
	return p
}

// staleRef reports whether refs name obj's kind and name with another UID.
func staleRef(refs []metav1.OwnerReference, obj metav1.Object, gvk schema.GroupVersionKind) bool {
	if obj.GetUID() == "" {
		return false
	}
	for _, r := range refs {
		if r.APIVersion == gvk.GroupVersion().String() && r.Kind == gvk.Kind && r.Name == obj.GetName() {
			return r.UID != obj.GetUID()
		}
	}
	return false
}

// sameRefs compares two lists of references as sets (by UID and controller flag), so a list
// only reordered is not rewritten.
func sameRefs(a, b []metav1.OwnerReference) bool {
	if len(a) != len(b) {
		return false
	}
	key := func(r metav1.OwnerReference) string {
		return fmt.Sprintf("%s/%v/%v", r.UID, ptr.Deref(r.Controller, false), ptr.Deref(r.BlockOwnerDeletion, false))
	}
	seen := map[string]int{}
	for _, r := range a {
		seen[key(r)]++
	}
	for _, r := range b {
		if seen[key(r)] == 0 {
			return false
		}
		seen[key(r)]--
	}
	return true
}

// syncClaimOwners brings the ownerReferences of the existing claims of pods in line with
// ClaimOwnerRefs. It runs before any pod is deleted, so a claim of a scaled-down ordinal is
// owned by its pod by the time the pod goes.
func (c *Controller) syncClaimOwners(ctx context.Context, set *appsv1.StatefulSet, pods []*corev1.Pod) error {
	var errs []error
	for _, pod := range pods {
		ord, _ := ordinalOf(set, pod)
		for _, tmpl := range set.Spec.VolumeClaimTemplates {
			claim, err := c.pvcLister.PersistentVolumeClaims(set.Namespace).Get(ClaimName(set, tmpl.Name, ord))
			if err != nil {
				continue // not created yet (or gone): nothing to own
			}
			refs, update := ClaimOwnerRefs(claim, set, pod)
			if !update {
				continue
			}
			claim = claim.DeepCopy()
			claim.OwnerReferences = refs
			if _, err := c.client.CoreV1().PersistentVolumeClaims(claim.Namespace).Update(ctx, claim, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("update owners of claim %s/%s: %w", claim.Namespace, claim.Name, err))
			}
		}
	}
	return errors.Join(errs...)
}

// newPodStub is what ClaimOwnerRefs needs of a pod about to be created: its name (its ordinal);
// no UID yet, so no reference to it.
func newPodStub(set *appsv1.StatefulSet, ord int) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: PodName(set, ord), Namespace: set.Namespace}}
}
