// Package nodeipam gives every node a pod CIDR (spec.podCIDR/podCIDRs) of
// NodeCIDRMaskSize bits carved out of --cluster-cidr, lowest free subnet
// first, as kube-controller-manager's range allocator does. Subnets already
// on nodes are respected; a node deleted frees its subnet.
//
// It reaches the cluster only through client-go.
package nodeipam
