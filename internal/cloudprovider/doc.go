// Package cloudprovider is skiff's cloud provider interface, shaped like Kubernetes'
// k8s.io/cloud-provider (instances and node addresses, load balancers, routes), and the Registry
// that maps a --cloud-provider name to a constructor. The controllers that drive it (service
// load balancers, routes) live in internal/controller and run in the cloud controller manager.
//
// It owns the interface and the registry only; providers live in subpackages (local/). It must
// not reach the cluster other than through client-go, keep package-level mutable state (a
// Registry is a value the caller builds), or import upstream's cloud-provider code.
package cloudprovider
