// Package certificates tests CertificateSigningRequests end to end against a real skiff: the built
// binary (etcd and controlplane roles) on loopback ports, driven by client-go and by the real
// kubectl (`kubectl certificate approve|deny`, `kubectl get csr`). It checks that an approved
// kubelet client request is issued a certificate that verifies against the cluster CA with the
// requested subject and lifetime, that denial and a wrong common name end as Kubernetes ends them,
// and that a node renewing its own certificate is approved automatically.
//
// It is a client like any other: it must not import the server's packages or touch etcd. It reads
// the cluster CA's key from the data directory only to act as a node that already joined.
package certificates
