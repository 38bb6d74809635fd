// Package runtimeclass is Kubernetes' RuntimeClass admission plugin: a new pod's runtimeClassName
// must name a RuntimeClass (else the pod is Forbidden); the class's overhead becomes spec.overhead
// (a different one given in the pod is refused) and its scheduling node selector and tolerations
// are merged into the pod's (a conflicting node selector is refused). The merge is a pure function
// of the pod spec and the class; the class is read through admission's Lookup.
package runtimeclass
