// Package apiserver is skiff's HTTP API server: request parsing, authentication, authorization,
// admission, content negotiation (JSON, YAML, protobuf, Table, PartialObjectMetadata), and the generic
// REST verbs (get, list, watch, create, update, patch in all four kinds, delete, deletecollection)
// over any registry.Resource, plus the scale subresource; subresources that are views of the whole
// object (status, namespaces/finalize, ...) are served generically from
// registry.Resource.SubresourceStrategy, and those that are requests acting on it (pods/binding,
// pods/eviction, serviceaccounts/token) from registry.Resource.Actions (action.go: decode the body,
// lend the action the stores, the clock and admission, write its answer).
//
// Requests are authenticated (client certificates, service account tokens), may impersonate
// another identity (Impersonate-* headers, each checked with the `impersonate` verb), and are
// authorized by Config.Authorizer (the cluster package wires system:masters, Node, RBAC); a denial is
// Kubernetes' 403. Resources with registry.Resource.Compute (the review APIs) are create-only and
// stored nowhere: the handler decodes the object and lends the resource the authorizer, its rules
// and token authentication (registry.ComputeEnv).
//
// Handlers only speak HTTP: they decode, read options, wire admission (which needs the user from the
// request context) and call the resource's store (internal/apiserver/store), which owns the write
// semantics: system fields, strategies and their hooks, preconditions and conflicts, deletion and
// finalizers. It is the only component that touches storage; everything else in skiff reaches it
// through client-go. It knows no resource type by heart except where Kubernetes itself special-cases
// one (the legacy bindings collection, wiring the service allocator into the services strategy).
//
// CustomResourceDefinitions plug in as resources built at run time (internal/registry/customresource):
// SyncCustomResources and RunCustomResources watch the definitions, set their status, add and remove
// the resources (with their own decoding scheme, registry.Resource.Objects) and delete a definition's
// objects before its cleanup finalizer; a Webhook conversion strategy is called from here.
package apiserver
