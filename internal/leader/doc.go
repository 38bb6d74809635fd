// Package leader campaigns for a coordination.k8s.io Lease with client-go's
// leader election and runs a component's leading work while this instance
// holds it: the one loop the controller manager, the scheduler, the cloud
// controller manager, the etcd snapshot scheduler and the manifests directory
// share.
//
// Campaign owns every goroutine it starts and returns only after the leading
// work has returned. The Lease is released only then, so that no other
// instance starts leading while this one's work is still winding down (the
// library releases on cancel as soon as its renew loop stops, which is why the
// elector's context is not the caller's). What happens when the Lease is lost
// is the caller's choice: return ErrLost (kube-scheduler and
// kube-controller-manager exit) or campaign again.
//
// It must not know any component's work: it reaches the cluster only through
// client-go, and the decision after each term is a pure function (next).
package leader
