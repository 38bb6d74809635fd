// Package replication is the ReplicationController controller ("replicationcontroller" in
// --controllers). As in Kubernetes, it is the ReplicaSet controller over converted objects: this
// package only converts ReplicationControllers to ReplicaSets and their status back, and hands the
// replicaset package an Owner; every decision (claiming, creating, deleting, status) is made there.
//
// It reaches the cluster only through client-go.
package replication
