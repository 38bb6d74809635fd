// Package simnode simulates many Kubernetes nodes in one process, for scheduler and controller
// benchmarks and integration tests that need nodes but no containers.
//
// A Simulator registers N Node objects, renews one Lease per node in kube-node-lease, and plays the
// kubelet for pods bound to its nodes: it reports them Running and Ready, finishes them when told to,
// and completes graceful deletions. It owns nothing else.
//
// It reaches the cluster only through client-go (never storage, etcd or the API server's packages),
// and it is built to stay small at 5,000 nodes: no goroutine per node or per pod, a single shared pod
// informer, a bounded worker pool and lease renewals spread evenly over the heartbeat interval.
package simnode
