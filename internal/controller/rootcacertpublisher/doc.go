// Package rootcacertpublisher keeps a ConfigMap "kube-root-ca.crt" with the cluster CA bundle in
// every namespace, so pods (through their projected service-account volume) can verify the API
// server. It reaches the cluster only through client-go.
package rootcacertpublisher
