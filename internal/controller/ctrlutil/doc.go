// Package ctrlutil holds the pieces shared by skiff's controllers: the
// dependencies every controller is built from (Deps), the rate-limited work
// loop, the informer wiring (Wiring registers a controller's handlers and
// collects the caches it waits for; On, EnqueueOwner, PodServiceHandlers and
// EnqueueSliceService are the handlers controllers share), creation/deletion
// expectations, owner-reference helpers, pod readiness and the pod ranking
// used to choose which pods to delete first, and the CertificateSigningRequest
// helpers the csr controllers share (conditions, parsing, the kubelet signers'
// rules).
//
// It must not hold any controller's reconcile logic, and like every controller
// package it reaches the cluster only through client-go.
package ctrlutil
