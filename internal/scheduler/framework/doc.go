// Package framework defines skiff's scheduling framework: the extension point
// interfaces plugins implement (PreFilter, Filter, PostFilter, PreScore, Score,
// Reserve, PreBind, Bind), the Status they return, the per-cycle CycleState, the node
// view plugins decide on (NodeInfo, PodInfo, Resource), the plugin registry and
// profiles loaded from a KubeSchedulerConfiguration-like file, and the Framework
// that runs a profile's plugins in order.
//
// It owns no I/O: it never talks to the API server itself (plugins that must,
// such as the binder, get a client through Handle), and it keeps no
// package-level mutable state.
package framework
