// Package bootstrappolicy is the default RBAC policy Kubernetes v1.33 ships (cluster roles and
// their bindings, the per-controller roles, the kube-system and kube-public roles), held as data.
// The API server creates what is missing at every start and adds missing rules and subjects to
// objects annotated rbac.authorization.kubernetes.io/autoupdate=true, as kube-apiserver does with
// --authorization-mode=RBAC.
//
// The rules are upstream's facts; skiff adds only the bindings its single controller-manager
// identity needs (see ControllerManagerBindings). Pure data and pure reconcile functions: no I/O.
package bootstrappolicy
