// Package install places skiff on a host and takes it off again: `skiff install` copies the binary
// and writes a systemd unit (as k3s's installer does), and `skiff uninstall` removes everything a
// node left on the host (its containers and containerd, the mounts under its data dir, its pods'
// network namespaces, veths, leases and bridge, its service-proxy, network-policy and pod-network
// rules, the data dir, the unit and the binary), each planned from what is on the host before
// anything is touched. It works on the host, never on a running node: it does not import the
// node's assembly (internal/cluster), and an uninstall refuses a data dir a node holds (nodelock).
package install
