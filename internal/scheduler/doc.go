// Package scheduler is skiff's pod scheduler: it watches pending pods and
// nodes through client-go informers, decides placements with the plugin
// framework over a per-cycle snapshot (a pure decision), assumes the pod in
// its cache and commits with the pods/binding subresource asynchronously (the
// API server re-checks). Unschedulable pods get Kubernetes' FailedScheduling
// event and PodScheduled=False condition; preemption nominates a node and
// evicts lower-priority pods. Only the holder of the kube-system/kube-scheduler
// Lease schedules (Run); Explain answers why a pod does or does not fit a node.
//
// It reaches the cluster only through client-go: it never imports the API
// server, storage or etcd, and keeps no package-level mutable state.
package scheduler
