#!/usr/bin/env bash
# Installs Debian's python3-kubernetes (the official Python client) so the e2e tests can drive
# skiff with a client other than kubectl and client-go, as users of operators written in Python do.
# Idempotent: does nothing when Debian's python3 already imports it.
set -euo pipefail

if /usr/bin/python3 -c 'import kubernetes' >/dev/null 2>&1; then
	echo "python3-kubernetes already installed"
	exit 0
fi

SUDO=""
if [[ "$(id -u)" -ne 0 ]]; then
	SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
if ! apt-cache show python3-kubernetes >/dev/null 2>&1; then
	$SUDO apt-get -o DPkg::Lock::Timeout=600 update
fi
$SUDO apt-get -o DPkg::Lock::Timeout=600 install -y --no-install-recommends python3-kubernetes
echo "installed: python3-kubernetes $(/usr/bin/python3 -c 'import kubernetes; print(kubernetes.__version__)')"
