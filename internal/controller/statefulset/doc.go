// Package statefulset is the StatefulSet controller: pods with stable names
// <set>-<ordinal> (from spec.ordinals.start), hostname and subdomain for the
// governing Service, PersistentVolumeClaims <template>-<set>-<ordinal> from
// volumeClaimTemplates created before their pod, OrderedReady (one at a time,
// each Running and Ready before the next, scale-down from the highest
// ordinal) and Parallel pod management, and RollingUpdate with partition
// (highest ordinal first, one pod at a time) or OnDelete, with templates
// versioned in ControllerRevisions (currentRevision/updateRevision).
//
// It reaches the cluster only through client-go.
package statefulset
