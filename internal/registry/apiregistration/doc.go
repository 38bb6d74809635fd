// Package apiregistration is the registry of apiregistration.k8s.io/v1 APIServices: the resource,
// its defaults, Kubernetes' validation and table columns, and the local APIServices of the
// built-in group versions with upstream's priorities. Proxying to extension API servers and the
// availability of APIServices are the API server's (internal/apiserver, aggregation*.go); nothing
// here reaches the network or the store.
package apiregistration
