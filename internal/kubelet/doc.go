// Package kubelet is skiff's node agent: it registers its Node, keeps the
// node Lease and status fresh, and runs the pods bound to the node in real
// containers through a CRI runtime (package cri), writing their status back
// through the pods/status subresource.
//
// Design: one goroutine per pod (a pod worker) runs a level-triggered sync
// that compares the pod's spec with what the runtime reports and takes the
// next steps (sandbox, init containers in order, containers, restarts with
// CrashLoopBackOff, ephemeral containers once each, termination). Events that may change a pod's state (an
// informer event, a container exiting seen by the relister, a back-off
// expiring) only wake the pod's worker. Runtime state is never cached beyond a
// sync: the runtime's labels and annotations are the source of truth, so a
// restarted kubelet adopts running pods instead of restarting them.
//
// Parts: *Kubelet is the pod sync (informer, pod workers, runPod, status,
// probes, resize) and the wiring that builds the other parts in New, each
// holding its own fields and seeing the rest through a small interface:
// nodeStatus (nodestatus.go, node.go, lease.go) owns the Node object, its
// status and Lease and the CNI network list; volumeManager (volumemanager.go,
// volumes.go, csivolume.go) owns the pods' volumes, the CSI drivers'
// registration and the volumes' reconstruction from disk, asked by the pod
// sync through podVolumes; server (server.go, streamtarget.go, attach.go,
// resourcestats.go) answers the HTTPS API from a podSource, the runtime and
// a volumeUsageSource.
//
// In-place pod resize (pods/resize): the resources each container was
// allocated and those applied to it are kept per pod and checkpointed in the
// pod's data dir (resize.go decides, resize_sync.go carries it out); a
// resize that fits the node is applied through the runtime's
// UpdateContainerResources, or by a restart where the container's
// resizePolicy says so, and reported in status.containerStatuses[].resources
// and the PodResizePending/PodResizeInProgress conditions.
//
// Entry points: RunWorker runs a node's runtime (a supervised containerd,
// package containerd, unless an external CRI endpoint is given) and its
// kubelet; New and Run run a kubelet on a given cri.Runtime; Handler and
// Serve expose the HTTPS API (logs, exec, attach, port-forward) the API
// server calls with its client certificate.
//
// It reaches the cluster only through client-go and must not import the API
// server, storage or etcd packages. Time comes from the injected clock.
package kubelet
