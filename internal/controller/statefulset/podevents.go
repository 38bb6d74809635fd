package statefulset

import (
	"reflect"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	"github.com/skiff-sh/skiff/internal/controller/ctrlutil"
)

// SetsForPodEvent is the keys of the StatefulSets (of sets, the pod's namespace's) a pod event must
// sync, as upstream's pod handlers decide: old is nil on an add, cur nil on a delete. A pod with a
// controllerRef syncs its set only (and, when the reference changed, the set it had before, which
// may need to recreate the ordinal); an orphan, when it appears or its labels or reference change,
// syncs every set that could adopt it (selector matches, named like one of the set's ordinals), so
// a pod orphaned or relabelled is adopted without waiting for another event of the set.
func SetsForPodEvent(old, cur *corev1.Pod, sets []*appsv1.StatefulSet) []string {
	if cur == nil {
		if old == nil {
			return nil
		}
		return ownerKeys(old, sets)
	}
	if old == nil {
		if metav1.GetControllerOfNoCopy(cur) != nil || cur.DeletionTimestamp != nil {
			return ownerKeys(cur, sets)
		}
		return adopterKeys(cur, sets)
	}
	if old.ResourceVersion == cur.ResourceVersion {
		return nil // a resync: nothing changed
	}
	oldRef, curRef := metav1.GetControllerOfNoCopy(old), metav1.GetControllerOfNoCopy(cur)
	refChanged := !reflect.DeepEqual(oldRef, curRef)
	var keys []string
	if refChanged && oldRef != nil {
		keys = append(keys, ownerKeys(old, sets)...)
	}
	switch {
	case curRef != nil:
		keys = append(keys, ownerKeys(cur, sets)...)
	case refChanged || !reflect.DeepEqual(old.Labels, cur.Labels):
		keys = append(keys, adopterKeys(cur, sets)...)
	}
	return dedupe(keys)
}

// ownerKeys is the key of the pod's controller when it is one of sets (same name and UID).
func ownerKeys(pod *corev1.Pod, sets []*appsv1.StatefulSet) []string {
	ref := metav1.GetControllerOfNoCopy(pod)
	if ref == nil || ref.Kind != controllerKind().Kind || ref.APIVersion != controllerKind().GroupVersion().String() {
		return nil
	}
	for _, s := range sets {
		if s.Name == ref.Name && s.UID == ref.UID {
			return []string{s.Namespace + "/" + s.Name}
		}
	}
	return nil
}

// adopterKeys is the keys of the sets that would adopt the orphan pod (ctrlutil.DecideClaim's
// Adopt, and claimPods' naming rule).
func adopterKeys(pod *corev1.Pod, sets []*appsv1.StatefulSet) []string {
	if pod.DeletionTimestamp != nil {
		return nil
	}
	var keys []string
	for _, s := range sets {
		if _, ok := ordinalOf(s, pod); !ok || s.DeletionTimestamp != nil {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(s.Spec.Selector)
		if err != nil || sel.Empty() || !sel.Matches(labels.Set(pod.Labels)) {
			continue
		}
		keys = append(keys, s.Namespace+"/"+s.Name)
	}
	return keys
}

func dedupe(keys []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, k := range keys {
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}

// podHandlers carry SetsForPodEvent out: the sets of the pod's namespace from the cache, each key
// queued.
func (c *Controller) podHandlers() cache.ResourceEventHandlerFuncs {
	enqueue := func(old, cur *corev1.Pod) {
		ns := cur
		if ns == nil {
			ns = old
		}
		sets, err := c.setLister.StatefulSets(ns.Namespace).List(labels.Everything())
		if err != nil {
			return // the cache lists without error; nothing to queue otherwise
		}
		for _, key := range SetsForPodEvent(old, cur, sets) {
			c.loop.Queue.Add(key)
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if pod, ok := obj.(*corev1.Pod); ok {
				enqueue(nil, pod)
			}
		},
		UpdateFunc: func(oldObj, obj any) {
			old, ok1 := oldObj.(*corev1.Pod)
			pod, ok2 := obj.(*corev1.Pod)
			if ok1 && ok2 {
				enqueue(old, pod)
			}
		},
		DeleteFunc: func(obj any) {
			if pod, ok := ctrlutil.Unwrap[*corev1.Pod](obj); ok {
				enqueue(pod, nil)
			}
		},
	}
}
