// Package replicaset is the ReplicaSet controller: it keeps spec.replicas
// active pods matching a ReplicaSet's selector, adopting orphans that match
// and releasing pods that stopped matching, creating in slow-start batches
// and deleting the least valuable pods first, and reports status (replicas,
// fullyLabeledReplicas, readyReplicas, availableReplicas, observedGeneration).
//
// It decides on ReplicaSets only; an Owner connects it to the objects it
// manages, so the replication package serves ReplicationControllers with the
// same code by converting them (as Kubernetes' replication manager does).
//
// It must not touch Deployments (the deployment controller scales ReplicaSets)
// and reaches the cluster only through client-go.
package replicaset
