// Package defaulttolerationseconds is Kubernetes' DefaultTolerationSeconds admission plugin: a new
// pod that tolerates neither the node.kubernetes.io/not-ready nor the node.kubernetes.io/unreachable
// NoExecute taint gets a toleration of each for a bounded time (kube-apiserver's
// --default-not-ready-toleration-seconds and --default-unreachable-toleration-seconds, 300 s unless
// set), so that a short node outage does not evict it at once but a long one does. A pod's own
// toleration of a taint (or of every NoExecute taint) is kept as it is.
package defaulttolerationseconds
