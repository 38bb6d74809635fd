// Package certificates declares certificates.k8s.io/v1 CertificateSigningRequests with
// Kubernetes' rules: on create the requestor (spec.username, uid, groups, extra) is taken from the
// authenticated user in the request context and the status cleared; the spec never changes after
// that; /approval changes only the Approved and Denied conditions, /status only the certificate and
// the other conditions; validation and its wording follow Kubernetes'.
//
// It decides nothing about signing or approving: the csrsigning and csrapproving controllers do.
// It must not import the API server's HTTP layer or storage: the requesting user comes through
// internal/apiserver/request.
package certificates
