// Package localpath is skiff's built-in dynamic provisioner, "local-path-provisioner" in
// --controllers, after rancher/local-path-provisioner: for a claim of a StorageClass whose
// provisioner is skiff.dev/local-path it creates, once the scheduler has picked the node
// (volume.kubernetes.io/selected-node, WaitForFirstConsumer), a PersistentVolume pvc-<claim uid>
// with a hostPath source <dir>/<pv name> (type DirectoryOrCreate, so the kubelet makes the
// directory when the first pod starts) pinned to that node by node affinity, and pre-bound to the
// claim; the persistentvolume-binder completes the binding.
//
// A released volume whose reclaim policy is Delete is removed in two steps: a helper pod on the
// volume's node removes the directory (the controller manager runs on a control-plane node and
// cannot reach a worker's disk, and the kubelet has no API to delete a path), then the volume is
// deleted. It reaches the cluster only through client-go.
package localpath
