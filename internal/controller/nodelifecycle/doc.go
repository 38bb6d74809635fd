// Package nodelifecycle watches node health and acts on it.
//
// Health is a pure decision (Evaluate): a node heard from neither through its
// Lease in kube-node-lease nor through its Ready condition heartbeat within
// the grace period (default 40s) gets Ready (and the pressure conditions)
// set to Unknown; the node.kubernetes.io/not-ready and unreachable taints
// (NoSchedule and NoExecute) follow its Ready condition, and the pressure,
// network-unavailable and unschedulable NoSchedule taints follow theirs.
// Pods on a node that is not ready are marked not Ready so Services drop
// them. The taint eviction part deletes pods that do not tolerate a node's
// NoExecute taints, or whose tolerationSeconds ran out since the taint was
// added. Pods of deleted nodes are collected by podgc.
//
// It reaches the cluster only through client-go; time comes from the injected clock.
package nodelifecycle
