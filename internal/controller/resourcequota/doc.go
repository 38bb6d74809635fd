// Package resourcequota keeps each ResourceQuota's status.hard and
// status.used: object counts (pods, services, configmaps, secrets,
// persistentvolumeclaims, resourcequotas and count/<resource>.<group> for
// the workload kinds skiff serves, and for any other namespaced resource
// discovery lists, custom resources included, through an informer started
// when a quota first names it), compute requests and limits of
// non-terminal pods (init containers and overhead included, as the
// scheduler counts them), PVC storage requests, and the Terminating,
// NotTerminating, BestEffort, NotBestEffort and PriorityClass scopes, per
// storage class claims and storage. What an object holds is measured by
// internal/quota, which the API server's ResourceQuota admission charges
// writes by (refusing over-quota creates and updates is admission's). As
// upstream, object adds and a quota's status-only changes start no recount
// (admission charged the object before storing it, and a recount racing the
// informers would take the charge back); deletes, usage-changing updates,
// quota changes and the periodic full resync do.
//
// It reaches the cluster only through client-go.
package resourcequota
