// Package clusterroleaggregation is the clusterrole-aggregation controller: a ClusterRole with an
// aggregationRule gets, as its rules, the union of the rules of every ClusterRole its label
// selectors match (admin, edit and view are built this way). The union is a pure function,
// AggregatedRules; the controller only writes it. It reaches the cluster only through client-go.
package clusterroleaggregation
