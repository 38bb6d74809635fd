// Package podautoscaler is the HorizontalPodAutoscaler controller: every sync period (and on an
// HPA's spec change) it reads the scale target's /scale subresource, the pods its selector picks
// and their metrics (metrics.k8s.io for Resource and ContainerResource metrics,
// custom.metrics.k8s.io for Pods and Object metrics, external.metrics.k8s.io for External
// metrics), computes the replica count Kubernetes' HPA would (tolerance, unready and missing pods,
// min/max replicas, behavior policies and stabilization windows), writes it through /scale and
// reports status, conditions and events on the HPA.
//
// The decision is one pure function, Decide, from (HPA, scale, pods, metrics, now, recommendation
// history) to a Plan; the Controller only reads inputs and carries the Plan out. Metrics come
// through the MetricsSource interface, so tests inject a fake.
//
// It must not read or write the scale targets' own objects (only /scale), and reaches the cluster
// only through client-go.
package podautoscaler
