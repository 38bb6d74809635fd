// Package noderestriction is Kubernetes' NodeRestriction admission plugin. The Node authorizer
// (internal/authz/node) decides that a request is of a kind a kubelet may make; this plugin decides
// about the object: a kubelet writes only its own Node (no labels outside the ones kubelets are
// trusted with, no taint changes), only pods bound to it (their status, deletion, eviction, and
// mirror pods), only its own node Lease, and asks for service account tokens only bound to a pod on
// it. Pods are read through admission's Lookup; CONNECTs are the authorizer's alone, as upstream.
package noderestriction
