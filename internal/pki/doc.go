// Package pki owns the cluster's certificate authorities, the certificates issued from them and the
// kubeconfigs built on those certificates. It keeps every file it writes atomic and reuses what is
// already on disk, so restarts never rotate identities by accident. Serving certificates come in
// two keys, ECDSA and RSA beside it (EnsureServing), so that clients offering only RSA cipher
// suites still connect. It performs no network I/O.
package pki
