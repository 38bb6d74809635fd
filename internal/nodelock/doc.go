// Package nodelock is the lock a running skiff node holds on its data dir: an exclusive flock on
// <data-dir>/skiff.lock, taken by a starting, joining or restoring node and checked by skiff
// uninstall, so that nothing else works on a data dir a node is using. It is its own package
// because both the node's assembly (internal/cluster) and the host's uninstall (internal/install)
// must agree on it, and the uninstall must not import the node's assembly.
package nodelock
