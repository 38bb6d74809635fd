// Package job is the Job controller: it runs pods until spec.completions
// succeed (NonIndexed or Indexed, at most spec.parallelism at a time), fails
// the Job past backoffLimit or activeDeadlineSeconds, suspends and resumes
// it, and tracks finished pods exactly once with the
// batch.kubernetes.io/job-tracking finalizer and
// status.uncountedTerminatedPods.
//
// It follows Kubernetes 1.33: spec.podFailurePolicy rules (FailJob, Ignore,
// Count, FailIndex on exit codes or pod conditions; with a policy, or
// podReplacementPolicy Failed, a terminating pod is judged and replaced only
// once terminal), backoffLimitPerIndex and maxFailedIndexes for Indexed Jobs
// (the failure count travels on replacement pods in the
// job-index-failure-count annotation), and successPolicy. Terminal
// conditions come in two steps: SuccessCriteriaMet then Complete,
// FailureTarget then Failed, the terminal one only once no pod is still
// terminating. Pods holding the tracking finalizer without a live Job to
// track them (orphaned, released, or their Job deleted or finished) have it
// removed, so they never block their namespace's deletion.
//
// It reaches the cluster only through client-go.
package job
