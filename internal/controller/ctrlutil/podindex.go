package ctrlutil

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

// podControllerIndex indexes pods by namespace and controller UID ("<namespace>/<uid>"), orphans
// (no controller) under "<namespace>/".
const podControllerIndex = "skiff.sh/pod-controller"

// controllerKey is a pod's key in podControllerIndex.
func controllerKey(namespace string, controller types.UID) string {
	return namespace + "/" + string(controller)
}

func indexPodByController(obj any) ([]string, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, nil
	}
	var uid types.UID
	if ref := metav1.GetControllerOfNoCopy(p); ref != nil {
		uid = ref.UID
	}
	return []string{controllerKey(p.Namespace, uid)}, nil
}

// IndexPodsByController adds the controller index to a pod informer once, before it starts (the
// ReplicaSet and ReplicationController controllers share the informer and both ask).
func IndexPodsByController(inf cache.SharedIndexInformer) error {
	if _, ok := inf.GetIndexer().GetIndexers()[podControllerIndex]; ok {
		return nil
	}
	if err := inf.AddIndexers(cache.Indexers{podControllerIndex: indexPodByController}); err != nil {
		return fmt.Errorf("index pods by controller: %w", err)
	}
	return nil
}

// PodsOwnedOrOrphaned are the pods of namespace whose controller is owner, and those with no
// controller (which owner may adopt): what a workload controller's sync may claim, without a walk
// over every pod of the namespace. The indexer must have IndexPodsByController's index.
func PodsOwnedOrOrphaned(indexer cache.Indexer, namespace string, owner types.UID) ([]*corev1.Pod, error) {
	var out []*corev1.Pod
	for _, key := range []string{controllerKey(namespace, owner), controllerKey(namespace, "")} {
		objs, err := indexer.ByIndex(podControllerIndex, key)
		if err != nil {
			return nil, fmt.Errorf("pods by controller %s: %w", key, err)
		}
		for _, o := range objs {
			if p, ok := o.(*corev1.Pod); ok {
				out = append(out, p)
			}
		}
	}
	return out, nil
}
