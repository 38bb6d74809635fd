#!/usr/bin/env bash
# Runs the upstream Kubernetes [Conformance] specs (e2e.test v1.33.13) against a
# fresh one-node skiff cluster, offline. Not part of .ci/run: the whole suite
# takes about an hour. See README "Conformance".
#
#   hack/conformance.sh                       all [Conformance] specs: parallel ones, then [Serial]
#   hack/conformance.sh --focus 'ConfigMap'   only those whose name also matches REGEX
#
# Options:
#   --focus REGEX   run only [Conformance] specs whose name matches REGEX
#   --skip REGEX    and skip those matching REGEX
#   --procs N       parallel ginkgo processes (default 3)
#   --timeout D     ginkgo's time limit for each of the two runs (default 3h); specs cut by it
#                   are reported as interrupted (failed) in the junit report
#   --no-serial     do not run the [Serial] specs afterwards
#   --results DIR   where junit reports, logs and the summary go (default /tmp/skiff-conformance-<time>)
#   --keep          leave the cluster running at the end (prints how to stop it)
#
# Steps: builds e2e.test and ginkgo (hack/conformance/build-e2e.sh) and the test
# images (hack/conformance/build-images.sh) into $SKIFF_CONFORMANCE_CACHE
# (default ${XDG_CACHE_HOME:-~/.cache}/skiff-conformance), reusing what is
# there; builds skiff; puts a private test address on a new dummy interface
# (on loopback where the kernel has no dummy driver) and starts `skiff server` (all roles) bound to it with its own pod and
# service ranges; imports the images; runs ginkgo; prints passed/failed per
# SIG from the junit reports; stops the cluster and removes what it created.
#
# Network: pods get a resolv.conf naming only the test address (nothing
# answers there), image pulls go to a proxy on a closed loopback port, and an iptables chain (FORWARD, and OUTPUT for the service
# range) drops what a pod sends off the node and any packet still addressed to
# a ClusterIP after DNAT (one the service proxy has not rewritten), so no spec reaches
# another host.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

focus='' skip='' procs=3 serial=1 keep=0 timeout=3h
results=/tmp/skiff-conformance-$(date -u +%Y%m%dT%H%M%S)
while (($#)); do
	case $1 in
	--focus) focus=$2; shift 2 ;;
	--skip) skip=$2; shift 2 ;;
	--procs) procs=$2; shift 2 ;;
	--timeout) timeout=$2; shift 2 ;;
	--no-serial) serial=0; shift ;;
	--results) results=$2; shift 2 ;;
	--keep) keep=1; shift ;;
	-h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
	*) echo "unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
done

version=v1.33.13
cache=${SKIFF_CONFORMANCE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/skiff-conformance}
mkdir -p "$cache" "$results"
results=$(cd "$results" && pwd)
log() { echo "[$(date -u +%H:%M:%S)] $*"; }

[[ $(id -u) == 0 ]] || { echo "needs root (containerd, iptables, a dummy interface)" >&2; exit 1; }
./hack/install-runtime.sh >/dev/null

log "e2e.test and ginkgo ($version) in $cache/bin"
hack/conformance/build-e2e.sh "$cache" "$version"
log "skiff"
nice -n 19 go build -o "$results/skiff" ./cmd/skiff
skiff=$results/skiff
log "test images in $cache/images"
hack/conformance/build-images.sh "$cache" "$skiff" "$version"

# --- the cluster's network: a dummy interface with a private test address ---
id=$$
ifname=skconf$((id % 100000))
addr=''
for _ in $(seq 1 20); do
	cand=10.250.$((RANDOM % 250 + 1)).$((RANDOM % 250 + 2))
	ip -o addr | grep -q " $cand/" || { addr=$cand; break; }
done
[[ -n $addr ]] || { echo "no free test address in 10.250.0.0/16" >&2; exit 1; }
# A /24 of its own for the pods (the node's podCIDR is the whole range) and for the services, so
# that runs side by side on one host do not route the same pod addresses to two bridges.
pod_cidr='' svc_cidr=''
for _ in $(seq 1 50); do
	n=$((RANDOM % 256))
	if ! ip route | grep -q "^10\.244\.$n\.\|^10\.245\.$n\."; then
		pod_cidr=10.244.$n.0/24 svc_cidr=10.245.$n.0/24
		break
	fi
done
[[ -n $pod_cidr ]] || { echo "no free /24 in 10.244.0.0/16" >&2; exit 1; }
chain=SKCONF-$id
bridge=skcbr$((id % 100000)) # its own bridge and CNI network: other clusters on this host use cni0
data=$(mktemp -d /tmp/skc.XXXX) # short: containerd's socket path must stay under the unix-socket limit
skiff_pid=''

cleanup() {
	set +e
	if [[ -n $skiff_pid ]] && kill -0 "$skiff_pid" 2>/dev/null; then
		if ((keep)); then
			echo "cluster left running: KUBECONFIG=$data/admin.kubeconfig; stop with: kill $skiff_pid, then" \
				"ip addr del $addr/32 dev $ifname; ip link del $bridge; ip link del $ifname (unless lo); iptables -D FORWARD -j $chain; iptables -D OUTPUT -d $svc_cidr -j $chain; iptables -F $chain; iptables -X $chain"
			return
		fi
		log "stopping the cluster"
		KUBECONFIG=$data/admin.kubeconfig timeout 120 kubectl delete pods --all --all-namespaces --grace-period=1 --timeout=90s >/dev/null 2>&1
		kill -INT "$skiff_pid"
		for _ in $(seq 1 30); do kill -0 "$skiff_pid" 2>/dev/null || break; sleep 1; done
		kill -KILL "$skiff_pid" 2>/dev/null
		wait "$skiff_pid" 2>/dev/null
	fi
	iptables -D FORWARD -j "$chain" 2>/dev/null
	iptables -D OUTPUT -d "$svc_cidr" -j "$chain" 2>/dev/null
	iptables -F "$chain" 2>/dev/null
	iptables -X "$chain" 2>/dev/null
	ip link del "$bridge" 2>/dev/null
	rm -rf "/var/lib/cni/networks/$bridge"
	if [[ $ifname == lo ]]; then
		ip addr del "$addr/32" dev lo 2>/dev/null
	else
		ip link del "$ifname" 2>/dev/null
	fi
	grep -q " $data/" /proc/mounts 2>/dev/null && awk -v d="$data/" 'index($2, d) == 1 {print $2}' /proc/mounts | sort -r | xargs -r -n1 umount -l
	rm -rf "$data"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log "test address $addr on $ifname; pods $pod_cidr, services $svc_cidr"
if ip link add "$ifname" type dummy 2>/dev/null; then
	ip link set "$ifname" up
else
	ifname=lo # no dummy interfaces in this kernel: the address goes on loopback, removed at the end
fi
ip addr add "$addr/32" dev "$ifname"
# Filter after DNAT: a pod may reach pods (directly or through a Service's rules, once a service
# proxy writes them); a packet still addressed to a ClusterIP has no rules and would follow the
# default route off this machine, so it is dropped, as is anything else a pod sends off the node.
iptables -N "$chain"
iptables -A "$chain" -d "$svc_cidr" -j DROP
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
# (ports.KubeletPort), not the one the node publishes: take it when it is free.
ss -Hltn "sport = :10250" | grep -q . || kubelet_port=10250
export KUBECONFIG=$data/admin.kubeconfig

log "starting skiff (data $data, log $results/skiff.log)"
# Image pulls: some specs deliberately name images that do not exist (gcr.io/...:nonexistent,
# foo:non-existent). containerd (a child of skiff) would resolve and contact those registries;
# a proxy on a closed loopback port makes every pull fail locally without a DNS lookup, while
# the cluster's own addresses bypass it.
HTTPS_PROXY=http://127.0.0.1:9 HTTP_PROXY=http://127.0.0.1:9 \
	NO_PROXY="localhost,127.0.0.0/8,$addr,$pod_cidr,$svc_cidr" \
	"$skiff" server --data-dir "$data" --roles etcd,controlplane,worker --node-name "skconf-$id" \
	--bind-address "$addr" --https-port "$https_port" --etcd-client-port "$etcd_port" \
	--etcd-peer-port "$peer_port" --kubelet-port "$kubelet_port" --lb-port "$lb_port" \
	--cluster-cidr "$pod_cidr" --service-cidr "$svc_cidr" --cni-bridge "$bridge" --resolv-conf "$data/resolv.conf" \
	--local-path-helper-image registry.k8s.io/e2e-test-images/busybox:1.36.1-1 \
	>"$results/skiff.log" 2>&1 &
skiff_pid=$!
for i in $(seq 1 240); do
	if [[ -f $KUBECONFIG ]] && kubectl get --raw /readyz >/dev/null 2>&1 &&
		kubectl wait --for=condition=Ready node --all --timeout=2s >/dev/null 2>&1; then
		break
	fi
	kill -0 "$skiff_pid" 2>/dev/null || { tail -30 "$results/skiff.log" >&2; exit 1; }
	((i < 240)) || { echo "skiff not ready after 240 tries; see $results/skiff.log" >&2; exit 1; }
	sleep 1
done
log "importing images"
"$skiff" images import --data-dir "$data" "$cache"/images/*.tar >/dev/null

# --- the specs ---
e2e_args=(--kubeconfig="$KUBECONFIG" --provider=skeleton --disable-log-dump)
ginkgo_args=(--timeout="$timeout" --poll-progress-after=5m --no-color --output-dir="$results")
[[ -n $focus ]] && ginkgo_args+=(--focus="$focus")
[[ -n $skip ]] && ginkgo_args+=(--skip="$skip")

status=0
log "parallel [Conformance] specs (--procs=$procs)"
"$cache/bin/ginkgo" run --procs="$procs" "${ginkgo_args[@]}" \
	--label-filter='Conformance && !Serial && !Disruptive' --junit-report=junit_parallel.xml \
	"$cache/bin/e2e.test" -- "${e2e_args[@]}" >"$results/parallel.log" 2>&1 || status=1
reports=("$results/junit_parallel.xml")
if ((serial)); then
	log "[Serial] [Conformance] specs"
	"$cache/bin/ginkgo" run "${ginkgo_args[@]}" \
		--label-filter='Conformance && Serial && !Disruptive' --junit-report=junit_serial.xml \
		"$cache/bin/e2e.test" -- "${e2e_args[@]}" >"$results/serial.log" 2>&1 || status=1
	reports+=("$results/junit_serial.xml")
fi

existing=()
for r in "${reports[@]}"; do [[ -f $r ]] && existing+=("$r"); done
if ((${#existing[@]})); then
	(cd "$repo" && go run ./hack/conformance/junitsum "${existing[@]}") | tee "$results/summary.txt"
else
	echo "no junit report was written; see $results/parallel.log" >&2
	status=1
fi
log "results in $results (junit_*.xml, parallel.log, serial.log, skiff.log, summary.txt)"
exit $status
