#!/usr/bin/env bash
# Benchmarks skiff's built-in HTTP data plane beside Debian's nginx as a reverse proxy to the same
# pods (test/bench/cmd/ingressbench). Not part of .ci/run. See docs/user/ingress.md.
#
#   hack/ingressbench.sh                    # 1, 64 and 512 connections, HTTP/1.1 and HTTP/2, 10 s each
#   hack/ingressbench.sh --duration 5s --conns 64
#
# nginx comes from Debian's package, unpacked (not installed: the package would start a system
# nginx on port 80) into ${XDG_CACHE_HOME:-~/.cache}/skiff-ingressbench. Runs as root (skiff runs
# its containerd); needs kubectl.
set -euo pipefail
cd "$(dirname "$0")/.."
cache=${XDG_CACHE_HOME:-$HOME/.cache}/skiff-ingressbench
nginx=$cache/root/usr/sbin/nginx
if [ ! -x "$nginx" ]; then
  mkdir -p "$cache"
  (cd "$cache" && apt-get download nginx >/dev/null && dpkg -x nginx_*.deb root)
fi
go build -o bin/skiff ./cmd/skiff
exec go run ./test/bench/cmd/ingressbench --skiff bin/skiff --nginx "$nginx" "$@"
