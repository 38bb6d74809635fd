// Package batch declares the batch/v1 resources (jobs, cronjobs): Kubernetes' defaults, the Job's
// generated selector and labels, validation (restart policies, completion modes, cron schedules
// parsed with the cron library Kubernetes uses, time zones), and the /status subresources.
//
// Pod templates are defaulted and validated through validationutil.PodTemplate hooks the caller
// passes in; this package must not import the core registry, the API server or storage.
package batch
