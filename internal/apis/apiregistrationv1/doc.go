// Package apiregistrationv1 declares the apiregistration.k8s.io/v1 types skiff serves (APIService),
// with the JSON shapes of Kubernetes' own. skiff does not link k8s.io/kube-aggregator, whose module
// holds the upstream Go types, so they are declared here. It holds types only: no validation, no
// defaults, no proxying.
package apiregistrationv1
