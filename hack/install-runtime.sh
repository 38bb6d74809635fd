#!/bin/sh
# Installs the container runtime a skiff worker needs, from Debian packages:
# containerd (with its CRI plugin and ctr), runc and crun (the OCI runtimes
# --oci-runtime chooses between), the CNI plugins in /usr/lib/cni,
# nftables (the service proxy's default backend), iptables (its iptables mode, the pod
# network's masquerade and portmap), conntrack (the proxy deletes stale
# UDP entries with it) and busybox-static (the offline images'
# only binary). Idempotent: packages already present are not touched, and the
# package index is refreshed only when something is missing.
# containerd is not started here: skiff supervises it as a child process.
set -eu

packages="containerd runc crun containernetworking-plugins nftables iptables conntrack busybox-static"

missing=""
for pkg in $packages; do
	if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
		missing="$missing $pkg"
	fi
done

if [ -z "$missing" ]; then
	echo "install-runtime: all present:$(printf ' %s' $packages)"
	exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
	echo "install-runtime: must run as root to install:$missing" >&2
	exit 1
fi

export DEBIAN_FRONTEND=noninteractive
# shellcheck disable=SC2086 # word splitting of the package list is intended.
if ! apt-get install -y --no-install-recommends $missing; then
	apt-get update
	apt-get install -y --no-install-recommends $missing
fi

# Debian's containerd package ships a service unit; on hosts with systemd it may
# have been started system-wide. skiff runs its own instance with its own
# config and sockets, so the system one is harmless, but say so.
if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet containerd 2>/dev/null; then
	echo "install-runtime: note: a system containerd is running; skiff starts its own instance"
fi

for bin in containerd ctr runc crun /usr/lib/cni/bridge /usr/lib/cni/host-local /usr/lib/cni/portmap /usr/lib/cni/loopback nft iptables conntrack busybox; do
	if ! command -v "$bin" >/dev/null 2>&1 && [ ! -x "$bin" ]; then
		echo "install-runtime: $bin missing after install" >&2
		exit 1
	fi
done
echo "install-runtime: installed:$missing"
