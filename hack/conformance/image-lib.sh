# Helpers the image builders (build-images.sh, build-csi-images.sh) share; sourced, never run.
# They read the caller's globals: out (where archives go), skiff (the binary whose
# `images build-dir` writes them), debs and debroot (where Debian packages are downloaded and
# unpacked) and deb_packages (which packages fetch_debs brings).

have() { [[ -f $out/$(echo "$1" | sed 's#[/:@]#_#g').tar ]]; }

fetch_debs() {
	[[ "$(cat "$debroot/.ready" 2>/dev/null)" == "${deb_packages[*]}" ]] && return 0
	echo "fetching Debian packages: ${deb_packages[*]}"
	(cd "$debs" && apt-get download "${deb_packages[@]}" 2>&1 | grep -v "unsandboxed" || true)
	for d in "$debs"/*.deb; do dpkg -x "$d" "$debroot"; done
	echo "${deb_packages[*]}" >"$debroot/.ready"
}

# copy_bin ROOT BINARY [NAME]: copies BINARY (a path on the host or under
# $debroot) into ROOT at its own path (or /usr/bin/NAME) with every shared
# library ldd resolves, searching $debroot's library dirs after the host's.
copy_bin() {
	local root=$1 bin=$2 name=${3:-}
	local dest=${bin#"$debroot"}
	[[ -n $name ]] && dest=/usr/bin/$name
	install -D -m 0755 "$bin" "$root$dest"
	local libpath="$debroot/usr/lib/x86_64-linux-gnu:$debroot/lib/x86_64-linux-gnu"
	local missing
	missing=$(LD_LIBRARY_PATH=$libpath ldd "$bin" 2>/dev/null | awk '/not found/ {print $1}')
	if [[ -n $missing ]]; then
		echo "$bin needs libraries neither the host nor $debroot has: $missing" >&2
		return 1
	fi
	LD_LIBRARY_PATH=$libpath ldd "$bin" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' |
		while read -r lib; do
			local real target
			real=$(readlink -f "$lib")
			target=${lib#"$debroot"}
			mkdir -p "$root$(dirname "$target")"
			cp -L "$real" "$root$target"
		done
}

# tool ROOT NAME: copies command NAME from the host, else from $debroot.
tool() {
	local root=$1 name=$2 path=""
	path=$(command -v "$name" 2>/dev/null || true)
	if [[ -z $path ]]; then
		fetch_debs
		local file=$name
		[[ $name == nc ]] && file=nc.openbsd # /bin/nc is a Debian alternatives link
		for d in usr/bin bin usr/sbin sbin; do
			[[ -x $debroot/$d/$file ]] && { path=$debroot/$d/$file; break; }
		done
		[[ -n $path ]] || { echo "tool $name: not on the host nor in $debroot" >&2; return 1; }
		copy_bin "$root" "$path" "$name"
		return
	fi
	copy_bin "$root" "$path"
}

# wget_busybox: prints the path of a static busybox whose wget takes -T. Debian bookworm's busybox
# 1.35 (static and dynamic alike) segfaults on `wget -T N`, which the Service verification specs
# run (`wget -q -O - -T 1 URL`, from host-network and pod-network exec pods); trixie's 1.37 does
# not. Its package is fetched once into $cache/wget-busybox through a package list of its own
# (the host's apt sources are left alone). Prints nothing when it cannot be had.
wget_busybox() {
	local dir=$cache/wget-busybox
	if [[ ! -x $dir/root/usr/bin/busybox ]]; then
		mkdir -p "$dir/lists/partial"
		echo "deb http://deb.debian.org/debian trixie main" >"$dir/sources.list"
		local opts=(-o Dir::Etc::sourcelist="$dir/sources.list" -o Dir::Etc::sourceparts=- -o Dir::State::Lists="$dir/lists")
		(cd "$dir" && apt-get -qq "${opts[@]}" update && apt-get -qq "${opts[@]}" download busybox-static) >/dev/null 2>&1 || true
		for d in "$dir"/busybox-static_*.deb; do [[ -f $d ]] && dpkg -x "$d" "$dir/root"; done
	fi
	if [[ -x $dir/root/usr/bin/busybox ]] && ! ldd "$dir/root/usr/bin/busybox" >/dev/null 2>&1; then
		echo "$dir/root/usr/bin/busybox"
	else
		echo "no static busybox from trixie for wget: wget -T segfaults in the images" >&2
	fi
}

# busybox_root ROOT: a root filesystem with the host's static busybox and its applets, wget
# from wget_busybox's.
busybox_root() {
	local root=$1 bb
	rm -rf "$root"
	bb=$(command -v busybox)
	if ldd "$bb" >/dev/null 2>&1; then
		echo "$bb is not static: install busybox-static" >&2
		return 1
	fi
	mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,etc,tmp,var/tmp,root,home,proc,sys,dev,var/run,run}
	chmod 1777 "$root/tmp" "$root/var/tmp"
	install -m 0755 "$bb" "$root/bin/busybox"
	"$bb" --list-full | while read -r a; do
		[[ $a == bin/busybox || -e $root/$a ]] && continue
		mkdir -p "$root/$(dirname "$a")"
		ln -s /bin/busybox "$root/$a"
		# The upstream busybox image has every applet in /bin too: specs run /bin/sysctl.
		[[ -e $root/bin/${a##*/} ]] || ln -s /bin/busybox "$root/bin/${a##*/}"
	done
	cat >"$root/etc/passwd" <<-'P'
		root:x:0:0:root:/root:/bin/sh
		user-defined-in-image:x:1000:1000::/home/user-defined-in-image:/bin/sh
		nobody:x:65534:65534:nobody:/home:/bin/false
	P
	cat >"$root/etc/group" <<-'G'
		root:x:0:
		user-defined-in-image:x:1000:
		group-defined-in-image:x:50000:user-defined-in-image
		nogroup:x:65534:
	G
	echo "hosts: files dns" >"$root/etc/nsswitch.conf"
	local wbb
	wbb=$(wget_busybox)
	if [[ -n $wbb ]]; then
		install -m 0755 "$wbb" "$root/bin/busybox-wget"
		ln -sf /bin/busybox-wget "$root/usr/bin/wget"
		ln -sf /bin/busybox-wget "$root/bin/wget"
	fi
}

build() { # build TAG ROOT [build-dir flags...]
	local tag=$1 root=$2
	shift 2
	"$skiff" images build-dir --root "$root" --tag "$tag" --out "$out" "$@" >/dev/null
	echo "built $tag"
}
