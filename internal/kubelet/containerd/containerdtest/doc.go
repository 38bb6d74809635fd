// Package containerdtest starts a real, supervised containerd for tests, with
// the offline busybox and pause images imported and a CNI bridge of its own,
// and undoes every host change afterwards: sandboxes, mounts, the bridge,
// the CNI iptables chains, host-local IPAM state and net.ipv4.ip_forward.
//
// Tests skip when containerd is not installed, unless CI is set (then a
// missing runtime is a failure).
package containerdtest
