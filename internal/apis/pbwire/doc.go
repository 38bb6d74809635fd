// Package pbwire writes and reads protobuf messages byte for byte as gogo-generated Kubernetes
// code does, for the API types skiff defines itself (apiextensions.k8s.io/v1,
// apiregistration.k8s.io/v1) where upstream's generated marshalers live in modules skiff does
// not depend on. It holds only the wire mechanics (fields in the order the caller writes them,
// nested messages, the first error kept); each API package says which fields its messages have.
// Standard protowire underneath; nothing of Kubernetes.
package pbwire
