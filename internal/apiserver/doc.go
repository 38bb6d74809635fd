// Package apiserver is skiff's HTTP API server: request parsing, authentication, authorization,
// admission, content negotiation (JSON, YAML, protobuf, Table, PartialObjectMetadata), and the generic
// REST verbs (get, list, watch, create, update, patch in all four kinds, delete, deletecollection)
// over any registry.Resource, plus the status, scale, binding, eviction and finalize subresources and
// the allocation of service cluster IPs and node ports.
//
// It is the only component that touches storage; everything else in skiff reaches it through
// client-go. It knows no resource type by heart except where Kubernetes itself special-cases one
// (pod binding and eviction, namespace deletion, service allocation), so CustomResourceDefinitions
// can plug in later.
package apiserver
