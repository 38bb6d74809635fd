#!/usr/bin/env bash
# Builds upstream kube-scheduler, kube-controller-manager and kube-apiserver from the same
# k8s.io/kubernetes module source the conformance harness uses (build-e2e.sh --source-only
# prepares it), for TestUpstreamComponents and the benchmarks' --upstream. A test tool only:
# never a dependency of skiff's go.mod.
#
# usage: hack/conformance/build-components.sh [OUT_DIR] [K8S_VERSION] [COMPONENT...]
#   OUT_DIR    default ${XDG_CACHE_HOME:-~/.cache}/skiff-upstream/bin
#   COMPONENT  default: kube-scheduler kube-controller-manager kube-apiserver
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cache_root=${XDG_CACHE_HOME:-$HOME/.cache}
out=${1:-$cache_root/skiff-upstream/bin}
version=${2:-v1.33.13}
shift $(($# < 2 ? $# : 2))
components=("$@")
((${#components[@]})) || components=(kube-scheduler kube-controller-manager kube-apiserver)
cache=${SKIFF_CONFORMANCE_CACHE:-$cache_root/skiff-conformance}

"$here/build-e2e.sh" "$cache" "$version" --source-only
export GOWORK=off GOFLAGS=-mod=mod
src=$cache/src/kubernetes-$version
mkdir -p "$out"
for c in "${components[@]}"; do
	echo "building $c $version into $out"
	start=$SECONDS
	(cd "$src" && nice -n 19 go build -o "$out/$c.tmp" "./cmd/$c")
	mv "$out/$c.tmp" "$out/$c"
	echo "built $c in $((SECONDS - start))s"
done
