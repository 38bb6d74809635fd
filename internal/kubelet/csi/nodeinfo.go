package csi

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
)

// NodeIDAnnotation maps each registered driver to its node ID on the Node, as Kubernetes' kubelet
// keeps it (a JSON object); external attachers read the ID from CSINode today, older ones from here.
const NodeIDAnnotation = "csi.volume.kubernetes.io/nodeid"

// csiNodeDriver is a driver's entry in CSINode: its node ID, the topology keys it reported and
// the volumes it can hold (only a positive maximum is a limit).
func csiNodeDriver(d *Driver) storagev1.CSINodeDriver {
	out := storagev1.CSINodeDriver{Name: d.Name, NodeID: d.NodeID}
	for key := range d.Topology {
		out.TopologyKeys = append(out.TopologyKeys, key)
	}
	slices.Sort(out.TopologyKeys)
	if d.MaxVolumes > 0 {
		out.Allocatable = &storagev1.VolumeNodeResources{Count: ptr.To(int32(min(d.MaxVolumes, 1<<31-1)))}
	}
	return out
}

// withDriver returns drivers with d in place of any entry of its name. changed says the list
// differs; stale says an entry of that name differed and must be removed in a write of its own
// first, since the API keeps a registered driver's entry immutable.
func withDriver(drivers []storagev1.CSINodeDriver, d storagev1.CSINodeDriver) (out []storagev1.CSINodeDriver, changed, stale bool) {
	i := slices.IndexFunc(drivers, func(e storagev1.CSINodeDriver) bool { return e.Name == d.Name })
	if i >= 0 && apiequality.Semantic.DeepEqual(drivers[i], d) {
		return drivers, false, false
	}
	out, _ = withoutDriver(drivers, d.Name)
	return append(out, d), true, i >= 0
}

// withoutDriver returns drivers without name's entry.
func withoutDriver(drivers []storagev1.CSINodeDriver, name string) ([]storagev1.CSINodeDriver, bool) {
	out := slices.DeleteFunc(slices.Clone(drivers), func(e storagev1.CSINodeDriver) bool { return e.Name == name })
	return out, len(out) != len(drivers)
}

// nodeWithDriver returns the Node's metadata with the driver's node ID in the nodeid annotation
// and its topology segments as labels; changed is false when the Node has them already.
func nodeWithDriver(node *corev1.Node, d *Driver) (*corev1.Node, bool, error) {
	ids, err := nodeIDs(node)
	if err != nil {
		return nil, false, err
	}
	out := node.DeepCopy()
	changed := false
	if ids[d.Name] != d.NodeID {
		ids[d.Name] = d.NodeID
		if err := setNodeIDs(out, ids); err != nil {
			return nil, false, err
		}
		changed = true
	}
	for key, value := range d.Topology {
		if current, ok := out.Labels[key]; ok && current == value {
			continue
		}
		if out.Labels == nil {
			out.Labels = map[string]string{}
		}
		out.Labels[key] = value
		changed = true
	}
	return out, changed, nil
}

// nodeWithoutDriver returns the Node without the driver in its nodeid annotation. Topology labels
// stay, as in Kubernetes: another driver may report the same key, and a driver that comes back
// reports them again.
func nodeWithoutDriver(node *corev1.Node, name string) (*corev1.Node, bool, error) {
	ids, err := nodeIDs(node)
	if err != nil {
		return nil, false, err
	}
	if _, ok := ids[name]; !ok {
		return node, false, nil
	}
	delete(ids, name)
	out := node.DeepCopy()
	return out, true, setNodeIDs(out, ids)
}

func nodeIDs(node *corev1.Node) (map[string]string, error) {
	ids := map[string]string{}
	if raw := node.Annotations[NodeIDAnnotation]; raw != "" {
		if err := json.Unmarshal([]byte(raw), &ids); err != nil {
			return nil, fmt.Errorf("node %s: annotation %s: %w", node.Name, NodeIDAnnotation, err)
		}
	}
	return ids, nil
}

func setNodeIDs(node *corev1.Node, ids map[string]string) error {
	if len(ids) == 0 {
		delete(node.Annotations, NodeIDAnnotation)
		return nil
	}
	raw, err := json.Marshal(ids)
	if err != nil {
		return err
	}
	if node.Annotations == nil {
		node.Annotations = map[string]string{}
	}
	node.Annotations[NodeIDAnnotation] = string(raw)
	return nil
}

// NodeInfo keeps the node's CSI bookkeeping in the API: its CSINode and the Node's nodeid
// annotation and topology labels.
type NodeInfo struct {
	Client   kubernetes.Interface
	NodeName string
}

// EnsureCSINode creates the node's CSINode, owned by the Node (so it goes with it), if it is not
// there: the scheduler and the attach/detach controller read the node's drivers from it, and an
// object without drivers says the node has none.
func (n *NodeInfo) EnsureCSINode(ctx context.Context) (*storagev1.CSINode, error) {
	existing, err := n.Client.StorageV1().CSINodes().Get(ctx, n.NodeName, metav1.GetOptions{})
	if err == nil {
		return existing, nil
	}
	if !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("get csinode %s: %w", n.NodeName, err)
	}
	node, err := n.Client.CoreV1().Nodes().Get(ctx, n.NodeName, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("get node %s: %w", n.NodeName, err)
	}
	obj := &storagev1.CSINode{
		ObjectMeta: metav1.ObjectMeta{Name: n.NodeName, OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID,
		}}},
		Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{}},
	}
	created, err := n.Client.StorageV1().CSINodes().Create(ctx, obj, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return n.Client.StorageV1().CSINodes().Get(ctx, n.NodeName, metav1.GetOptions{})
	}
	if err != nil {
		return nil, fmt.Errorf("create csinode %s: %w", n.NodeName, err)
	}
	return created, nil
}

// Install records a registered driver on the Node and in CSINode.
func (n *NodeInfo) Install(ctx context.Context, d *Driver) error {
	if err := n.updateNode(ctx, func(node *corev1.Node) (*corev1.Node, bool, error) { return nodeWithDriver(node, d) }); err != nil {
		return err
	}
	entry := csiNodeDriver(d)
	return n.updateCSINode(ctx, func(drivers []storagev1.CSINodeDriver) ([]storagev1.CSINodeDriver, bool) {
		out, changed, stale := withDriver(drivers, entry)
		if stale {
			// First the old entry goes; the next round adds the new one.
			out, _ = withoutDriver(drivers, entry.Name)
		}
		return out, changed
	})
}

// Uninstall removes a driver that went away from CSINode and the Node's nodeid annotation.
func (n *NodeInfo) Uninstall(ctx context.Context, name string) error {
	if err := n.updateCSINode(ctx, func(drivers []storagev1.CSINodeDriver) ([]storagev1.CSINodeDriver, bool) {
		return withoutDriver(drivers, name)
	}); err != nil {
		return err
	}
	return n.updateNode(ctx, func(node *corev1.Node) (*corev1.Node, bool, error) { return nodeWithoutDriver(node, name) })
}

func (n *NodeInfo) updateNode(ctx context.Context, change func(*corev1.Node) (*corev1.Node, bool, error)) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node, err := n.Client.CoreV1().Nodes().Get(ctx, n.NodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		updated, changed, err := change(node)
		if err != nil || !changed {
			return err
		}
		_, err = n.Client.CoreV1().Nodes().Update(ctx, updated, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("update node %s: %w", n.NodeName, err)
	}
	return nil
}

// updateCSINode applies change until it changes nothing more (a replaced driver takes two
// writes), retrying conflicts.
func (n *NodeInfo) updateCSINode(ctx context.Context, change func([]storagev1.CSINodeDriver) ([]storagev1.CSINodeDriver, bool)) error {
	for range 3 {
		again := false
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			obj, err := n.EnsureCSINode(ctx)
			if err != nil {
				return err
			}
			drivers, changed := change(obj.Spec.Drivers)
			again = changed
			if !changed {
				return nil
			}
			updated := obj.DeepCopy()
			updated.Spec.Drivers = drivers
			_, err = n.Client.StorageV1().CSINodes().Update(ctx, updated, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			return fmt.Errorf("update csinode %s: %w", n.NodeName, err)
		}
		if !again {
			return nil
		}
	}
	return nil
}

// Sync makes CSINode list exactly the registered drivers: after a kubelet restart, entries of
// drivers that are no longer registered go (they register again through their sockets).
func (n *NodeInfo) Sync(ctx context.Context, registered map[string]bool) error {
	return n.updateCSINode(ctx, func(drivers []storagev1.CSINodeDriver) ([]storagev1.CSINodeDriver, bool) {
		out := slices.DeleteFunc(slices.Clone(drivers), func(e storagev1.CSINodeDriver) bool { return !registered[e.Name] })
		return out, len(out) != len(drivers)
	})
}
