// Package etcdsnapshot takes scheduled etcd snapshots and keeps a bounded number of them.
//
// The decisions are pure (plan.go): given the schedule, the clock, the snapshot files present and
// the retention, which snapshot is due and which files go. The I/O around them is thin: files in
// one directory (written through a temporary name and renamed, each with a sha256 sidecar), an
// index ConfigMap and Events in kube-system so kubectl and the dashboard see every snapshot, and
// a Lease so one control plane at a time takes them.
//
// It reaches etcd only through a client it is handed (the node's own, embedded or external) and
// the cluster only through client-go. It must not import the API server or the storage layer.
package etcdsnapshot
