// Package namespace is the namespace controller: when a namespace is being
// deleted it deletes everything in it (every namespaced resource found by
// discovery, through the dynamic client), reports progress in the
// namespace's status conditions (NamespaceDeletionDiscoveryFailure,
// NamespaceDeletionContentFailure, NamespaceContentRemaining,
// NamespaceFinalizersRemaining, ...), and once nothing is left removes the
// "kubernetes" finalizer through the namespaces/finalize subresource so the
// API server can delete the namespace.
//
// It reaches the cluster only through client-go.
package namespace
