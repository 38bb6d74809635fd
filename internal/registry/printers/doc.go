// Package printers gives the server-side table printing (the metav1.Table columns and cells behind
// `kubectl get`) for every built-in resource skiff serves, so that kubectl shows the same columns
// and cell values against skiff as against Kubernetes.
//
// It owns column definitions and per-object cell logic only: the API server wraps the cells in a
// metav1.Table (row objects, list metadata, NoHeaders, priority filtering is the client's job).
// Like Kubernetes' API server it always produces the -o wide cells; kubectl hides priority-1
// columns itself.
//
// It must not import the API server, storage or any upstream printer implementation, keeps no
// state, and takes the current time from its caller so ages are deterministic.
package printers
