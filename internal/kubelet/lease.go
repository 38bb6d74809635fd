package kubelet

import (
	"context"
	"fmt"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// NodeLeaseNamespace holds one Lease per node, the node's heartbeat.
const NodeLeaseNamespace = corev1.NamespaceNodeLease

// renewLease creates or renews the node's Lease. node, when known, becomes
// the Lease's owner so the Lease goes away with the Node.
func (n *nodeStatus) renewLease(ctx context.Context, node *corev1.Node) error {
	leases := n.client.CoordinationV1().Leases(NodeLeaseNamespace)
	now := metav1.NewMicroTime(n.clock.Now())
	lease, err := leases.Get(ctx, n.cfg.NodeName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		lease = &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: n.cfg.NodeName, Namespace: NodeLeaseNamespace},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity:       ptr.To(n.cfg.NodeName),
				LeaseDurationSeconds: ptr.To(int32(n.cfg.LeaseDuration.Seconds())),
				RenewTime:            &now,
			},
		}
		setLeaseOwner(lease, node)
		if _, err := leases.Create(ctx, lease, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create node lease %s: %w", n.cfg.NodeName, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("get node lease %s: %w", n.cfg.NodeName, err)
	}
	lease = lease.DeepCopy()
	lease.Spec.HolderIdentity = ptr.To(n.cfg.NodeName)
	lease.Spec.LeaseDurationSeconds = ptr.To(int32(n.cfg.LeaseDuration.Seconds()))
	lease.Spec.RenewTime = &now
	setLeaseOwner(lease, node)
	if _, err := leases.Update(ctx, lease, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("renew node lease %s: %w", n.cfg.NodeName, err)
	}
	return nil
}

func setLeaseOwner(lease *coordinationv1.Lease, node *corev1.Node) {
	if node == nil || node.UID == "" || len(lease.OwnerReferences) > 0 {
		return
	}
	lease.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}}
}
