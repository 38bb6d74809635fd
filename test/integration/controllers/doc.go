// Package controllers tests the controller manager's trickier semantics against a real skiff: the
// built binary (etcd and controlplane roles) on loopback ports, reached through client-go, with
// simulated nodes from internal/simnode playing the kubelet (or the test setting pod status
// itself). Each scenario asserts what Kubernetes guarantees, sampled while it happens: rolling
// update bounds, progress deadlines, garbage-collection propagation, PDB status and quota usage.
//
// It is a client like any other: it must not import the server's packages or touch etcd.
package controllers
