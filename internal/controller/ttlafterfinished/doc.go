// Package ttlafterfinished deletes finished Jobs (Complete or Failed) once
// spec.ttlSecondsAfterFinished has passed since they finished, in foreground
// so their pods go first. It requeues each Job for its expiry on the
// injected clock and re-reads the Job before deleting, so a TTL changed at
// the last moment is honoured.
//
// It reaches the cluster only through client-go.
package ttlafterfinished
