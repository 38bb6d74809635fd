// Package cache keeps the scheduler's view of the cluster: every node with the
// pods bound or assumed onto it, and produces cheap per-cycle Snapshots.
//
// Assumed pods are counted from the moment the scheduler decides until the
// informer reports the binding, so concurrent asynchronous binds never
// overcommit a node. The cache is fed by informer handlers and by the
// scheduler; it never talks to the API server.
package cache
