// Package metrics declares metrics.k8s.io/v1beta1 (NodeMetrics as "nodes", PodMetrics as
// namespaced "pods"), the resource metrics API metrics-server serves: get and list only, a
// strategy that refuses every write, and metrics-server's table columns. The objects are computed
// by internal/metricsserver, which the cluster wires in as their storage.
//
// It declares resources only: no storage, no HTTP, no scraping.
package metrics
