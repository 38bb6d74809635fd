// Package cronjob is the CronJob controller: it creates a Job for each
// scheduled time (standard cron syntax through robfig/cron/v3, in
// spec.timeZone when set), named <cronjob>-<minutes since epoch> so a time is
// never run twice, honouring suspend, startingDeadlineSeconds and
// concurrencyPolicy (Allow, Forbid, Replace); it keeps status.active,
// lastScheduleTime and lastSuccessfulTime, and deletes finished Jobs beyond
// the history limits. It requeues itself for the next scheduled time on the
// injected clock.
//
// It reaches the cluster only through client-go.
package cronjob
