// Package batch declares the batch/v1 resources (jobs, cronjobs): Kubernetes' defaults, the Job's
// generated selector and labels, validation (restart policies, completion modes, cron schedules
// parsed with the cron library Kubernetes uses, time zones), and the /status subresources.
//
// Pod templates are defaulted and validated by the core registry's exported pod-template functions,
// reached through validationutil.PodTemplate hooks (CorePodTemplate) so tests can substitute them.
// This package must not import the API server or storage, nor reach into core beyond those exports.
package batch
