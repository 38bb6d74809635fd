package ctrlutil

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// NewControllerRef is the ownerReference a controller sets on what it creates
// or adopts: controller=true and blockOwnerDeletion=true, so foreground
// deletion of the owner waits for the dependant.
func NewControllerRef(owner metav1.Object, gvk schema.GroupVersionKind) *metav1.OwnerReference {
	yes := true
	return &metav1.OwnerReference{
		APIVersion:         gvk.GroupVersion().String(),
		Kind:               gvk.Kind,
		Name:               owner.GetName(),
		UID:                owner.GetUID(),
		Controller:         &yes,
		BlockOwnerDeletion: &yes,
	}
}

// Patcher applies a patch to one dependant; a controller passes a closure
// over the typed client of the dependant's resource.
type Patcher func(ctx context.Context, name string, pt types.PatchType, data []byte) error

// ClaimDecision says what a controller should do with one candidate dependant.
type ClaimDecision int

const (
	// Ignore: owned by someone else, or not matching and not ours.
	Ignore ClaimDecision = iota
	// Keep: ours and matching.
	Keep
	// Adopt: orphan that matches the selector; set our controllerRef.
	Adopt
	// Release: ours but no longer matching; drop our ownerReference.
	Release
)

// DecideClaim classifies obj for the owner with the given UID and selector.
// An owner being deleted adopts nothing (it would only orphan again).
func DecideClaim(obj metav1.Object, ownerUID types.UID, selector labels.Selector, ownerDeleting bool) ClaimDecision {
	// GetControllerOfNoCopy: this runs for every object a controller lists on every sync, and the
	// reference is only read here.
	ref := metav1.GetControllerOfNoCopy(obj)
	if ref != nil && ref.UID != ownerUID {
		return Ignore
	}
	matches := selector.Matches(labels.Set(obj.GetLabels()))
	if ref != nil {
		if matches {
			return Keep
		}
		if ownerDeleting {
			return Keep
		}
		return Release
	}
	if !matches || ownerDeleting || obj.GetDeletionTimestamp() != nil {
		return Ignore
	}
	return Adopt
}

// AdoptPatch is the strategic-merge patch that adds ref to obj's ownerReferences;
// the uid precondition keeps us from adopting a recreated namesake.
func AdoptPatch(obj metav1.Object, ref *metav1.OwnerReference) ([]byte, error) {
	patch := map[string]any{
		"metadata": map[string]any{
			"ownerReferences": []any{ref},
			"uid":             obj.GetUID(),
		},
	}
	data, err := json.Marshal(patch)
	if err != nil {
		return nil, fmt.Errorf("adopt patch for %s: %w", obj.GetName(), err)
	}
	return data, nil
}

// ReleasePatch is the strategic-merge patch removing the ownerReference with ownerUID.
func ReleasePatch(obj metav1.Object, ownerUID types.UID) ([]byte, error) {
	patch := map[string]any{
		"metadata": map[string]any{
			"ownerReferences": []any{map[string]any{"$patch": "delete", "uid": ownerUID}},
			"uid":             obj.GetUID(),
		},
	}
	data, err := json.Marshal(patch)
	if err != nil {
		return nil, fmt.Errorf("release patch for %s: %w", obj.GetName(), err)
	}
	return data, nil
}

// ClaimPod carries out an Adopt or Release decision for one pod with a strategic merge patch
// (adopting under ref, releasing from ref's owner) and reports whether the pod belongs to the owner
// afterwards. A pod deleted meanwhile is not an error. Keep and Ignore need no write.
func ClaimPod(ctx context.Context, client kubernetes.Interface, pod *corev1.Pod, decision ClaimDecision, ref *metav1.OwnerReference) (bool, error) {
	var patch []byte
	var err error
	switch decision {
	case Keep:
		return true, nil
	case Adopt:
		patch, err = AdoptPatch(pod, ref)
	case Release:
		patch, err = ReleasePatch(pod, ref.UID)
	default:
		return false, nil
	}
	if err == nil {
		_, err = client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	}
	switch {
	case err == nil:
		return decision == Adopt, nil
	case apierrors.IsNotFound(err):
		return false, nil
	case decision == Adopt:
		return false, fmt.Errorf("adopt pod %s/%s: %w", pod.Namespace, pod.Name, err)
	default:
		return false, fmt.Errorf("release pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
}
