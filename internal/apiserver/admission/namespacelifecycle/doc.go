// Package namespacelifecycle is Kubernetes' NamespaceLifecycle admission plugin: a new namespaced
// object is refused when its namespace does not exist (the namespace's NotFound) or is being
// terminated (a Forbidden with the NamespaceTerminating cause, as upstream words it), so that a
// namespace's deletion is not raced by new content. Events are still let in: they report on the
// last objects going away. The namespace is read through admission's Lookup, straight from storage.
package namespacelifecycle
