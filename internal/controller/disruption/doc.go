// Package disruption is the PodDisruptionBudget controller: it keeps each
// PDB's status (currentHealthy, desiredHealthy, expectedPods,
// disruptionsAllowed, the DisruptionAllowed condition, observedGeneration)
// from the pods its selector matches and, for percentages and
// maxUnavailable, the scale of their controllers (Deployment, ReplicaSet,
// StatefulSet). It also forgets disruptedPods entries the eviction API left
// once the pod is gone or DeletionTimeout has passed.
//
// It reaches the cluster only through client-go.
package disruption
