// Package kubeletauth authenticates and authorizes requests to the kubelet's HTTPS API as the
// kubelet does with --authentication-token-webhook and --authorization-mode=Webhook: a client
// certificate verified by the TLS layer (common name the user, organizations its groups) or a
// bearer token checked through a TokenReview, then a SubjectAccessReview on the node's
// nodes/<subresource> (Attributes maps a request to them, as upstream's kubelet does). Both
// reviews are cached for a short time.
//
// It owns only that decision and its caches. It reaches the cluster through client-go alone (it
// must not import the API server, storage or etcd) and keeps no package-level state.
package kubeletauth
