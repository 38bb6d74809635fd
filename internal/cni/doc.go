// Package cni is skiff's own CNI plugin for its pod network: one bridge per node, a veth pair per
// pod with an address from the node's pod CIDRs, all done with netlink inside one plugin call
// (what the bridge, host-local and portmap plugins did in three execs and, for ipMasq, a
// few iptables runs per pod). It delegates hostPort mappings to the portmap plugin only for pods
// that have some. containerd's loopback network stays with the stock loopback plugin: a 1.5 ms
// exec, where an exec of the skiff binary costs about 26 ms of package initialization.
//
// It owns: the plugin protocol (ADD, DEL, CHECK, VERSION on stdin/env/stdout), the addresses it
// hands out (files under the node's data dir, so they survive restarts and are released on DEL),
// the node's bridge, the pods' veth pairs, and the one masquerade rule per pod CIDR it installs
// when it creates the bridge.
//
// It must not: touch interfaces, addresses or iptables chains other than those it names itself
// (the bridge named in its config, veths named skv<hash>, chains named CNI-SKIFF-<hash>), route
// anything off the node, or import anything of skiff's server side: the skiff binary runs it as a
// short-lived process before any of its components starts.
//
// The decisions (config validation, which address to take, interface names, the CNI result) are
// pure functions in plan.go, table-tested; netlink.go and ipam.go carry them out.
package cni
