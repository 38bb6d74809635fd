// Package cloudmanager is skiff's cloud controller manager: on every control-plane node it
// campaigns for the kube-system/cloud-controller-manager Lease and, while it holds it, builds the
// configured cloud provider (from a cloudprovider.Registry) and runs the controllers the provider
// supports: the service load-balancer controller (internal/controller/servicelb) and the route
// controller (internal/controller/cloudroutes).
//
// It must not reach the cluster other than through client-go or know any provider by name
// (the caller registers them).
package cloudmanager
