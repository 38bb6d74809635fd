// Package namespacelifecycle is Kubernetes' NamespaceLifecycle admission plugin: a new namespaced
// object is refused when its namespace does not exist (the namespace's NotFound) or is being
// terminated (a Forbidden with the NamespaceTerminating cause, as upstream words it), so that a
// namespace's deletion is not raced by new content. Events are still let in: they report on the
// last objects going away. The namespace is read through admission's Lookup, which answers from
// the watch cache when it holds the namespace (and from storage when it does not, so a namespace
// created a moment ago is found); for 30 s after this server admitted a namespace's deletion, a
// namespace the cache still shows active is read again from storage, as upstream's plugin forces
// a live lookup then.
package namespacelifecycle
