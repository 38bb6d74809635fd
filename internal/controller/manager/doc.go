// Package manager is skiff's controller manager: it selects controllers as
// kube-controller-manager's --controllers flag does, builds them on one shared
// informer factory, and runs them only while it holds the leader Lease
// (kube-system/kube-controller-manager). It owns the event broadcaster and the
// Prometheus metrics of the controllers.
//
// It must not contain reconcile logic (that lives in one package per
// controller) and reaches the cluster only through client-go.
package manager
