#!/usr/bin/env bash
# Builds, offline, the container images the upstream [Conformance] specs use, as
# single-layer docker-archives tagged exactly as e2e.test asks for them
# (`e2e.test --list-images`), into $CACHE/images. Each image's root filesystem
# is assembled under $CACHE/rootfs from: binaries built from the k8s.io/kubernetes
# module source (agnhost, pause, nonewprivs), the host's static busybox, and
# Debian binaries (from the host, or `apt-get download` + `dpkg -x` when the
# host lacks them) with the shared libraries they load. `skiff images build-dir`
# writes the archives. Images already built for this k8s version are kept.
#
# usage: hack/conformance/build-images.sh CACHE_DIR SKIFF_BINARY [K8S_VERSION]
# Substitutes (see docs/user/conformance.md): nginx is Debian's 1.22 under the
# 1.14/1.15 tags, agnhost's /coredns is CoreDNS 1.11.3 (upstream's image has 1.6.2), httpd is busybox httpd, distroless-iptables is busybox + conntrack,
# jessie-dnsutils is busybox + bash +
# Debian's dig/host/nslookup. sample-apiserver 1.29.2 is the k8s.io/sample-apiserver
# module (v0.33.4, the version build-e2e.sh replaces it with) built in a temporary module;
# etcd 3.5.21-0 is Debian's /usr/bin/etcd (3.4) at /usr/local/bin/etcd, the path the
# aggregator spec's Deployment runs.
set -euo pipefail

cache=${1:?usage: build-images.sh CACHE_DIR SKIFF_BINARY [K8S_VERSION]}
skiff=${2:?usage: build-images.sh CACHE_DIR SKIFF_BINARY [K8S_VERSION]}
version=${3:-v1.33.13}
src=$cache/src/kubernetes-$version
out=$cache/images
work=$cache/rootfs
debs=$cache/debs
debroot=$cache/debroot
mkdir -p "$out" "$work" "$debs" "$debroot" "$cache/build"
export GOWORK=off GOFLAGS=-mod=mod
[[ -f $src/.ready ]] || { echo "no k8s source in $src: run build-e2e.sh first" >&2; exit 1; }

e2e=registry.k8s.io/e2e-test-images
# Bump recipe when an image's recipe changes, so existing caches rebuild (these images only: the
# CSI images, registry.k8s.io/sig-storage/*, are build-csi-images.sh's, with a recipe of their own).
# 7: /var/tmp in every busybox root (the DaemonSet surge spec's readiness probe touches a file
# there; upstream's alpine and Debian images have it).
# 8: coreutils' printenv in the httpd images (upstream's is Debian's httpd, with coreutils; the
# kubectl in-cluster config spec runs `printenv KUBERNETES_SERVICE_HOST` in it, and Debian's static
# busybox has no printenv applet).
recipe=8
stamp=$out/.version
if [[ "$(cat "$stamp" 2>/dev/null)" != "$version-$recipe" ]]; then
	find "$out" -maxdepth 1 -name '*.tar' ! -name 'registry.k8s.io_sig-storage_*' -delete
	echo "$version-$recipe" >"$stamp"
fi

# have, fetch_debs, copy_bin, tool, busybox_root, build
. "$(dirname "$0")/image-lib.sh"

# Debian packages the images take binaries from when the host lacks them.
deb_packages=(nginx bind9-dnsutils bind9-libs netcat-openbsd libuv1 libjson-c5 liblmdb0 libmaxminddb0
	libfstrm0 libprotobuf-c1 libnghttp2-14 libxml2 libicu72 libedit2 libbsd0 libmd0 libidn2-0 libunistring2
	libjemalloc2 bind9-host)

# bash_sh ROOT: bash from the host as /bin/sh. Debian's static busybox sh (and dash) drop
# environment variables whose names are not shell names ("data-1" from a ConfigMap's envFrom)
# before running `env`; the upstream images' shells pass them on, bash does too.
bash_sh() {
	local root=$1
	rm -f "$root/bin/bash" "$root/usr/bin/bash"
	tool "$root" bash
	[[ -e $root/bin/bash ]] || ln -s /usr/bin/bash "$root/bin/bash"
	ln -sf /usr/bin/bash "$root/bin/sh"
}

# busybox_sh ROOT: /bin/sh as in the upstream busybox 1.36 image: busybox's own sh (ash), whose
# messages specs compare word for word ("/bin/sh: can't create /file: Read-only file system"),
# except when the environment holds a name that is not a shell name ("data-1" from an envFrom):
# Debian's busybox 1.35 ash drops those and upstream's 1.36 passes them on, so bash runs such a
# command. Bash itself is the dispatcher: it starts, reads the environment it was given, and
# execs one or the other under the same argv[0].
busybox_sh() {
	local root=$1
	rm -f "$root/bin/bash" "$root/usr/bin/bash"
	tool "$root" bash
	[[ -e $root/bin/bash ]] || ln -s /usr/bin/bash "$root/bin/bash"
	rm -f "$root/bin/sh"
	cat >"$root/bin/sh" <<-'SH'
		#!/usr/bin/bash
		while IFS= read -r -d '' kv; do
			[[ ${kv%%=*} =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || exec -a "$0" /usr/bin/bash "$@"
		done </proc/self/environ
		exec -a "$0" /bin/busybox "$@"
	SH
	chmod 0755 "$root/bin/sh"
	check_busybox_sh "$root"
}

# check_busybox_sh ROOT: the image's sh words a read-only write as busybox does and passes on a
# variable whose name is not a shell name (the read-only busybox spec, the envFrom specs).
check_busybox_sh() {
	local root=$1 out chroot
	chroot=$(command -v chroot)
	mkdir -p "$root/mnt" "$root/proc"
	# A mount namespace of its own: /proc and a read-only tmpfs inside the root, gone afterwards.
	out=$(env -i 'data-1=value-1' PATH=/bin unshare -m /usr/bin/bash -c "mount --make-rprivate / &&
		mount -t proc proc '$root/proc' && mount -t tmpfs -o ro none '$root/mnt' &&
		$chroot '$root' /bin/sh -c env && /usr/bin/env -u data-1 $chroot '$root' /bin/sh -c 'echo test > /mnt/file' 2>&1; true")
	grep -qx "/bin/sh: can't create /mnt/file: Read-only file system" <<<"$out" || {
		echo "$root: /bin/sh does not word a read-only write as busybox does: $out" >&2
		return 1
	}
	grep -qx 'data-1=value-1' <<<"$out" || {
		echo "$root: /bin/sh drops a variable named data-1: $out" >&2
		return 1
	}
}

gobuild() { # gobuild OUT PKG
	(cd "$src" && CGO_ENABLED=0 nice -n 19 go build -trimpath -ldflags=-s -o "$1" "$2")
}

# pause
if ! have registry.k8s.io/pause:3.10; then
	r=$work/pause
	rm -rf "$r" && mkdir -p "$r"
	nice -n 19 gcc -Os -static -o "$r/pause" "$src/build/pause/linux/pause.c"
	build registry.k8s.io/pause:3.10 "$r" --entrypoint /pause
fi

# busybox, nonroot, httpd
# The busybox image's /bin/sh changed after recipe 3 (bash, then busybox_sh): a stamp of its own
# rebuilds only this image in caches other runs share, rather than every image.
if ! have $e2e/busybox:1.36.1-1 || [[ "$(cat "$out/.busybox-sh" 2>/dev/null)" != 1 ]]; then
	busybox_root "$work/busybox"
	busybox_sh "$work/busybox"
	# ip is iproute2's: Debian's busybox ip cannot add a link of a type ("ip link add dummy1 type
	# dummy": Operation not supported), which the PrivilegedPod spec runs in this image.
	rm -f "$work/busybox/bin/ip" "$work/busybox/sbin/ip" "$work/busybox/usr/bin/ip" "$work/busybox/usr/sbin/ip"
	tool "$work/busybox" ip
	build $e2e/busybox:1.36.1-1 "$work/busybox" --cmd sh
	echo 1 >"$out/.busybox-sh"
fi
if ! have $e2e/nonroot:1.4; then
	busybox_root "$work/nonroot"
	bash_sh "$work/nonroot"
	build $e2e/nonroot:1.4 "$work/nonroot" --cmd sh --user 1234
fi
for v in 2.4.38-4 2.4.39-4; do
	have $e2e/httpd:$v && continue
	r=$work/httpd-$v
	busybox_root "$r"
	tool "$r" printenv
	mkdir -p "$r/usr/local/apache2/htdocs"
	echo '<html><body><h1>It works!</h1></body></html>' >"$r/usr/local/apache2/htdocs/index.html"
	build $e2e/httpd:$v "$r" --cmd "httpd -f -p 80 -h /usr/local/apache2/htdocs"
done

# agnhost (+ kitten, nautilus on top of it)
coredns_version=v1.11.3
agnhost_root() {
	local root=$1
	busybox_root "$root"
	[[ -x $cache/build/agnhost ]] || gobuild "$cache/build/agnhost" ./test/images/agnhost
	install -m 0755 "$cache/build/agnhost" "$root/agnhost"
	# /coredns: the DNS specs run the agnhost image with command /coredns (upstream's image
	# unpacks CoreDNS 1.6.2's release there); CoreDNS from its Go module, a version the module
	# proxy serves and today's Go builds, takes the same Corefile (hosts, log, forward).
	[[ -x $cache/build/coredns ]] || (
		m=$cache/build/coredns-mod
		rm -rf "$m" && mkdir -p "$m"
		cd "$m" && GOBIN="$m/bin" CGO_ENABLED=0 nice -n 19 go install -trimpath -ldflags=-s "github.com/coredns/coredns@$coredns_version" &&
			mv "$m/bin/coredns" "$cache/build/coredns"
	)
	install -m 0755 "$cache/build/coredns" "$root/coredns"
	ln -s agnhost "$root/agnhost-2"
	cp "$src/test/images/agnhost/porter/localhost.crt" "$src/test/images/agnhost/porter/localhost.key" "$root/"
	mkdir -p "$root/uploads"
	# nsenter is util-linux's: the storage specs' host-exec pods run `nsenter --mount=... -- sh -c`
	# and expect the node's sh and losetup. Debian's static busybox prefers its own applets, so
	# its nsenter ran busybox's sh and losetup after entering the node (alpine's busybox, in the
	# real image, does not).
	for t in curl ip getent nc dig host nslookup nsenter; do
		rm -f "$root/usr/bin/$t" "$root/bin/$t" "$root/sbin/$t" "$root/usr/sbin/$t"
		tool "$root" "$t"
	done
	# Also: Debian's static busybox sh runs its own applets before PATH (nc, wget...), and the
	# specs' `sh -c` commands must reach the Debian tools, as they reach alpine's in the real image.
	bash_sh "$root"
}
if ! have $e2e/agnhost:2.53; then
	agnhost_root "$work/agnhost"
	build $e2e/agnhost:2.53 "$work/agnhost" --entrypoint /agnhost --cmd pause
fi
for pet in kitten nautilus; do
	have $e2e/$pet:1.7 && continue
	r=$work/$pet
	agnhost_root "$r"
	cp "$src/test/images/$pet/html/$pet.jpg" "$src/test/images/$pet/html/data.json" "$r/"
	build $e2e/$pet:1.7 "$r" --entrypoint /agnhost --cmd test-webserver
done

# jessie-dnsutils
if ! have $e2e/jessie-dnsutils:1.7; then
	r=$work/jessie-dnsutils
	busybox_root "$r"
	for t in dig host nslookup getent; do
		rm -f "$r/usr/bin/$t" "$r/bin/$t"
		tool "$r" "$t"
	done
	bash_sh "$r"
	build $e2e/jessie-dnsutils:1.7 "$r" --cmd sh
fi

# nonewprivs
if ! have $e2e/nonewprivs:1.3; then
	r=$work/nonewprivs
	busybox_root "$r"
	gobuild "$cache/build/nnp" ./test/images/nonewprivs
	install -D -m 4755 "$cache/build/nnp" "$r/usr/local/bin/nnp"
	build $e2e/nonewprivs:1.3 "$r" --cmd nnp
fi

# nginx
for v in 1.14-4 1.15-4; do
	have $e2e/nginx:$v && continue
	fetch_debs
	r=$work/nginx-$v
	busybox_root "$r"
	copy_bin "$r" "$debroot/usr/sbin/nginx"
	mkdir -p "$r/etc/nginx" "$r/usr/share/nginx/html" "$r/var/log/nginx" "$r/var/lib/nginx" "$r/var/cache/nginx"
	cp "$debroot/etc/nginx/mime.types" "$r/etc/nginx/" 2>/dev/null || touch "$r/etc/nginx/mime.types"
	cat >"$r/etc/nginx/nginx.conf" <<-'N'
		daemon off;
		user root;
		worker_processes 1;
		pid /run/nginx.pid;
		error_log stderr;
		events { worker_connections 256; }
		http {
			include /etc/nginx/mime.types;
			access_log /dev/stdout;
			server {
				listen 80;
				root /usr/share/nginx/html;
				index index.html;
			}
		}
	N
	cat >"$r/usr/share/nginx/html/index.html" <<-'H'
		<!DOCTYPE html>
		<html><head><title>Welcome to nginx!</title></head>
		<body><h1>Welcome to nginx!</h1></body></html>
	H
	build $e2e/nginx:$v "$r" --cmd /usr/sbin/nginx
done

# regression-issue-74839 (the INVALID conntrack spec's server: it sends a segment out of the
# connection's window over a raw socket), built from the k8s source as upstream's image is.
if ! have $e2e/regression-issue-74839:1.2; then
	r=$work/regression-issue-74839
	busybox_root "$r"
	gobuild "$cache/build/regression-issue-74839" ./test/images/regression-issue-74839
	install -m 0755 "$cache/build/regression-issue-74839" "$r/regression-issue-74839"
	build $e2e/regression-issue-74839:1.2 "$r" --entrypoint /regression-issue-74839
fi

# distroless-iptables (the KubeProxy CLOSE_WAIT spec's host-network pod: sleep, then `sh -c` with
# test, which, grep and conntrack -L): busybox and the host's conntrack.
if ! have registry.k8s.io/build-image/distroless-iptables:v0.8.11; then
	r=$work/distroless-iptables
	busybox_root "$r"
	tool "$r" conntrack
	build registry.k8s.io/build-image/distroless-iptables:v0.8.11 "$r" --cmd sh
fi

# sample-apiserver (the aggregator spec's extension server; the image runs /sample-apiserver
# with the spec's args). Built in a module of its own under $cache/build, never in skiff's.
sample_apiserver_version=v0.33.4 # as build-e2e.sh's replace: the proxy serves no v0.33.13
if ! have $e2e/sample-apiserver:1.29.2; then
	m=$cache/build/sample-apiserver-mod
	rm -rf "$m" && mkdir -p "$m"
	printf 'module skiff.test/sampleapiserver\n\ngo 1.24\n' >"$m/go.mod"
	(cd "$m" && go get "k8s.io/sample-apiserver@$sample_apiserver_version" 2>&1 | grep -v "^go: added" || true) && (cd "$m" &&
		CGO_ENABLED=0 nice -n 19 go build -trimpath -ldflags=-s -o "$cache/build/sample-apiserver" k8s.io/sample-apiserver)
	r=$work/sample-apiserver
	busybox_root "$r"
	install -m 0755 "$cache/build/sample-apiserver" "$r/sample-apiserver"
	build $e2e/sample-apiserver:1.29.2 "$r" --entrypoint /sample-apiserver
fi

# etcd beside it: the spec runs `/usr/local/bin/etcd --listen-client-urls http://127.0.0.1:2379
# --advertise-client-urls ...` (data in ./default.etcd of the working directory, /).
if ! have registry.k8s.io/etcd:3.5.21-0; then
	r=$work/etcd
	busybox_root "$r"
	copy_bin "$r" "$(command -v etcd || echo /usr/bin/etcd)"
	mkdir -p "$r/usr/local/bin" "$r/var/lib/etcd"
	ln -sf /usr/bin/etcd "$r/usr/local/bin/etcd"
	build registry.k8s.io/etcd:3.5.21-0 "$r" --cmd /usr/local/bin/etcd
fi

ls "$out"/*.tar
