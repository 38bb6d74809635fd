// Package metricsserver serves metrics.k8s.io/v1beta1 (NodeMetrics and PodMetrics) from inside
// skiff's API server, as metrics-server does from outside: a scraper reads every Ready node's
// kubelet GET /metrics/resource every resolution (--metrics-resolution, 15 s by default) with the
// API server's kubelet client credentials, and a read-only storage.Interface answers get and list
// (label and field selectors) from the last two samples, CPU as a rate between them.
//
// It owns the parse of the kubelet's resource metrics (ParseResourceMetrics), the points and
// rates (Points, a pure state machine fed batches and asked for usage), building the API objects
// and the scrape loop. It must not import the API server's HTTP layer, the registry or etcd: the
// cluster package wires its Storage into the API server's storage factory, and it reaches nodes
// and pods only through listers handed to it. Nothing is kept across restarts: the first usage is
// served one resolution after start.
package metricsserver
