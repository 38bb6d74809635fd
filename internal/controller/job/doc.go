// Package job is the Job controller: it runs pods until spec.completions
// succeed (NonIndexed or Indexed, at most spec.parallelism at a time), fails
// the Job past backoffLimit or activeDeadlineSeconds, suspends and resumes
// it, and tracks finished pods exactly once with the
// batch.kubernetes.io/job-tracking finalizer and
// status.uncountedTerminatedPods. Terminal conditions follow Kubernetes 1.32:
// SuccessCriteriaMet then Complete, FailureTarget then Failed, the terminal
// one only once no pod is still terminating.
//
// It reaches the cluster only through client-go.
package job
