// Package deployment is the Deployment controller. It rolls a Deployment's
// pod template out through ReplicaSets: one "new" ReplicaSet per template
// (named <deployment>-<pod-template-hash>), old ones scaled down by the
// RollingUpdate (maxSurge/maxUnavailable) or Recreate strategy, revisions in
// the deployment.kubernetes.io/revision annotation, revisionHistoryLimit
// cleanup, pause/resume, proportional scaling, and status with the
// Progressing/Available conditions that `kubectl rollout status` reads.
// Rollback needs nothing special: kubectl 1.32 writes an old template back
// and the ReplicaSet holding it becomes the new one again.
//
// It manages ReplicaSets only (the replicaset controller manages pods) and
// reaches the cluster only through client-go.
package deployment
