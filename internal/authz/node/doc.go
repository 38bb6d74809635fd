// Package node is Kubernetes' Node authorizer: a kubelet, identified as system:node:<name> in the
// group system:nodes, may read the Secrets, ConfigMaps, PersistentVolumeClaims and
// PersistentVolumes of pods bound to its node, request tokens of those pods' service accounts, and
// work on its own node Lease; anything else it may do is what the system:node role grants.
//
// The relationships come from the pod cache, indexed by node: a read of a Secret walks the pods
// bound to the node (a kubelet runs ~100), so no separate graph has to be kept consistent. It must
// not import the API server's HTTP layer (only internal/request).
package node
