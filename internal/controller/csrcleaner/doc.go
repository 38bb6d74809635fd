// Package csrcleaner is kube-controller-manager's csrcleaner controller: once an hour it deletes
// the CertificateSigningRequests nobody needs any more, with Kubernetes' deadlines: issued
// (approved, with a certificate), denied and failed requests an hour after their condition was last
// updated, requests still pending after 24 hours, and requests whose certificate has expired.
//
// It changes nothing else and reaches the cluster only through client-go; time comes from the
// injected clock.
package csrcleaner
