// Package statefulset is the StatefulSet controller: pods with stable names
// <set>-<ordinal> (from spec.ordinals.start), hostname and subdomain for the
// governing Service, PersistentVolumeClaims <template>-<set>-<ordinal> from
// volumeClaimTemplates created before their pod, OrderedReady (one at a time,
// each Running and Ready before the next, scale-down from the highest
// ordinal) and Parallel pod management, and RollingUpdate with partition
// (highest ordinal first, one pod at a time) or OnDelete, with templates
// versioned in ControllerRevisions (currentRevision/updateRevision).
// It adopts orphan pods that match its selector and are named like its
// ordinals, and releases its pods whose labels stop matching: a pod event
// queues every set that could adopt the pod (SetsForPodEvent). Its claims'
// ownerReferences follow persistentVolumeClaimRetentionPolicy
// (ClaimOwnerRefs): the set owns them under whenDeleted Delete, a
// scaled-away pod under whenScaled Delete, and a claim another controller
// owns gets no controller of the set's.
//
// It reaches the cluster only through client-go.
package statefulset
