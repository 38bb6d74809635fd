// Package containerd runs a node's own containerd as a supervised child
// process: it generates the containerd configuration under the node's data
// dir (so several nodes can share a host), writes the node's CNI bridge
// configuration, starts containerd, waits for its socket, restarts it with
// backoff when it exits, and stops it when the context ends.
//
// Containers survive a containerd restart (their shims are separate
// processes), so a crash of containerd or of skiff never kills pods.
//
// It must not talk to the API server or speak CRI beyond checking that the
// socket answers; the kubelet does that through package cri.
package containerd
