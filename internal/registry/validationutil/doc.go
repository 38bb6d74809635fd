// Package validationutil holds what the non-core group registries share: a generic Strategy and
// StatusStrategy built from small per-type functions, a generic /scale accessor, the pod-template
// hooks through which the workload groups reach the core group's pod-spec defaulting and
// validation, and validation helpers whose messages match Kubernetes' (int-or-percent, selectors).
//
// It must not import the API server, storage, or any group package (core included): the hooks exist
// so that apps and batch do not depend on the core registry's internals.
package validationutil
