// Package quota is the ResourceQuota admission plugin: a create or update of a namespaced object
// is measured (internal/quota, shared with the resourcequota controller) and charged to the
// quotas that cover it in the same request, before the object is stored: each quota's status.used
// is raised with a compare-and-swap on its resourceVersion, so concurrent writes (on one API server
// or several) cannot both take the last unit. Refusals are 403s in upstream's words ("exceeded
// quota: ...", "failed quota: ...: must specify ...", "status unknown for quota: ..."). A name
// the controller recorded no usage for (a count it cannot make) is not enforced. A pod's resize
// (pods/resize, the one subresource charged, as upstream) is an update charged what it adds: a
// resize beyond a quota is refused, one within it raises status.used at once.
//
// Check is the pure decision, table-tested; the plugin reads the quotas and writes their status.
// It must not touch etcd directly: it reads and writes through the API server's store.
package quota
