// Package csrsigning is kube-controller-manager's csrsigning controller: it issues certificates
// from the cluster CA for approved CertificateSigningRequests of the signers
// kubernetes.io/kube-apiserver-client, kubernetes.io/kube-apiserver-client-kubelet and
// kubernetes.io/kubelet-serving, after the checks Kubernetes applies to each, and marks a request
// Failed (reason SignerValidationFailure) when it does not pass them. Requests for any other signer
// (kubernetes.io/legacy-unknown, or another domain's) are left alone for their own signer.
//
// It never approves or denies (csrapproving and users do) and reaches the cluster only through
// client-go; the CA is handed to it.
package csrsigning
