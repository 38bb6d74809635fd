// Package queue holds pending pods: activeQ (ready, by priority then
// arrival), backoffQ (failed recently, per-pod exponential backoff) and the
// unschedulable set, from which pods move only on cluster events that could
// make them fit (and after a long-stay flush, as Kubernetes does). It also
// tracks nominated pods (preemptors waiting for their victims to leave).
//
// Time comes from an injected clock; the queue never talks to the API server.
package queue
