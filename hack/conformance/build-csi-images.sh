#!/usr/bin/env bash
# Builds, offline, the images the upstream CSI specs deploy (e2e.test's csi-hostpath and CSI mock
# drivers: test/e2e/testing-manifests/storage-csi/{hostpath/hostpath,mock}) and the snapshot
# controller the harness deploys beside them, as single-layer docker-archives tagged exactly as
# those manifests name them, into $CACHE/images. Each binary is built from its own Go module at
# the tag the manifest names:
#   - external-provisioner/v5, which the module proxy serves, from `go mod download` (its module
#     zip has no vendor/ tree: the build downloads its dependencies through the proxy);
#   - the others from a git repository of github.com/kubernetes-csi/<name> at the tag, with its
#     vendor/ tree: the proxy serves no csi-driver-host-path, node-driver-registrar,
#     external-attacher, livenessprobe or external-health-monitor at those versions, no
#     external-resizer v1.13.1 the checksum database knows, and external-snapshotter/v8's go.mod
#     replaces its client module with ./client, which its module zip lacks. The repository is one
#     github.com/kubernetes-csi/<name> that is already on this machine (this script clones
#     nothing): $CACHE/src/git/<name>.git or $CACHE/src/git/<name> (e.g. `git clone --mirror
#     https://github.com/kubernetes-csi/<name> $CACHE/src/git/<name>.git` on a machine with
#     network), else $SKIFF_CSI_GIT_MIRROR/kubernetes-csi+<name>/repo.
# The sidecars' images are the binary alone, as their distroless/static images; hostpathplugin's is
# busybox with the tools the driver and the specs run in it (util-linux's mount, umount, findmnt,
# losetup, fallocate, blockdev; GNU tar and gzip for snapshots; cp, dd, du; socat for the testing
# manifest's proxy), taken from the host or from Debian packages with the libraries they load.
#
# usage: hack/conformance/build-csi-images.sh CACHE_DIR SKIFF_BINARY [K8S_VERSION]
#        hack/conformance/build-csi-images.sh --list CACHE_DIR [K8S_VERSION]
# --list prints the images the CSI specs use (one per line) and builds nothing. Every image it
# could not build is named on stderr and in $CACHE/images/.csi-missing; the exit status is 0 even
# then, so the harness can run and name them (a spec needing one fails on a pull, a harness gap).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
list_only=0
if [[ ${1:-} == --list ]]; then
	list_only=1
	shift
	cache=${1:?usage: build-csi-images.sh --list CACHE_DIR [K8S_VERSION]}
	version=${2:-v1.33.13}
else
	cache=${1:?usage: build-csi-images.sh CACHE_DIR SKIFF_BINARY [K8S_VERSION]}
	skiff=${2:?usage: build-csi-images.sh CACHE_DIR SKIFF_BINARY [K8S_VERSION]}
	version=${3:-v1.33.13}
fi
src=$cache/src/kubernetes-$version
manifests=$src/test/e2e/testing-manifests/storage-csi
[[ -f $src/.ready ]] || { echo "no k8s source in $src: run build-e2e.sh first" >&2; exit 1; }

# The snapshot controller the harness deploys (cluster/addons/volumesnapshots names v8.1.0; the
# harness runs the one matching the csi-snapshotter sidecar the manifests name, v8.2.0).
snapshot_controller=registry.k8s.io/sig-storage/snapshot-controller:v8.2.0

# wanted: every image the CSI drivers' manifests name, and the snapshot controller.
wanted() {
	{
		{
			cat "$manifests"/hostpath/hostpath/*.yaml "$manifests"/mock/*.yaml
			# The "any volume data source" provisioning spec's populator and validator.
			[[ ! -d $manifests/any-volume-datasource ]] || find "$manifests/any-volume-datasource" -name '*.yaml' -exec cat {} +
		} |
			sed -n 's/^[[:space:]]*image:[[:space:]]*\([^[:space:]#]*\).*/\1/p'
		echo "$snapshot_controller"
	} | sort -u
}
if ((list_only)); then
	wanted
	exit 0
fi

out=$cache/images
work=$cache/rootfs
build_dir=$cache/build/csi
# Debian packages of their own: build-images.sh's fetch_debs stamp names its own list.
debs=$cache/debs-csi
debroot=$cache/debroot-csi
deb_packages=(socat libwrap0)
mkdir -p "$out" "$work" "$build_dir" "$debs" "$debroot"
# have, fetch_debs, copy_bin, tool, busybox_root, build
. "$here/image-lib.sh"

# Bump recipe when a CSI image's recipe changes, so existing caches rebuild those images only.
recipe=1
if [[ "$(cat "$out/.csi-recipe" 2>/dev/null)" != "$recipe" ]]; then
	wanted | while read -r image; do
		[[ $image == */sig-storage/* ]] && rm -f "$out/$(echo "$image" | sed 's#[/:@]#_#g').tar"
	done
	echo "$recipe" >"$out/.csi-recipe"
fi

# recipe_of NAME: where the binary of image NAME (without registry and tag) comes from: the
# source ("git:<repository of kubernetes-csi>" or "mod:<module path>") and the main package.
recipe_of() {
	case $1 in
	hostpathplugin) echo "git:csi-driver-host-path ./cmd/hostpathplugin" ;;
	csi-node-driver-registrar) echo "git:node-driver-registrar ./cmd/csi-node-driver-registrar" ;;
	csi-attacher) echo "git:external-attacher ./cmd/csi-attacher" ;;
	csi-resizer) echo "git:external-resizer ./cmd/csi-resizer" ;;
	livenessprobe) echo "git:livenessprobe ./cmd/livenessprobe" ;;
	csi-external-health-monitor-controller) echo "git:external-health-monitor ./cmd/csi-external-health-monitor-controller" ;;
	csi-provisioner) echo "mod:github.com/kubernetes-csi/external-provisioner/v5 ./cmd/csi-provisioner" ;;
	csi-snapshotter) echo "git:external-snapshotter ./cmd/csi-snapshotter" ;;
	snapshot-controller) echo "git:external-snapshotter ./cmd/snapshot-controller" ;;
	# The "any volume data source" provisioning spec's populator and the validator beside it.
	hello-populator) echo "git:lib-volume-populator ./example/hello-populator" ;;
	volume-data-source-validator) echo "git:volume-data-source-validator ./cmd/volume-data-source-validator" ;;
	*) return 1 ;;
	esac
}

# git_dir NAME: a git repository of github.com/kubernetes-csi/NAME on this machine, if any.
git_dir() {
	local d
	for d in "$cache/src/git/$1.git" "$cache/src/git/$1" "${SKIFF_CSI_GIT_MIRROR:-/work/.mirror}/kubernetes-csi+$1/repo"; do
		git --git-dir="$d" rev-parse --git-dir >/dev/null 2>&1 && { echo "$d"; return 0; }
		git -C "$d" rev-parse --git-dir >/dev/null 2>&1 && { git -C "$d" rev-parse --absolute-git-dir; return 0; }
	done
	return 1
}

# module_source SOURCE TAG: a directory holding SOURCE's module at TAG (its own go.mod and, from
# these repositories, vendor/), unpacked under $build_dir/src.
module_source() {
	local source=$1 tag=$2 dir gd
	case $source in
	git:*)
		dir=$build_dir/src/${source#git:}-$tag
		[[ -f $dir/.ready ]] && { echo "$dir"; return 0; }
		gd=$(git_dir "${source#git:}") || { echo "no git repository of kubernetes-csi/${source#git:} (see the header of $0)" >&2; return 1; }
		git --git-dir="$gd" rev-parse --verify -q "$tag^{commit}" >/dev/null || { echo "$gd has no tag $tag" >&2; return 1; }
		rm -rf "$dir" && mkdir -p "$dir"
		git --git-dir="$gd" archive "$tag" | tar -x -C "$dir"
		touch "$dir/.ready"
		;;
	mod:*)
		dir=$(GOWORK=off GOFLAGS=-mod=mod go mod download -json "${source#mod:}@$tag" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
		[[ -d $dir ]] || { echo "the module proxy gave no source for ${source#mod:}@$tag" >&2; return 1; }
		;;
	esac
	echo "$dir"
}

# gobuild_csi DIR PKG TAG OUT: a static binary of PKG from the module in DIR, from its vendor/
# directory when it has one (no download at all), else through the module proxy. A module zip from
# the proxy keeps only vendor/modules.txt of a vendor directory, so that alone does not count.
gobuild_csi() {
	local dir=$1 pkg=$2 tag=$3 binary=$4 mod=mod
	compgen -G "$dir/vendor/*/" >/dev/null && mod=vendor
	(cd "$dir" && GOWORK=off GOFLAGS=-mod=$mod GOTOOLCHAIN=local CGO_ENABLED=0 nice -n 19 \
		go build -trimpath -ldflags "-s -X main.version=$tag" -o "$binary.tmp" "$pkg")
	mv "$binary.tmp" "$binary"
}

# sidecar_root ROOT BINARY NAME: the binary alone at /NAME, as a distroless/static image holds it
# (with /tmp, and root and nobody in /etc/passwd).
sidecar_root() {
	local root=$1 binary=$2 name=$3
	rm -rf "$root"
	mkdir -p "$root"/{etc,tmp}
	chmod 1777 "$root/tmp"
	printf 'root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n' >"$root/etc/passwd"
	printf 'root:x:0:\nnogroup:x:65534:\n' >"$root/etc/group"
	install -m 0755 "$binary" "$root/$name"
}

# hostpath_root ROOT BINARY: busybox with the tools the hostpath driver runs (mount-utils and its
# volumepathhandler exec mount, umount, findmnt, losetup, blockdev; snapshots are tar czf/zxvf;
# clones cp -a and dd; capacity fallocate) and socat, which csi-hostpath-testing.yaml runs in it.
hostpath_root() {
	local root=$1 binary=$2 t
	busybox_root "$root"
	for t in mount umount findmnt losetup blockdev fallocate tar gzip cp dd du socat; do
		rm -f "$root/bin/$t" "$root/usr/bin/$t" "$root/sbin/$t" "$root/usr/sbin/$t"
		tool "$root" "$t"
	done
	ln -sf /proc/self/mounts "$root/etc/mtab"
	install -m 0755 "$binary" "$root/hostpathplugin"
}

missing=()
while read -r image; do
	have "$image" && continue
	ref=${image%:*} tag=${image##*:}
	name=${ref##*/}
	if ! rec=$(recipe_of "$name"); then
		# Not a CSI image of ours (busybox is build-images.sh's).
		[[ $ref == */sig-storage/* ]] && missing+=("$image")
		continue
	fi
	source=${rec% *} pkg=${rec#* }
	binary=$build_dir/bin/$name-$tag
	mkdir -p "$build_dir/bin"
	if [[ ! -x $binary ]]; then
		echo "building $name $tag from $source"
		if ! dir=$(module_source "$source" "$tag") || ! gobuild_csi "$dir" "$pkg" "$tag" "$binary"; then
			missing+=("$image")
			continue
		fi
	fi
	root=$work/csi-$name
	if [[ $name == hostpathplugin ]]; then
		hostpath_root "$root" "$binary" || { missing+=("$image"); continue; }
	else
		sidecar_root "$root" "$binary" "$name"
	fi
	build "$image" "$root" --entrypoint "/$name"
done < <(wanted)

printf '%s\n' "${missing[@]}" | sed '/^$/d' >"$out/.csi-missing"
if ((${#missing[@]})); then
	echo "CSI images not built (specs needing them fail on a pull): ${missing[*]}" >&2
fi
exit 0
