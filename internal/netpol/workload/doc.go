// Package workload generates a deterministic NetworkPolicy workload: namespaces, pods spread over
// nodes with the labels and container ports of a typical application estate, and policies of the
// shapes real clusters hold (default deny, allow by pod label, by namespace label, both, ipBlock
// with except, named ports, egress with DNS), and the single changes a cluster sees between two
// syncs (a policy edited, a pod relabelled, a namespace relabelled, a pod added or removed).
//
// The network policy benchmarks build their rulesets from it; an end-to-end test can create the
// same objects through the API. It only makes API objects: it never talks to a cluster, and the
// same seed always gives the same objects and the same sequence of changes.
package workload
