#!/usr/bin/env bash
# Installs Debian's etcd-server so the storage tests can exercise an external etcd (--etcd-servers).
# Idempotent: does nothing when /usr/bin/etcd already exists.
set -euo pipefail

if [[ -x /usr/bin/etcd ]]; then
	echo "etcd already installed: $(/usr/bin/etcd --version | head -n1)"
	exit 0
fi

SUDO=""
if [[ "$(id -u)" -ne 0 ]]; then
	SUDO="sudo"
fi

export DEBIAN_FRONTEND=noninteractive
# Refresh the package lists only when apt does not know the package yet.
if ! apt-cache show etcd-server >/dev/null 2>&1; then
	$SUDO apt-get -o DPkg::Lock::Timeout=600 update
fi
# The package would otherwise start a system-wide etcd on the default ports 2379/2380,
# which collides with skiff's embedded member: keep services from starting during install.
POLICY_RC=/usr/sbin/policy-rc.d
created_policy=0
if [[ ! -e "$POLICY_RC" ]]; then
	printf '#!/bin/sh\nexit 101\n' | $SUDO tee "$POLICY_RC" >/dev/null
	$SUDO chmod +x "$POLICY_RC"
	created_policy=1
fi
cleanup() {
	if [[ "$created_policy" -eq 1 ]]; then
		$SUDO rm -f "$POLICY_RC"
	fi
}
trap cleanup EXIT

$SUDO apt-get -o DPkg::Lock::Timeout=600 install -y --no-install-recommends etcd-server
# If a service manager started it anyway, stop it: tests start their own etcd on free ports.
if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet etcd 2>/dev/null; then
	$SUDO systemctl disable --now etcd || true
fi
echo "installed: $(/usr/bin/etcd --version | head -n1)"
