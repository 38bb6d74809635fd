// Package scheduler tests skiff's scheduler end to end against a real skiff: the built binary
// (etcd and controlplane roles, node lifecycle and IPAM controllers off so that Node objects the
// tests create need no kubelet or Lease) on loopback ports, reached only through client-go. Nodes
// are fake (Node objects with capacity and a Ready condition, or internal/simnode where a kubelet
// must finish graceful deletions). The tests cover what kube-scheduler guarantees: filters and
// scores, Kubernetes' FailedScheduling message form, event-driven retries, preemption, profiles,
// leader election between two scheduler instances, and no overcommit under churn (replayed from
// watch events).
//
// Tests share one server and run one after another; each uses its own namespace and deletes the
// nodes it made, so "0/N nodes" messages count only its nodes.
package scheduler
