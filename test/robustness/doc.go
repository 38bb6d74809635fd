// Package robustness records what clients of a skiff cluster did and saw while faults were
// injected (kill -9, SIGSTOP, etcd compaction, the loss of the etcd leader, network partitions)
// and checks the record against the API's promises, in the manner of etcd's robustness tests.
//
// The non-test files are the parts a long run and the unit tests share:
//   - history.go: the record (operations, watch streams, LISTs, informer snapshots), JSON-encoded
//     so a failing run keeps it;
//   - recorder.go: a raw-REST client for ConfigMaps that records every call with its invocation
//     and response time (an injected clock), its input and its outcome, never retrying on its own
//     (a client-go retry of a create that happened would turn into a false AlreadyExists);
//   - traffic.go: the generators (creates, gets with and without resourceVersion=0, CAS updates,
//     preconditioned deletes, server-side apply, paged and resourceVersion LISTs, watches with
//     bookmarks, an informer per client);
//   - model.go and check.go: the checks, pure functions of a History: per-object linearizability
//     (porcupine, a register with resourceVersion), watch order and completeness, LIST against the
//     replayed history, lost and resurrected writes, informer convergence;
//   - cluster.go and faults.go: a lean starter of `skiff server` processes (one node, or three
//     stacked control planes on 127.0.0.2-4) and the faults, planned by a pure Schedule;
//   - objects.go, workload.go and invariants.go: the control-plane invariants (no pod bound
//     twice, no ReplicaSet beyond spec.replicas once its controller saw the spec, one holder per
//     Lease by its own record), judged on the versions of pods, ReplicaSets and kube-system's
//     Leases that watches recorded while a Deployment and a ReplicaSet were scaled and rolled on
//     simulated nodes (internal/simnode);
//   - partition.go: network partitions, one node's traffic to and from the others dropped by
//     nftables rules on the cgroup of the sockets (each node runs in a cgroup of its own), in a
//     table the test creates and deletes;
//   - run.go: a scenario's run (traffic, watchers and informers on every node's API server and
//     balancer, the faults, recovery, the final LIST); report.go: what a failing run keeps.
//
// The package never touches skiff's internals: everything goes through the HTTP API, etcd's own
// client (compaction) and signals, so what it checks is what a Kubernetes client can rely on.
package robustness
