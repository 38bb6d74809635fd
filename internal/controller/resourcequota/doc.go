// Package resourcequota keeps each ResourceQuota's status.hard and
// status.used: object counts (pods, services, configmaps, secrets,
// persistentvolumeclaims, resourcequotas and count/<resource>.<group> for
// the workload kinds skiff serves), compute requests and limits of
// non-terminal pods (init containers and overhead included, as the
// scheduler counts them), PVC storage requests, and the Terminating,
// NotTerminating, BestEffort and NotBestEffort scopes. Admission (refusing
// over-quota creates) is the API server's.
//
// It reaches the cluster only through client-go.
package resourcequota
