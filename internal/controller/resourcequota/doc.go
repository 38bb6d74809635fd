// Package resourcequota keeps each ResourceQuota's status.hard and
// status.used: object counts (pods, services, configmaps, secrets,
// persistentvolumeclaims, resourcequotas and count/<resource>.<group> for
// the workload kinds skiff serves), compute requests and limits of
// non-terminal pods (init containers and overhead included, as the
// scheduler counts them), PVC storage requests, and the Terminating,
// NotTerminating, BestEffort, NotBestEffort and PriorityClass scopes, per
// storage class claims and storage. What an object holds is measured by
// internal/quota, which the API server's ResourceQuota admission charges
// writes by (refusing over-quota creates and updates is admission's). A
// quota's status-only changes do not start a recount, so a recount cannot
// take back a charge admission made for an object not yet in the informers.
//
// It reaches the cluster only through client-go.
package resourcequota
