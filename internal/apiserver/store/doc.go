// Package store is the generic registry store between the API server's HTTP handlers and storage,
// shaped like Kubernetes' generic registry Store: one Store per resource does create (with generated
// names), update (compare-and-swap retries, create-on-update, unconditional updates), delete
// (preconditions, graceful deletion, finalizers, orphan/background/foreground propagation),
// delete-collection, get, list and watch, all with dry run. What differs between resources comes from
// the resource's registry strategies and their optional hooks (registry.BeginCreater, BeginUpdater,
// AfterDeleter, DeletionHolder, ...), so built-in resources and, later, CustomResourceDefinitions
// share it. It is the one place a failed resourceVersion or uid precondition becomes a 409 Conflict
// (errors.go), and it maps storage errors to Kubernetes Status errors.
//
// It owns no HTTP: decoding, content negotiation, managed fields and admission stay in the handlers,
// which hand the store the admission steps as functions (Admission) for it to run at the right moment.
// It must not import the API server's HTTP package; the registry must not import it.
package store
