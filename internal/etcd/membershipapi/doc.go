// Package membershipapi serves etcd membership over HTTP for the API server (the only etcd
// client): list members with their status, add a learner, promote it, remove a member, under
// etcdapi.MembersPath. Authentication and authorization (RBAC non-resource URLs) are the API
// server's; this package only decides the route (a pure function) and calls internal/etcd.
//
// It must not import the API server, storage or the cluster assembly.
package membershipapi
