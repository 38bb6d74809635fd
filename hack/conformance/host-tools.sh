#!/usr/bin/env bash
# Installs what the conformance harness runs on the host and a fresh Debian machine lacks, before
# anything is built: the etcd 3.5.21-0 test image is made from Debian's /usr/bin/etcd
# (hack/install-etcd.sh), the runtime from hack/install-runtime.sh, the pause image is compiled
# static (gcc, libc6-dev), the test network is made with iproute2 and util-linux, e2e.test and
# the harness call kubectl (built from the same k8s.io/kubernetes source as e2e.test into
# CACHE_DIR/bin when the host has none). Go itself is not installed: it must match go.mod.
#
# usage: hack/conformance/host-tools.sh CACHE_DIR K8S_VERSION [--dry-run]
#   --dry-run  print what is missing and what would install it; install nothing
# Prints one line per step ("run ...", "apt-get install ...", "build kubectl ...", "missing ...").
set -euo pipefail

here=$(cd "${0%/*}" && pwd)
repo=$(cd "$here/../.." && pwd)
cache=${1:?usage: host-tools.sh CACHE_DIR K8S_VERSION [--dry-run]}
version=${2:?usage: host-tools.sh CACHE_DIR K8S_VERSION [--dry-run]}
dry=0
[[ ${3:-} == --dry-run ]] && dry=1
# kubectl built here is found there (the harness appends it to PATH, after the host's own).
export PATH=$PATH:$cache/bin

# TOOL HOW: how each command the harness (conformance.sh, build-e2e.sh, build-images.sh,
# build-csi-images.sh, which checks out the kubernetes-csi repositories with git) runs
# gets onto a host that lacks it: script:PATH (relative to the repository), deb:PACKAGE,
# kubectl (built), or none:HINT. Commands of Debian's essential packages (coreutils, findutils,
# sed, grep, mawk, dpkg, apt, libc-bin, util-linux's mount) are assumed.
needs=(
	"etcd script:hack/install-etcd.sh"
	"containerd script:hack/install-runtime.sh"
	"runc script:hack/install-runtime.sh"
	"iptables script:hack/install-runtime.sh"
	"conntrack script:hack/install-runtime.sh"
	"busybox script:hack/install-runtime.sh"
	"gcc deb:gcc"
	"ip deb:iproute2"
	"bridge deb:iproute2"
	"ss deb:iproute2"
	"nsenter deb:util-linux"
	"pgrep deb:procps"
	"unshare deb:util-linux"
	"git deb:git"
	"kubectl kubectl"
	"go none:install Go (go.mod's version, https://go.dev/dl) and put it on PATH"
)

scripts=() debs=() build_kubectl='' missing=()
add() { # add ARRAY-NAME VALUE: appends VALUE unless the array holds it
	local -n arr=$1
	local v
	for v in "${arr[@]}"; do [[ $v == "$2" ]] && return; done
	arr+=("$2")
}
for entry in "${needs[@]}"; do
	tool=${entry%% *} how=${entry#* }
	command -v "$tool" >/dev/null 2>&1 && continue
	case $how in
	script:*) add scripts "${how#script:}" ;;
	deb:*) add debs "${how#deb:}" ;;
	kubectl) build_kubectl=1 ;;
	none:*) missing+=("$tool: ${how#none:}") ;;
	esac
done
# The pause image links statically: gcc needs libc.a (libc6-dev, only recommended by gcc).
if ! command -v gcc >/dev/null 2>&1 || [[ $(gcc -print-file-name=libc.a 2>/dev/null) != /* ]]; then
	add debs libc6-dev
fi

for s in "${scripts[@]}"; do echo "run $s"; done
((${#debs[@]})) && echo "apt-get install ${debs[*]}"
[[ -n $build_kubectl ]] && echo "build kubectl $version into $cache/bin"
for m in "${missing[@]}"; do echo "missing $m"; done
if ((!${#scripts[@]} && !${#debs[@]})) && [[ -z $build_kubectl ]] && ((!${#missing[@]})); then
	echo "host tools: all present"
fi
((dry)) && exit 0
((${#missing[@]})) && exit 1

for s in "${scripts[@]}"; do "$repo/$s" >/dev/null; done
if ((${#debs[@]})); then
	export DEBIAN_FRONTEND=noninteractive
	apt-get -o DPkg::Lock::Timeout=600 install -y --no-install-recommends "${debs[@]}" >/dev/null ||
		{ apt-get -o DPkg::Lock::Timeout=600 update >/dev/null &&
			apt-get -o DPkg::Lock::Timeout=600 install -y --no-install-recommends "${debs[@]}" >/dev/null; }
fi
if [[ -n $build_kubectl ]]; then
	"$here/build-e2e.sh" "$cache" "$version" --source-only >/dev/null
	mkdir -p "$cache/bin"
	(cd "$cache/src/kubernetes-$version" && GOWORK=off GOFLAGS=-mod=mod nice -n 19 go build -o "$cache/bin/kubectl.tmp" ./cmd/kubectl)
	mv "$cache/bin/kubectl.tmp" "$cache/bin/kubectl"
fi
# Whatever was installed must now be there.
for entry in "${needs[@]}"; do
	tool=${entry%% *}
	command -v "$tool" >/dev/null 2>&1 || { echo "host-tools: $tool still missing after the install" >&2; exit 1; }
done
