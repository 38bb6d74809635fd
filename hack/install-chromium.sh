#!/usr/bin/env bash
# Installs Debian's chromium so the e2e dashboard tests (test/e2e/dashboard_test.go) can drive the
# dashboard in a real headless browser through chromedp. Idempotent.
set -euo pipefail

if command -v chromium >/dev/null 2>&1; then
	echo "chromium already installed"
	exit 0
fi

SUDO=""
if [[ "$(id -u)" -ne 0 ]]; then
	SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
if ! apt-cache show chromium >/dev/null 2>&1; then
	$SUDO apt-get -o DPkg::Lock::Timeout=600 update
fi
$SUDO apt-get -o DPkg::Lock::Timeout=600 install -y --no-install-recommends chromium
