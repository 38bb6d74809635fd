package ctrlutil

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"sort"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
)

// RevisionHashLabel ties pods and ControllerRevisions to a template version.
const RevisionHashLabel = appsv1.ControllerRevisionHashLabelKey

// TemplateHash identifies a pod template version (plus a collision count).
func TemplateHash(t *corev1.PodTemplateSpec, collisionCount *int32) string {
	h := fnv.New32a()
	data, _ := json.Marshal(t) // a PodTemplateSpec always marshals
	h.Write(data)
	if collisionCount != nil {
		h.Write([]byte(strconv.Itoa(int(*collisionCount))))
	}
	return rand.SafeEncodeString(strconv.FormatUint(uint64(h.Sum32()), 10))
}

// RevisionData is what a ControllerRevision of a DaemonSet or StatefulSet
// stores: the strategic-merge patch `kubectl rollout undo` applies.
func RevisionData(t *corev1.PodTemplateSpec) ([]byte, error) {
	raw, err := json.Marshal(t)
	if err != nil {
		return nil, fmt.Errorf("encode template: %w", err)
	}
	var tmpl map[string]any
	if err := json.Unmarshal(raw, &tmpl); err != nil {
		return nil, fmt.Errorf("decode template: %w", err)
	}
	// Written as the v1.33 controllers wrote it: clients compare a revision's bytes with the patch
	// they compute from the owner (the conformance DaemonSet specs' daemon.Match does), and
	// apimachinery before v0.34 encodes a zero creationTimestamp as null where v0.37 omits it.
	if md, ok := tmpl["metadata"].(map[string]any); ok {
		if _, set := md["creationTimestamp"]; !set {
			md["creationTimestamp"] = nil
		}
	}
	tmpl["$patch"] = "replace"
	return json.Marshal(map[string]any{"spec": map[string]any{"template": tmpl}})
}

// TemplateFromRevision reads the pod template back out of a ControllerRevision.
func TemplateFromRevision(cr *appsv1.ControllerRevision) (*corev1.PodTemplateSpec, error) {
	var data struct {
		Spec struct {
			Template corev1.PodTemplateSpec `json:"template"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(cr.Data.Raw, &data); err != nil {
		return nil, fmt.Errorf("decode controllerrevision %s: %w", cr.Name, err)
	}
	return &data.Spec.Template, nil
}

// Revisions is the outcome of SyncRevisions.
type Revisions struct {
	Update *appsv1.ControllerRevision   // holds the owner's current template
	Owned  []*appsv1.ControllerRevision // all of the owner's revisions, oldest first
}

// ByHash finds an owned revision by its hash label.
func (r Revisions) ByHash(hash string) *appsv1.ControllerRevision {
	for _, cr := range r.Owned {
		if cr.Labels[RevisionHashLabel] == hash {
			return cr
		}
	}
	return nil
}

// SyncRevisions makes sure a ControllerRevision named <owner>-<hash> holds
// template (an existing one with the same hash, e.g. after a rollback, gets
// the highest revision number), and deletes the oldest ones beyond
// historyLimit, sparing those listed in keep.
func SyncRevisions(ctx context.Context, client kubernetes.Interface, lister appslisters.ControllerRevisionLister,
	owner metav1.Object, gvk schema.GroupVersionKind, template *corev1.PodTemplateSpec, collisionCount *int32,
	historyLimit int, keep ...string) (Revisions, error) {
	hash := TemplateHash(template, collisionCount)
	all, err := lister.ControllerRevisions(owner.GetNamespace()).List(labels.Everything())
	if err != nil {
		return Revisions{}, fmt.Errorf("list controllerrevisions: %w", err)
	}
	var owned []*appsv1.ControllerRevision
	var maxRevision int64
	for _, cr := range all {
		if ref := metav1.GetControllerOf(cr); ref != nil && ref.UID == owner.GetUID() {
			owned = append(owned, cr)
			maxRevision = max(maxRevision, cr.Revision)
		}
	}
	var update *appsv1.ControllerRevision
	for _, cr := range owned {
		if cr.Labels[RevisionHashLabel] != hash {
			continue
		}
		update = cr
		if cr.Revision < maxRevision {
			cp := cr.DeepCopy()
			cp.Revision = maxRevision + 1
			if update, err = client.AppsV1().ControllerRevisions(cp.Namespace).Update(ctx, cp, metav1.UpdateOptions{}); err != nil {
				return Revisions{}, fmt.Errorf("bump controllerrevision %s/%s: %w", cp.Namespace, cp.Name, err)
			}
		}
		break
	}
	if update == nil {
		data, err := RevisionData(template)
		if err != nil {
			return Revisions{}, err
		}
		lbls := maps.Clone(template.Labels)
		if lbls == nil {
			lbls = map[string]string{}
		}
		lbls[RevisionHashLabel] = hash
		cr := &appsv1.ControllerRevision{
			ObjectMeta: metav1.ObjectMeta{
				Name: owner.GetName() + "-" + hash, Namespace: owner.GetNamespace(), Labels: lbls,
				OwnerReferences: []metav1.OwnerReference{*NewControllerRef(owner, gvk)},
			},
			Data:     runtime.RawExtension{Raw: data},
			Revision: maxRevision + 1,
		}
		created, err := client.AppsV1().ControllerRevisions(owner.GetNamespace()).Create(ctx, cr, metav1.CreateOptions{})
		switch {
		case apierrors.IsAlreadyExists(err):
			created = cr
		case err != nil:
			return Revisions{}, fmt.Errorf("create controllerrevision for %s/%s: %w", owner.GetNamespace(), owner.GetName(), err)
		}
		update = created
		owned = append(owned, created)
	}
	sort.SliceStable(owned, func(i, j int) bool { return owned[i].Revision < owned[j].Revision })

	spared := map[string]bool{hash: true}
	for _, k := range keep {
		spared[k] = true
	}
	var old []*appsv1.ControllerRevision
	for _, cr := range owned {
		if !spared[cr.Labels[RevisionHashLabel]] {
			old = append(old, cr)
		}
	}
	var errs []error
	if len(old) > historyLimit {
		for _, cr := range old[:len(old)-historyLimit] {
			if err := client.AppsV1().ControllerRevisions(cr.Namespace).Delete(ctx, cr.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("delete controllerrevision %s/%s: %w", cr.Namespace, cr.Name, err))
			}
		}
	}
	return Revisions{Update: update, Owned: owned}, errors.Join(errs...)
}
