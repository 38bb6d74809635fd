// Package nodeadmin holds the cluster operator's commands that reach the cluster only through the
// API: `skiff status` (nodes and roles, etcd members, API servers, leaders, versions) and `skiff
// node remove` (cordon, remove the node's etcd member, delete the Node). The report and the
// removal plan are pure functions of what was read; thin functions read and apply them.
//
// It is an API client: it must not import the API server, storage, etcd or the cluster assembly.
package nodeadmin
