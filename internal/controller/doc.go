// Package controller is the root of skiff's controller manager.
//
// Each sub-package holds one controller (replicaset, deployment, ...) built the
// way sample-controller is: shared informers feed event handlers that only
// enqueue keys; workers run an idempotent, level-triggered reconcile(key); a
// failed reconcile is requeued with rate limiting. Controllers never mutate
// objects from the informer cache (they DeepCopy first), take time from an
// injected clock, and reach the cluster only through client-go: they must never
// import the API server, storage or etcd packages.
//
// ctrlutil holds what several controllers share (work loop, expectations, pod
// ranking); manager selects controllers and runs them under leader election.
package controller
