#!/usr/bin/env bash
# Runs upstream Kubernetes e2e specs (e2e.test v1.33.13) against a fresh skiff cluster (a
# control-plane node with every role plus --workers joined worker nodes, each in a network
# namespace of its own), offline: by default the [Conformance] specs, or another suite. Not part of
# .ci/run: the conformance suite takes about an hour. See docs/user/conformance.md.
#
#   hack/conformance.sh                       all [Conformance] specs: parallel ones, then [Serial]
#   hack/conformance.sh --focus 'ConfigMap'   only those whose name also matches REGEX
#   hack/conformance.sh --suite default --sig network   the kind CI job's selection, sig-network only
#   hack/e2e.sh ...                           the same with --suite default
#
# Options:
#   --suite NAME    which specs (each in parallel, then its [Serial] ones):
#                     conformance  [Conformance] (the default)
#                     default      what Kubernetes' kind CI jobs run: no Feature: label, not Slow,
#                                  Disruptive or Flaky (Feature: isEmpty && !Slow && !Disruptive && !Flaky)
#                     netpol       the NetworkPolicy specs (Feature: containsAny NetworkPolicy)
#                     csi          [sig-storage] CSI Volumes [Driver: csi-hostpath] and CSI Mock
#                                  (also builds the CSI images, hack/conformance/build-csi-images.sh,
#                                  deploys the snapshot CRDs and controller, and runs every node in a
#                                  mount namespace of its own with its own /var/lib/kubelet)
#                   (netpol, csi: not Slow, Disruptive or Flaky)
#   --sig NAME      only the specs of one SIG (its label sig-NAME: node, network, apps, storage, ...)
#   --sctp WHEN     whether netpol runs its 3 [Feature:SCTPConnectivity] specs: auto (the default:
#                   when the host's kernel has SCTP, built in or as a module that loads), on, off.
#                   Their servers listen on SCTP sockets; on a kernel without SCTP they exit, and
#                   each such spec then probes its 81 pairs for ten rounds (about 45 minutes) before
#                   failing on the host, not on skiff
#   --print-selection  print the label filters, focus and skip the options choose, and exit
#   --focus REGEX   run only the suite's specs whose name matches REGEX (with csi: the part of
#                   the name after the suite's own "[sig-storage] CSI ..." prefix)
#   --skip REGEX    and skip those matching REGEX
#   --procs N       parallel ginkgo processes (default 3)
#   --timeout D     ginkgo's time limit for each of the two runs (default 3h); specs cut by it
#                   are reported as interrupted (failed) in the junit report
#   --no-serial     do not run the [Serial] specs afterwards
#   --serial-only   run only the [Serial] specs (a parallel part run before is not repeated)
#   --no-disruptive skip the 2 [Disruptive] [Conformance] specs (NoExecuteTaintManager: they taint
#                   a node and evict its pods); by default the [Serial] part runs them, as a
#                   certified conformance run does
#   --results DIR   where junit reports, logs, the summary and results.md (the results page:
#                   per SIG passed/failed/skipped, failures by the cause written down in
#                   hack/conformance/causes.tsv, skip reasons) go (default /tmp/skiff-conformance-<time>)
#   --workers N     worker nodes joined beside the control-plane node (default 2: the suite
#                   assumes at least two schedulable nodes); 0 runs the one all-roles node alone
#   --keep          leave the cluster running at the end (prints how to stop it)
#   --check-host    print what the harness would install on this host and exit (no root needed)
#
# Steps: installs the host tools it runs that are missing (hack/conformance/host-tools.sh:
# Debian's etcd for the etcd image, the runtime, gcc, iproute2, kubectl); builds e2e.test and ginkgo (hack/conformance/build-e2e.sh) and the test
# images (hack/conformance/build-images.sh) into $SKIFF_CONFORMANCE_CACHE
# (default ${XDG_CACHE_HOME:-~/.cache}/skiff-conformance), reusing what is
# there; builds skiff; makes a bridge with a private 10.250.n.0/24 of its own, starts
# `skiff server` (all roles, untainted) bound to its .1 with its own pod and service ranges,
# and joins each worker from a network namespace wired to the bridge by a veth pair (.2, .3,
# ...), each with its own data dir, containerd and pod bridge; imports the images on every
# node; runs ginkgo; prints passed/failed per SIG from the junit reports; stops the nodes and
# removes what it created.
#
# Network: pods get a resolv.conf naming only the test address (nothing
# answers there), image pulls go to a registry on the control plane's address that serves the
# cached images (any other pull to a proxy on a closed loopback port), and an iptables chain (FORWARD, and OUTPUT for the service
# range) drops what a pod sends off the node and any packet still addressed to
# a ClusterIP after DNAT (one the service proxy has not rewritten), so no spec reaches
# another host. The workers' namespaces have no default route: only the bridge's subnet and
# the other nodes' pod ranges are reachable from them, and the host drops anything forwarded
# from the bridge that is not for the pod network.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

focus='' skip='' procs=3 serial=1 parallel=1 disruptive=1 keep=0 timeout=3h workers=2 check_host=0
suite=conformance sig='' print_selection=0 sctp=auto
results=/tmp/skiff-conformance-$(date -u +%Y%m%dT%H%M%S)
while (($#)); do
	case $1 in
	--focus) focus=$2; shift 2 ;;
	--skip) skip=$2; shift 2 ;;
	--procs) procs=$2; shift 2 ;;
	--timeout) timeout=$2; shift 2 ;;
	--no-serial) serial=0; shift ;;
	--serial-only) parallel=0; shift ;;
	--no-disruptive) disruptive=0; shift ;;
	--results) results=$2; shift 2 ;;
	--keep) keep=1; shift ;;
	--workers) workers=$2; shift 2 ;;
	--check-host) check_host=1; shift ;;
	--suite) suite=$2; shift 2 ;;
	--sig) sig=$2; shift 2 ;;
	--print-selection) print_selection=1; shift ;;
	--sctp) sctp=$2; shift 2 ;;
	-h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
	*) echo "unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
done

# The suite's specs: a ginkgo label filter for the parallel run and one for the [Serial] run
# (Serial is a label in e2e.test v1.33), and a focus some suites add to the name.
not_unstable='!Slow && !Disruptive && !Flaky'
suite_focus=''
suite_skip=''
case $suite in
conformance)
	parallel_filter='Conformance && !Serial && !Disruptive'
	serial_filter='Conformance && Serial'
	((disruptive)) || serial_filter+=' && !Disruptive'
	;;
default)
	parallel_filter="Feature: isEmpty && !Serial && $not_unstable"
	serial_filter="Feature: isEmpty && Serial && $not_unstable"
	# What Kubernetes' kind jobs skip beside the labels (their --ginkgo.skip) for what a machine
	# of nodes in containers lacks: an NFS server in the kernel (103 specs, each waiting 5
	# minutes for a server that cannot start), a cloud load balancer. Their other skips
	# (exec through an HTTP proxy, subPath existing, inline execution and attach, rejected when
	# no endpoints exist) run here.
	suite_skip='NFS|nfs|LoadBalancer|load.balancer|PodSecurityPolicy'
	;;
netpol)
	parallel_filter="Feature: containsAny NetworkPolicy && !Serial && $not_unstable"
	serial_filter="Feature: containsAny NetworkPolicy && Serial && $not_unstable"
	;;
csi)
	parallel_filter="!Serial && $not_unstable"
	serial_filter="Serial && $not_unstable"
	suite_focus='\[sig-storage\] CSI (Volumes \[Driver: csi-hostpath\]|Mock)'
	;;
*) echo "unknown --suite $suite (conformance, default, netpol, csi)" >&2; exit 2 ;;
esac
# The suites whose selection holds the CSI specs ([sig-storage] CSI Volumes [Driver: csi-hostpath]
# and CSI Mock carry no Feature: label, so the default suite runs them too, as Kubernetes' kind
# jobs do): they get the CSI images, the snapshot controller and a /var/lib/kubelet per node.
csi_drivers=0
[[ $suite == csi || $suite == default ]] && csi_drivers=1
if [[ -n $sig ]]; then
	[[ $sig =~ ^[a-z]+(-[a-z]+)*$ && $sig != sig-* ]] || { echo "--sig takes a SIG's name without sig- (node, network, api-machinery, ...)" >&2; exit 2; }
	parallel_filter="($parallel_filter) && sig-$sig"
	serial_filter="($serial_filter) && sig-$sig"
fi
# SCTP: the netpol suite's [Feature:SCTPConnectivity] specs need a kernel that opens SCTP sockets
# (upstream labels them so for that reason); without one they cannot pass whatever skiff does.
host_has_sctp() { # the kernel has SCTP: built in, or its module loads
	grep -qw SCTP /proc/net/protocols 2>/dev/null && return 0
	command -v modprobe >/dev/null && modprobe -q sctp 2>/dev/null && grep -qw SCTP /proc/net/protocols
}
sctp_note=''
case $sctp in
auto) if [[ $suite == netpol ]] && ! host_has_sctp; then sctp=off; else sctp=on; fi ;;
on | off) ;;
*) echo "--sctp takes auto, on or off" >&2; exit 2 ;;
esac
if [[ $suite == netpol && $sctp == off ]]; then
	parallel_filter+=' && !Feature: containsAny SCTPConnectivity'
	serial_filter+=' && !Feature: containsAny SCTPConnectivity'
	sctp_note='the 3 [Feature:SCTPConnectivity] specs are not run (--sctp off, or auto on a kernel without SCTP: no SCTP in /proc/net/protocols and no sctp module that loads)'
fi
if ((print_selection)); then
	printf 'parallel: %s\nserial: %s\nfocus: %s\nskip: %s\n' "$parallel_filter" "$serial_filter" "$suite_focus" "$suite_skip"
	exit 0
fi

version=v1.33.13
cache=${SKIFF_CONFORMANCE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/skiff-conformance}
((check_host)) && exec hack/conformance/host-tools.sh "$cache" "$version" --dry-run
mkdir -p "$cache" "$results"
results=$(cd "$results" && pwd)
log() { echo "[$(date -u +%H:%M:%S)] $*"; }
if [[ -n $sctp_note ]]; then
	log "$sctp_note"
	echo "$sctp_note" >"$results/not-run.txt"
fi

[[ $(id -u) == 0 ]] || { echo "needs root (containerd, iptables, a dummy interface)" >&2; exit 1; }
# Before anything is built: a tool missing on a fresh machine (Debian's etcd, which the etcd
# image is made of) otherwise fails the run after e2e.test's minutes of building.
log "host tools"
export PATH=$PATH:$cache/bin # kubectl, when host-tools.sh built it
hack/conformance/host-tools.sh "$cache" "$version"

log "e2e.test and ginkgo ($version) in $cache/bin"
hack/conformance/build-e2e.sh "$cache" "$version"
log "skiff"
nice -n 19 go build -o "$results/skiff" ./cmd/skiff
skiff=$results/skiff
go build -o "$results/nodeinit" ./hack/conformance/nodeinit
nodeinit=$results/nodeinit
go build -o "$results/registry" ./hack/conformance/registry
log "test images in $cache/images"
hack/conformance/build-images.sh "$cache" "$skiff" "$version"
if ((csi_drivers)); then
	log "CSI images (csi-hostpath, sidecars, snapshot controller) in $cache/images"
	hack/conformance/build-csi-images.sh "$cache" "$skiff" "$version"
fi
# Every image e2e.test may ask for that was not built is named (in the log and
# missing-images.txt): a spec that needs one fails on a pull, a harness gap, never a skiff defect.
# The CSI drivers' images are named in their manifests, not by --list-images.
{
	"$cache/bin/e2e.test" --list-images 2>/dev/null
	((!csi_drivers)) || hack/conformance/build-csi-images.sh --list "$cache" "$version"
} | sort -u | while read -r image; do
	[[ -f $cache/images/$(echo "$image" | sed 's#[/:@]#_#g').tar ]] || echo "$image"
done >"$results/missing-images.txt"
if [[ -s $results/missing-images.txt ]]; then
	log "$(wc -l <"$results/missing-images.txt") images e2e.test may use were not built (specs needing them fail on a pull): $(tr '\n' ' ' <"$results/missing-images.txt")"
fi

[[ $workers =~ ^[0-9]+$ ]] && ((workers <= 20)) || { echo "--workers takes 0..20" >&2; exit 2; }

# --- the cluster's network: a bridge with a private /24 of its own ---
# The control-plane node binds to .1 on the host; worker i is .(i+1) in network namespace
# skconf<id>-w<i>, wired to the bridge by a veth pair.
id=$$
netbr=skcnet$((id % 100000))
net=''
for _ in $(seq 1 50); do
	cand=10.250.$((RANDOM % 250 + 1))
	ip -o -4 addr | grep -q " $cand\." || ip -4 route | grep -q "^$cand\." || { net=$cand; break; }
done
[[ -n $net ]] || { echo "no free /24 in 10.250.0.0/16" >&2; exit 1; }
addr=$net.1
# A pod range of its own (a /24 per node: node IPAM's mask) and a service range, so that runs
# side by side on one host do not route the same pod addresses to two bridges.
size=1
while ((size < workers + 1)); do size=$((size * 2)); done
plen=$((24 - $(awk -v s="$size" 'BEGIN { print log(s) / log(2) }')))
pod_cidr='' svc_cidr=''
for _ in $(seq 1 50); do
	n=$(((RANDOM % (256 / size)) * size)) m=$((RANDOM % 256))
	clash=0
	for k in $(seq "$n" $((n + size - 1))); do ip -4 route | grep -q "^10\.244\.$k\." && clash=1; done
	ip -4 route | grep -q "^10\.245\.$m\." && clash=1
	if ((!clash)); then
		pod_cidr=10.244.$n.0/$plen svc_cidr=10.245.$m.0/24
		break
	fi
done
[[ -n $pod_cidr ]] || { echo "no free pod range in 10.244.0.0/16" >&2; exit 1; }
chain=SKCONF-$id
bridge=skcbr$((id % 100000)) # its own pod bridge and CNI network: other clusters on this host use cni0
data=$(mktemp -d /tmp/skc.XXXX) # short: containerd's socket path must stay under the unix-socket limit
skiff_pid=''
registry_pid=''
worker_pids=()
wns() { echo "skconf$((id % 100000))-w$1"; }   # worker i's network namespace
wveth() { echo "skcv$((id % 100000))w$1"; }    # its veth's host end
wbridge() { echo "skcbr$((id % 100000))w$1"; } # its pod bridge (inside its namespace) and CNI network

stop_pid() { # stop_pid PID: SIGINT, then SIGKILL after 30 s
	kill -0 "$1" 2>/dev/null || return 0
	kill -INT "$1"
	for _ in $(seq 1 30); do kill -0 "$1" 2>/dev/null || break; sleep 1; done
	kill -KILL "$1" 2>/dev/null
	wait "$1" 2>/dev/null
}

cleanup() {
	set +e
	if [[ -n $skiff_pid ]] && kill -0 "$skiff_pid" 2>/dev/null; then
		if ((keep)); then
			echo "cluster left running: KUBECONFIG=$data/admin.kubeconfig; stop with: kill $skiff_pid ${worker_pids[*]}, then" \
				"ip netns del skconf$((id % 100000))-w<i> (each worker); ip link del $netbr; ip link del $bridge; iptables -D FORWARD -j $chain; iptables -D OUTPUT -d $svc_cidr -j $chain; iptables -F $chain; iptables -X $chain; umount what /proc/mounts lists under $data; rm -rf $data"
			return
		fi
		log "stopping the cluster"
		KUBECONFIG=$data/admin.kubeconfig timeout 120 kubectl delete pods --all --all-namespaces --grace-period=1 --timeout=90s >/dev/null 2>&1
	fi
	for p in "${worker_pids[@]}"; do stop_pid "$p"; done
	[[ -n $skiff_pid ]] && stop_pid "$skiff_pid"
	[[ -n $registry_pid ]] && stop_pid "$registry_pid"
	for i in $(seq 1 "$workers"); do
		ns=$(wns "$i")
		if [[ -e /var/run/netns/$ns ]]; then
			# Whatever still runs in the namespace was started by this run (its node's containers).
			ip netns pids "$ns" 2>/dev/null | xargs -r kill -KILL 2>/dev/null
			ip netns del "$ns"
		fi
		ip link del "$(wveth "$i")" 2>/dev/null
		rm -rf "/var/lib/cni/networks/$(wbridge "$i")" "/var/lib/cni/skiff/$(wbridge "$i")"
	done
	iptables -D FORWARD -j "$chain" 2>/dev/null
	iptables -D OUTPUT -d "$svc_cidr" -j "$chain" 2>/dev/null
	iptables -F "$chain" 2>/dev/null
	iptables -X "$chain" 2>/dev/null
	ip link del "$bridge" 2>/dev/null
	ip link del "$netbr" 2>/dev/null
	rm -rf "/var/lib/cni/networks/$bridge" "/var/lib/cni/skiff/$bridge"
	grep -q " $data/" /proc/mounts 2>/dev/null && awk -v d="$data/" 'index($2, d) == 1 {print $2}' /proc/mounts | sort -r | xargs -r -n1 umount -l
	rm -rf "$data"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log "test network $net.0/24 on $netbr (control plane $addr, $workers workers); pods $pod_cidr, services $svc_cidr"
ip link add "$netbr" type bridge
ip addr add "$addr/24" dev "$netbr"
ip link set "$netbr" up
for i in $(seq 1 "$workers"); do
	ns=$(wns "$i") veth=$(wveth "$i")
	ip netns add "$ns"
	ip link add "$veth" type veth peer name "${veth}p"
	ip link set "$veth" master "$netbr" up
	# The control plane's address is on this bridge and bridge-nf-call-iptables is on, so a
	# connection from a worker to the control plane's NodePort that the service proxy DNATs to a
	# pod on that same worker is bridged back out of the port it came in by (br_netfilter's
	# "bridged DNAT"), which a bridge refuses without hairpin mode: the SYN vanished and the
	# session-affinity specs timed out whenever the pod they stuck to ran on the client's worker.
	bridge link set dev "$veth" hairpin on
	ip link set "${veth}p" netns "$ns"
	ip -n "$ns" link set "${veth}p" name eth0
	ip -n "$ns" addr add "$net.$((i + 1))/24" dev eth0
	ip -n "$ns" link set eth0 up
	ip -n "$ns" link set lo up
done
# Filter after DNAT: a pod may reach pods (directly or through a Service's rules, once a service
# proxy writes them); a packet still addressed to a ClusterIP has no rules and would follow the
# default route off this machine, so it is dropped, as is anything else a pod sends off the node
# and anything a worker's namespace sends through the host that is not for the pod network.
# The run's own /24 (the nodes' addresses) is reachable from everywhere: node-to-pod answers and
# node ports (bridge-nf-call-iptables puts even frames bridged between workers through FORWARD).
iptables -N "$chain"
iptables -A "$chain" -d "$svc_cidr" -j DROP
iptables -A "$chain" -d "$net.0/24" -j RETURN
iptables -A "$chain" -i "$netbr" ! -d "$pod_cidr" -j DROP
iptables -A "$chain" -s "$pod_cidr" -d "$pod_cidr" -j RETURN
iptables -A "$chain" -s "$pod_cidr" -j DROP
iptables -I FORWARD 1 -j "$chain"
iptables -I OUTPUT 1 -d "$svc_cidr" -j "$chain"
echo "nameserver $addr" >"$data/resolv.conf"

free_port() {
	local p
	while :; do
		p=$((20000 + RANDOM % 20000))
		ss -Hltn "sport = :$p" | grep -q . || { echo "$p"; return; }
	done
}
https_port=$(free_port) etcd_port=$(free_port) peer_port=$(free_port) kubelet_port=$(free_port)
lb_port=$(free_port) # the node-local API load balancer's default 6444 is taken by a run beside this one
# e2e.test reaches kubelets through the API server's node proxy at the well-known port 10250
# (ports.KubeletPort), not the one the node publishes: take it when it is free. The workers,
# each in its own namespace, always have it.
ss -Hltn "sport = :10250" | grep -q . || kubelet_port=10250
export KUBECONFIG=$data/admin.kubeconfig

# Every node runs as on a machine of its own: in a PID, mount and UTS namespace of its own
# (hack/conformance/nodeinit, PID 1 there; its hostname is the node's name). Storage specs reach "the node" with a hostPID pod that
# enters /rootfs/proc/1/ns/mnt (e2e's host-exec pods: local volumes, loop devices, mounts the
# kubelet must see); here that is the node's init and mount namespace, not this machine's init
# (which refuses it even to root). Every mount is private to its node, and what a node leaves
# running ends with it.
#
# Each node's kubelet root dir (--kubelet-root-dir, where CSI node plugins register and publish).
# The CSI drivers' manifests mount hostPaths under /var/lib/kubelet and publish into the target path
# the kubelet names, so where CSI drivers run (csi_drivers) the kubelet's root must be /var/lib/kubelet as the node's
# containers see it, and each node's its own: in the node's mount namespace its own directory
# (DATA/kubelet-root) is bind-mounted at /var/lib/kubelet and made rshared, so what a node plugin
# mounts under pods/ with Bidirectional propagation reaches that node's kubelet and its pods. The
# other suites keep the root inside the node's data dir.
own_kubelet_root=0
((csi_drivers)) && own_kubelet_root=1
root_dir_flag=0
server_help=$("$skiff" server --help 2>&1 || true) # the flag package's usage exits non-zero
[[ $server_help == *-kubelet-root-dir* ]] && root_dir_flag=1
if ((own_kubelet_root && !root_dir_flag)); then
	log "this skiff has no --kubelet-root-dir: the nodes run with the kubelet's default layout"
fi
# node_cmd NODE_DATA_DIR NODE_NAME: the command prefix that starts the node whose data dir is
# NODE_DATA_DIR (then its skiff server arguments follow), into the array node_cmd. The node's
# hostname is its name, as on a machine of its own (a hostNetwork pod's hostname is its node's).
node_cmd() {
	local nd=$1
	node_cmd=("$nodeinit" --hostname "$2" --)
	if ((own_kubelet_root)); then
		mkdir -p "$nd/kubelet-root" /var/lib/kubelet
		# What the host has mounted at /var/lib/kubelet (a kubelet's own bind of it, volumes under
		# it) is copied into the new namespace; it goes first (in there only): containerd judges a
		# Bidirectional mount by the first mount it finds at the path, and one stacked under the
		# node's shared bind is private.
		node_cmd+=(/bin/sh -c
			'while mountpoint -q /var/lib/kubelet; do umount -l /var/lib/kubelet || exit 1; done &&
			mount --bind "$0" /var/lib/kubelet && mount --make-rshared /var/lib/kubelet && exec "$@"' "$nd/kubelet-root")
	fi
	node_cmd+=("$skiff" server --data-dir "$nd")
	# The e2e specs run hostNetwork servers on port 80 of a node (the DNS HostNetwork specs read
	# their results from one), as on a cluster with no ingress controller on its nodes' ports
	# (kind): skiff's HTTP data plane, on ports 80 and 443 of every worker by default, stays off.
	if [[ $server_help == *-ingress-http-port* ]]; then
		node_cmd+=(--ingress-http-port 0 --ingress-https-port 0)
	fi
	if ((root_dir_flag)); then
		if ((own_kubelet_root)); then
			node_cmd+=(--kubelet-root-dir /var/lib/kubelet)
		else
			node_cmd+=(--kubelet-root-dir "$nd/kubelet")
		fi
	fi
}
# node_init PID: the node's PID 1 (nodeinit's inner half), the child of the process the harness
# started.
node_init() {
	local pid=$1 child
	for _ in $(seq 1 50); do
		child=$(pgrep -P "$pid" 2>/dev/null) # any thread's child: Go starts it from whichever
		[[ -n ${child// /} ]] && { echo "${child%% *}"; return 0; }
		sleep 0.1
	done
	echo "node $pid has no init" >&2
	return 1
}
# check_node PID NODE_DATA_DIR: the node sees its own PID 1 and, for csi, its own directory as a
# shared /var/lib/kubelet the host's is not (a file made in one is seen in the other, and only there).
check_node() {
	local pid=$1 nd=$2 probe init
	init=$(node_init "$pid") || return 1
	if [[ $(nsenter -t "$init" -p -m sh -c 'readlink /proc/1/exe') != "$nodeinit" ]]; then
		echo "node $pid: PID 1 in its namespace is not its nodeinit" >&2
		return 1
	fi
	((own_kubelet_root)) || return 0
	probe=.skiff-harness-$id
	touch "$nd/kubelet-root/$probe"
	if [[ ! -e /proc/$init/root/var/lib/kubelet/$probe || -e /var/lib/kubelet/$probe ]] ||
		[[ $(nsenter -t "$init" -p -m findmnt -n -o PROPAGATION /var/lib/kubelet) != shared ]]; then
		echo "node $pid does not see $nd/kubelet-root as a shared /var/lib/kubelet of its own" >&2
		rm -f "$nd/kubelet-root/$probe"
		return 1
	fi
	rm -f "$nd/kubelet-root/$probe"
}

# Image pulls: some specs deliberately name images that do not exist (gcr.io/...:nonexistent,
# foo:non-existent). containerd (a child of skiff) would resolve and contact those registries;
# a proxy on a closed loopback port makes every pull fail locally without a DNS lookup, while
# the cluster's own addresses bypass it. In a worker's namespace 127.0.0.1:9 is its own loopback.
export HTTPS_PROXY=http://127.0.0.1:9 HTTP_PROXY=http://127.0.0.1:9 \
	NO_PROXY="localhost,127.0.0.0/8,$net.0/24,$pod_cidr,$svc_cidr"

log "starting skiff (data $data, log $results/skiff.log)"
node_cmd "$data" "skconf-$id"
"${node_cmd[@]}" --roles etcd,controlplane,worker --node-name "skconf-$id" \
	--bind-address "$addr" --advertise-address "$addr" --https-port "$https_port" --etcd-client-port "$etcd_port" \
	--etcd-peer-port "$peer_port" --kubelet-port "$kubelet_port" --lb-port "$lb_port" \
	--cluster-cidr "$pod_cidr" --service-cidr "$svc_cidr" --cni-bridge "$bridge" --resolv-conf "$data/resolv.conf" \
	--local-path-helper-image registry.k8s.io/e2e-test-images/busybox:1.36.1-1 \
	>"$results/skiff.log" 2>&1 &
skiff_pid=$!
wait_ready() { # wait_ready N: until N Nodes are Ready
	local i
	for i in $(seq 1 300); do
		if [[ -f $KUBECONFIG ]] && kubectl get --raw /readyz >/dev/null 2>&1 &&
			(($(kubectl get nodes --no-headers 2>/dev/null | wc -l) >= $1)) &&
			kubectl wait --for=condition=Ready node --all --timeout=2s >/dev/null 2>&1; then
			return 0
		fi
		kill -0 "$skiff_pid" 2>/dev/null || { tail -30 "$results/skiff.log" >&2; return 1; }
		sleep 1
	done
	echo "not $1 Ready nodes after 300 tries; see $results/skiff*.log" >&2
	return 1
}
wait_ready 1
check_node "$skiff_pid" "$data"
if ((workers)); then
	token=$("$skiff" token create --data-dir "$data" --ttl 1h --description "conformance run $id")
	for i in $(seq 1 "$workers"); do
		log "starting worker $i in $(wns "$i") ($net.$((i + 1)), log $results/skiff-w$i.log)"
		node_cmd "$data/w$i" "skconf-$id-w$i"
		nsenter --net="/var/run/netns/$(wns "$i")" "${node_cmd[@]}" --server "https://$addr:$https_port" --token "$token" \
			--roles worker --node-name "skconf-$id-w$i" \
			--bind-address "$net.$((i + 1))" --advertise-address "$net.$((i + 1))" --kubelet-port 10250 \
			--cluster-cidr "$pod_cidr" --service-cidr "$svc_cidr" --cni-bridge "$(wbridge "$i")" \
			--resolv-conf "$data/resolv.conf" >"$results/skiff-w$i.log" 2>&1 &
		worker_pids+=($!)
	done
	wait_ready $((workers + 1))
	for i in $(seq 1 "$workers"); do check_node "${worker_pids[$((i - 1))]}" "$data/w$i"; done
fi
log "importing images on every node"
"$skiff" images import --data-dir "$data" "$cache"/images/*.tar >/dev/null
for i in $(seq 1 "$workers"); do
	"$skiff" images import --data-dir "$data/w$i" "$cache"/images/*.tar >/dev/null
done
# A registry on the control plane's address serving the same images (hack/conformance/registry),
# named in every node's containerd as the mirror of each registry they come from: specs that pull
# with imagePullPolicy Always ("should be able to pull image") pull through the registry API,
# and nothing leaves the machine (what the mirror lacks falls through to the closed proxy).
registry_port=5000
"$results/registry" -listen "$addr:$registry_port" "$cache/images" >"$results/registry.log" 2>&1 &
registry_pid=$!
for host in $("$results/registry" -hosts "$cache/images"); do
	for nd in "$data" $(for i in $(seq 1 "$workers"); do echo "$data/w$i"; done); do
		mkdir -p "$nd/kubelet/containerd/certs.d/$host"
		printf 'server = "https://%s"\n\n[host."http://%s:%s"]\n  capabilities = ["pull", "resolve"]\n' \
			"$host" "$addr" "$registry_port" >"$nd/kubelet/containerd/certs.d/$host/hosts.toml"
	done
done
kubectl get nodes -o wide >"$results/nodes.txt" 2>&1 || true
if ((csi_drivers)); then
	# The snapshot specs need the VolumeSnapshot CRDs and the snapshot controller, which a cluster
	# provides (Kubernetes' own CI deploys them as the volumesnapshots addon) and e2e.test does not:
	# the addon's manifests from the same source, with the controller build-csi-images.sh built.
	addon=$cache/src/kubernetes-$version/cluster/addons/volumesnapshots
	snapshot_controller=$(hack/conformance/build-csi-images.sh --list "$cache" "$version" | grep '/snapshot-controller:')
	log "volume snapshot CRDs and $snapshot_controller"
	{
		kubectl apply -f "$addon/crd" &&
			kubectl wait --for=condition=Established crd --all --timeout=60s &&
			kubectl apply -f "$addon/volume-snapshot-controller/rbac-volume-snapshot-controller.yaml" &&
			sed "s#image: registry.k8s.io/sig-storage/snapshot-controller:.*#image: $snapshot_controller#" \
				"$addon/volume-snapshot-controller/volume-snapshot-controller-deployment.yaml" | kubectl apply -f - &&
			kubectl -n kube-system rollout status statefulset/volume-snapshot-controller --timeout=5m
	} >"$results/snapshot-controller.txt" 2>&1 ||
		log "the snapshot controller is not ready (see $results/snapshot-controller.txt): the snapshot specs will fail"
fi

# --- the specs ---
# e2e.test reaches the API server at the control plane's address, not the admin kubeconfig's
# loopback balancer, as upstream's CI clusters are reached: kubectl never sends loopback through
# a proxy, and "Kubectl client Simple pod should support exec through an HTTP proxy" checks that
# its proxy saw the request. The image-pull proxy above is the nodes' (their containerd's), not
# the specs': e2e.test runs without it, so that the specs' own proxies are not bypassed by its
# NO_PROXY.
e2e_kubeconfig=$results/e2e.kubeconfig
cp "$KUBECONFIG" "$e2e_kubeconfig"
kubectl --kubeconfig "$e2e_kubeconfig" config set-cluster "$(kubectl --kubeconfig "$e2e_kubeconfig" config view -o jsonpath='{.clusters[0].name}')" \
	--server "https://$addr:$https_port" >/dev/null
# The kubectl e2e.test runs is the one build-e2e.sh built from e2e.test's own tree (specs read its
# log lines), else the host's; either way the binary itself, not a symlink to it: the in-cluster
# config spec copies it into a pod with kubectl cp, which copies a symlink as a link (the gcloud
# SDK's /usr/bin/kubectl is one), leaving /tmp/kubectl dangling there.
kubectl_bin=$(readlink -f "$cache/bin/e2e-kubectl/kubectl" 2>/dev/null || readlink -f "$(command -v kubectl)")
[[ -x $kubectl_bin ]] || kubectl_bin=$(readlink -f "$(command -v kubectl)")
e2e_args=(--kubeconfig="$e2e_kubeconfig" --provider=skeleton --disable-log-dump --kubectl-path="$kubectl_bin")
no_proxy_env=(env -u HTTPS_PROXY -u HTTP_PROXY -u NO_PROXY -u https_proxy -u http_proxy -u no_proxy)
ginkgo_args=(--timeout="$timeout" --poll-progress-after=5m --no-color --output-dir="$results")
# ginkgo ORs several --focus flags: a suite's own focus and the user's are one regex, the user's
# matching the rest of the name after the suite's part.
if [[ -n $suite_focus ]]; then
	ginkgo_args+=(--focus="$suite_focus${focus:+.*($focus)}")
elif [[ -n $focus ]]; then
	ginkgo_args+=(--focus="$focus")
fi
if [[ -n $suite_skip || -n $skip ]]; then
	both=$suite_skip${suite_skip:+${skip:+|}}$skip
	ginkgo_args+=(--skip="$both")
fi

status=0
reports=()
if ((parallel)); then
	log "parallel $suite specs ($parallel_filter, --procs=$procs)"
	"${no_proxy_env[@]}" "$cache/bin/ginkgo" run --procs="$procs" "${ginkgo_args[@]}" \
		--label-filter="$parallel_filter" --junit-report=junit_parallel.xml \
		"$cache/bin/e2e.test" -- "${e2e_args[@]}" >"$results/parallel.log" 2>&1 || status=1
	reports+=("$results/junit_parallel.xml")
fi
if ((serial)); then
	log "[Serial] $suite specs ($serial_filter)"
	"${no_proxy_env[@]}" "$cache/bin/ginkgo" run "${ginkgo_args[@]}" \
		--label-filter="$serial_filter" --junit-report=junit_serial.xml \
		"$cache/bin/e2e.test" -- "${e2e_args[@]}" >"$results/serial.log" 2>&1 || status=1
	reports+=("$results/junit_serial.xml")
fi

existing=()
for r in "${reports[@]}"; do [[ -f $r ]] && existing+=("$r"); done
if ((${#existing[@]})); then
	(cd "$repo" && go run ./hack/conformance/junitsum -page "$results/results.md" -causes hack/conformance/causes.tsv \
		-title "skiff: e2e.test $version, suite $suite${sig:+, sig-$sig}" "${existing[@]}") | tee "$results/summary.txt"
else
	echo "no junit report was written; see $results/parallel.log" >&2
	status=1
fi
log "results in $results (junit_*.xml, parallel.log, serial.log, skiff.log, summary.txt, results.md, missing-images.txt)"
exit $status
