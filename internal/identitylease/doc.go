// Package identitylease is the one rule by which skiff's readers of API server identity Leases
// (kube-system/apiserver-<hash>, labelled apiserver.kubernetes.io/identity=kube-apiserver) judge
// an API server alive: `skiff status` and the encryption-key rotation ask the same question and
// must get the same answer.
//
// An identity Lease lasts an hour (upstream's duration, kept so that its garbage collection
// matches kube-apiserver's) but is renewed every ten seconds: a server killed a minute ago still
// holds an unexpired Lease. Liveness is therefore judged by renewal, never by the duration.
//
// It is a leaf on the API types: no client, nothing of skiff's server side, so that API clients
// (internal/nodeadmin) may import it.
package identitylease
