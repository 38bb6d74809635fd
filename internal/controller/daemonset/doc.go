// Package daemonset is the DaemonSet controller: one pod per eligible node
// (nodeSelector, required node affinity, and the node's NoSchedule/NoExecute
// taints against the template's tolerations plus the ones Kubernetes adds to
// daemon pods), each pod pinned to its node through a required node affinity
// on metadata.name so the scheduler binds it, as Kubernetes does today.
// Templates are versioned in ControllerRevisions (kubectl rollout
// history/undo) and pods carry controller-revision-hash; updates roll out
// with RollingUpdate (maxUnavailable, maxSurge) or wait for deletes
// (OnDelete). Status counts what `kubectl rollout status` reads.
//
// It reaches the cluster only through client-go.
package daemonset
