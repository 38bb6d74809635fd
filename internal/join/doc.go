// Package join owns how a node joins a skiff cluster: bootstrap tokens (generation, the printed
// join token that pins the cluster CA, the kube-system Secret that stores them, and checking a
// presented token against that Secret), the bootstrap-token authenticator the API server uses, the
// joining node's side of TLS bootstrapping (verify the CA pin before trusting or sending anything,
// request the kubelet client and serving certificates through CertificateSigningRequests, store
// them) and the decision when a node's certificate is due for renewal.
//
// It must not reach etcd, storage or the API server's internals: the authenticator reads token
// Secrets through a lookup function the node assembly gives it, and the node side talks to the
// cluster only through client-go. The pure parts (token parsing, Secret validation, renewal time)
// take the time as an argument.
package join
