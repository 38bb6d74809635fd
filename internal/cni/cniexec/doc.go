// Package cniexec runs skiff's CNI plugin (internal/cni) from a package initializer, so that an
// exec of the skiff binary as the plugin skips the initialization of nearly everything else the
// binary links (the Kubernetes API scheme, etcd, gRPC, protobuf registries): about 20 ms of CPU
// per exec, paid three times per sandbox (ADD and two DELs).
//
// It relies on Go's package initialization order (the language specification, since Go 1.21):
// packages are initialized in the order of their import paths, each once its own imports are.
// This package needs only internal/cni and what that imports (netlink, x/sys, the standard
// library), so it is initialized before the heavy packages, whose import paths (go.etcd.io,
// google.golang.org, k8s.io) sort after it or depend on ones that do. cmd/skiff imports it for
// its side effect; TestPluginSkipsHeavyInits checks the effect on the real binary.
//
// It must not import anything beyond internal/cni, and must do nothing unless the binary was
// invoked under the plugin's name.
package cniexec
