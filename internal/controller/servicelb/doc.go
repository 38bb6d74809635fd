// Package servicelb is the cloud controller manager's service controller: for every type
// LoadBalancer Service it asks the cloud provider's LoadBalancer for a balancer over the nodes,
// writes status.loadBalancer.ingress, keeps the service.kubernetes.io/load-balancer-cleanup
// finalizer while a balancer exists, and records Events (EnsuringLoadBalancer,
// EnsuredLoadBalancer, SyncLoadBalancerFailed, DeletedLoadBalancer) as upstream's does.
//
// Decide is the pure part (what a Service needs: a balancer, a cleanup, or nothing). It must not
// program nodes itself (the service proxy answers on the ingress addresses) or reach the cluster
// other than through client-go.
package servicelb
