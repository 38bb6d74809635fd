// Package noderesources implements NodeResourcesFit (filter: the pod's
// requests fit the node's free allocatable; score: LeastAllocated or
// MostAllocated) and NodeResourcesBalancedAllocation (score: keep cpu and
// memory use balanced). Requests are counted as Kubernetes counts them
// (framework.PodRequests).
package noderesources
