// Package csi is the kubelet's side of the Container Storage Interface: the plugin watcher that
// registers CSI node plugins through the kubelet plugin registration API (what
// csi-node-driver-registrar serves on a socket in <root>/plugins_registry), the registry of the
// drivers it registered with a gRPC client to each one's Node service, and the node's CSI
// bookkeeping in the API (the CSINode object, the csi.volume.kubernetes.io/nodeid annotation and
// the drivers' topology labels on the Node).
//
// Design: decide-then-do. planSockets says which sockets to register and which drivers to drop
// from one listing of the directory; installDriver and nodeChanges say what CSINode and the Node
// must become; the Watcher and NodeInfo only carry those plans out. The directory is polled on the
// injected clock rather than watched through inotify: a plugin registers once per start of its
// registrar, so a period of a second costs nothing and keeps tests on a fake clock.
//
// The volume operations themselves (stage, publish, expand, stats) are decided by the kubelet
// (package kubelet, csivolume*.go), which calls the drivers through Registry.
package csi
