// Package cri is the kubelet's thin client of a container runtime through the
// Container Runtime Interface (k8s.io/cri-api v1) over a unix socket.
//
// Runtime is the interface the kubelet programs against; Client implements it
// over gRPC and package fakecri implements it in memory for tests. Requests
// and responses are the CRI v1 messages themselves, so nothing is lost in
// translation.
//
// It must not know about Kubernetes API objects (pods, nodes): turning a pod
// into sandbox and container configs is the kubelet's job.
package cri
