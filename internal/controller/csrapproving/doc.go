// Package csrapproving is kube-controller-manager's csrapproving controller: it approves, with
// reason AutoApproved, kubernetes.io/kube-apiserver-client-kubelet requests that are valid kubelet
// client requests and were made either by a bootstrap token (group system:bootstrappers: a node
// joining) or by a node renewing its own certificate (user system:node:<name> asking for the common
// name system:node:<name>). Beside those, skiff's own kind: a node asking, as itself, for the
// kubernetes.io/kube-apiserver-client certificate of its HTTP data plane (common name
// system:skiff:ingress:<its name>, organization system:skiff:ingresses, client usages, no
// subject alternative names). It approves nothing else and never denies.
//
// Kubernetes asks a SubjectAccessReview whether the requestor may create the
// certificatesigningrequests subresources "nodeclient" and "selfnodeclient"; skiff has no RBAC
// yet, so the groups that kubeadm's bindings grant them stand in for that review (see authorized).
// It reaches the cluster only through client-go.
package csrapproving
