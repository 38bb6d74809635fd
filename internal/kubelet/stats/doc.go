// Package stats builds the kubelet's resource usage reports: the Summary API
// (GET /stats/summary, k8s.io/kubelet's stats/v1alpha1 shape) and the Prometheus
// resource metrics (GET /metrics/resource, with upstream's metric names) that
// metrics.k8s.io is scraped from.
//
// It owns only pure decisions: Summary turns a node sample, the node's pods and the
// runtime's CRI container and sandbox stats into a summary; WriteResourceMetrics
// renders a summary; ParseProcStat, ParseMeminfo and ParseNetDev read /proc text
// handed to them. It does no I/O of its own (the kubelet reads /proc, statfs and
// CRI and calls it) and keeps no state between calls: the previous node sample
// a CPU rate needs is passed in.
package stats
