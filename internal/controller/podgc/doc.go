// Package podgc is the pod garbage collector. Every GCPeriod it deletes the
// oldest terminated pods beyond the terminated-pod threshold, pods bound to
// nodes that no longer exist (after a quarantine and a live check; they are
// first marked Failed with a DisruptionTarget condition), and terminating
// pods that were never scheduled. Pods are deleted with grace period 0: no
// kubelet is left to confirm them.
//
// It reaches the cluster only through client-go.
package podgc
