package sysctl

import "strings"

// Namespace is the kernel namespace a sysctl belongs to; "" means it is not known to be namespaced
// (a node-wide setting).
type Namespace string

const (
	// IPC holds System V IPC and POSIX message queue sysctls.
	IPC Namespace = "ipc"
	// Net holds the network namespace's sysctls.
	Net Namespace = "net"
)

// NamespaceOf classifies a (normalized) sysctl name or pattern (a trailing "*") as Kubernetes does:
// kernel.sem, kernel.shm*, kernel.msg* and fs.mqueue.* are IPC, net.* is Net.
func NamespaceOf(name string) Namespace {
	name = strings.TrimSuffix(name, "*")
	switch {
	case name == "kernel.sem", strings.HasPrefix(name, "kernel.shm"), strings.HasPrefix(name, "kernel.msg"), strings.HasPrefix(name, "fs.mqueue."):
		return IPC
	case strings.HasPrefix(name, "net."):
		return Net
	}
	return ""
}

// Normalize turns a slash-separated sysctl name into the dotted form: when the first separator is
// '/', slashes and dots swap, so "net/ipv4/conf/eth0.100/rp_filter" is
// "net.ipv4.conf.eth0/100.rp_filter".
func Normalize(name string) string {
	i := strings.IndexAny(name, "./")
	if i < 0 || name[i] == '.' {
		return name
	}
	return strings.Map(func(r rune) rune {
		switch r {
		case '.':
			return '/'
		case '/':
			return '.'
		}
		return r
	}, name)
}
