// Package storage declares the storage.k8s.io/v1 resources: storageclasses, csidrivers, csinodes,
// csistoragecapacities and volumeattachments (with /status), with Kubernetes' defaults, validation
// and immutable fields. The scheduler and the volume controllers list these; skiff only stores and
// validates them, it provisions and attaches nothing here. It must not import the API server or
// storage; table printing lives in the printers package.
package storage
