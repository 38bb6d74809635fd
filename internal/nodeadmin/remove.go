package nodeadmin

import (
	"context"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/skiff-sh/skiff/internal/etcdapi"
)

// RemovalPlan is what removing a node does, in order.
type RemovalPlan struct {
	Node string
	// Cordon: the Node exists and is still schedulable.
	Cordon bool
	// EtcdMemberID is the node's etcd member (named after the node), empty when it has none.
	EtcdMemberID string
	// DeleteNode: the Node object exists.
	DeleteNode bool
}

// PlanRemoval decides the steps (pure): node is nil when no Node object exists; the node's etcd
// member is the one named after it (embedded members take their node's name).
func PlanRemoval(name string, node *corev1.Node, members *etcdapi.MemberList) RemovalPlan {
	p := RemovalPlan{Node: name}
	if node != nil {
		p.DeleteNode = true
		p.Cordon = !node.Spec.Unschedulable
	}
	if members != nil {
		for _, m := range members.Members {
			if m.Name == name {
				p.EtcdMemberID = m.ID
			}
		}
	}
	return p
}

// Empty reports whether there is nothing to do.
func (p RemovalPlan) Empty() bool { return !p.Cordon && p.EtcdMemberID == "" && !p.DeleteNode }

// RemoveNode removes node name from the cluster: cordon it, remove its etcd member through the API
// server's membership endpoint, delete its Node. Each step is reported on out.
func RemoveNode(ctx context.Context, cs kubernetes.Interface, ec *etcdapi.Client, name string, out io.Writer) error {
	var node *corev1.Node
	got, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	switch {
	case err == nil:
		node = got
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("get node %s: %w", name, err)
	}
	members, err := ec.List(ctx)
	if err != nil {
		return fmt.Errorf("node %s: %w (the node's etcd member, if any, is left alone)", name, err)
	}
	plan := PlanRemoval(name, node, members)
	if plan.Empty() {
		return fmt.Errorf("node %s: no Node object and no etcd member of that name", name)
	}
	if plan.Cordon {
		patch := []byte(`{"spec":{"unschedulable":true}}`)
		if _, err := cs.CoreV1().Nodes().Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("cordon node %s: %w", name, err)
		}
		fmt.Fprintf(out, "node/%s cordoned\n", name)
	}
	if plan.EtcdMemberID != "" {
		if err := ec.Remove(ctx, plan.EtcdMemberID); err != nil {
			return fmt.Errorf("node %s: %w", name, err)
		}
		fmt.Fprintf(out, "etcd member %s (%s) removed\n", plan.EtcdMemberID, name)
	}
	if plan.DeleteNode {
		if err := cs.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete node %s: %w", name, err)
		}
		fmt.Fprintf(out, "node/%s deleted\n", name)
	}
	return nil
}
