#!/usr/bin/env bash
# Runs the Gateway API conformance suite (sigs.k8s.io/gateway-api/conformance v1.6.3, the release
# whose CRDs skiff installs) against a fresh one-node skiff cluster with --gateway-class=skiff and
# the GATEWAY-HTTP and GATEWAY-GRPC profiles, offline, and writes the suite's conformance report. Not part of
# .ci/run. See docs/user/gateway-api.md.
#
#   hack/gateway-conformance.sh                         the GATEWAY-HTTP and GATEWAY-GRPC profiles
#   hack/gateway-conformance.sh --run-test HTTPRouteSimpleSameNamespace   one test
#
# Options:
#   --run-test NAME     run only the suite's test NAME (its ShortName)
#   --skip-tests LIST   comma-separated ShortNames to skip
#   --supported-features LIST  comma-separated features to test instead of those the GatewayClass
#                       claims in status.supportedFeatures (which the suite reads when none are given)
#   --profiles LIST     the suite's conformance profiles (default GATEWAY-HTTP,GATEWAY-GRPC)
#   --timeout D         go test's limit for the run (default 60m)
#   --timeout-overrides LIST  the suite's --timeout-config-overrides ("MaxTimeToConsistency:10;...",
#                       seconds): shorter waits make a run with many failing tests end sooner
#   --results DIR       where the report (gateway-api-report.yaml), conformance.log, summary.txt and
#                       skiff.log go (default /tmp/skiff-gateway-conformance-<time>)
#   --keep              leave the cluster running at the end (prints how to stop it)
#
# Steps: builds the suite's test binary (go test -c of the conformance module, with the
# gateway-api module beside it as the module's replace directive expects) and the echo server
# image (conformance/echo-basic, CGO_ENABLED=0, one layer, tagged with every echo-basic tag the
# suite's manifests name) into $SKIFF_GATEWAY_CONFORMANCE_CACHE (default
# ${XDG_CACHE_HOME:-~/.cache}/skiff-gateway-conformance), reusing what is there; builds skiff;
# starts `skiff server` with every role on a bridge with a private 10.251.n.0/24 of its own (as
# hack/conformance.sh starts its control plane: own pod and service ranges, an iptables chain that
# drops what pods send off the node, image pulls to a closed loopback proxy); imports the image;
# applies GatewayClass skiff with an address pool of that network ($net.200-250, a ConfigMap its
# parametersRef names); runs the suite; counts passed/failed/skipped tests; stops the node
# and removes what it created.
#
# Images: echo-basic is the suite's own; coredns (run by the base manifests for UDPRoute tests,
# outside GATEWAY-HTTP) is a stand-in that only stays up; echo-advanced (Istio's test app) is not
# built (the few tests using it fail on a pull).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

version=v1.6.3
run_test='' skip_tests='' features='' timeout=60m keep=0 overrides='' profiles=GATEWAY-HTTP,GATEWAY-GRPC
results=/tmp/skiff-gateway-conformance-$(date -u +%Y%m%dT%H%M%S)
while (($#)); do
	case $1 in
	--run-test) run_test=$2; shift 2 ;;
	--skip-tests) skip_tests=$2; shift 2 ;;
	--supported-features) features=$2; shift 2 ;;
	--timeout) timeout=$2; shift 2 ;;
	--timeout-overrides) overrides=$2; shift 2 ;;
	--profiles) profiles=$2; shift 2 ;;
	--results) results=$2; shift 2 ;;
	--keep) keep=1; shift ;;
	-h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
	*) echo "unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
done
[[ $(id -u) == 0 ]] || { echo "needs root (containerd, iptables, a bridge)" >&2; exit 1; }

cache=${SKIFF_GATEWAY_CONFORMANCE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/skiff-gateway-conformance}
mkdir -p "$cache/bin" "$cache/images" "$results"
results=$(cd "$results" && pwd)
log() { echo "[$(date -u +%H:%M:%S)] $*"; }
export GOWORK=off GOFLAGS=-mod=mod

# --- the suite and its echo server, from the module proxy ---
src=$cache/src/gateway-api-$version
if [[ ! -f $src/.ready ]]; then
	log "sources of sigs.k8s.io/gateway-api $version and its conformance module"
	api=$(go mod download -json "sigs.k8s.io/gateway-api@$version" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
	conf=$(go mod download -json "sigs.k8s.io/gateway-api/conformance@$version" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
	[[ -d $api && -d $conf ]] || { echo "go mod download gave no source directories" >&2; exit 1; }
	rm -rf "$src" && mkdir -p "$src"
	# The conformance module replaces sigs.k8s.io/gateway-api with ../: the layout of the repository.
	cp -r "$api/." "$src/" && rm -rf "$src/conformance" && cp -r "$conf" "$src/conformance"
	chmod -R u+w "$src"
	touch "$src/.ready"
fi
suite=$cache/bin/gateway-conformance-$version.test
if [[ ! -x $suite ]]; then
	log "building the conformance suite ($suite)"
	(cd "$src/conformance" && nice -n 19 go test -c -o "$suite" .)
fi
echo_tags=$(grep -rhoE 'registry\.k8s\.io/gateway-api/echo-basic:[^" ]+' "$src/conformance/base" "$src/conformance/tests" | sort -u)
echo_bin=$cache/bin/echo-basic-$version
if [[ ! -x $echo_bin ]]; then
	log "building echo-basic"
	eb=$cache/build/echo-basic
	rm -rf "$eb" && mkdir -p "$eb" && cp -r "$src/conformance/echo-basic/." "$eb/" && chmod -R u+w "$eb"
	mv -f "$eb/.go.mod" "$eb/go.mod" && mv -f "$eb/.go.sum" "$eb/go.sum"
	(cd "$eb" && CGO_ENABLED=0 nice -n 19 go build -trimpath -ldflags=-s -o "$echo_bin" .)
fi
log "skiff"
nice -n 19 go build -o "$results/skiff" ./cmd/skiff
skiff=$results/skiff
for tag in $echo_tags; do
	archive=$cache/images/$(echo "$tag" | sed 's#[/:@]#_#g').tar
	[[ -f $archive && $archive -nt $echo_bin ]] && continue
	root=$cache/build/echo-root
	rm -rf "$root" && mkdir -p "$root"
	install -m 0755 "$echo_bin" "$root/echo-basic"
	# As the upstream image: distroless, user nonroot.
	"$skiff" images build-dir --root "$root" --tag "$tag" --out "$cache/images" --entrypoint /echo-basic --user 65532:65532 >/dev/null
	log "built $tag"
done
# coredns: the base manifests run it for the UDPRoute tests (not in GATEWAY-HTTP), and the suite
# waits for every pod of its namespace before any test. A stand-in that only stays up takes its
# tag (the manifest's Corefile would forward DNS to 8.8.8.8: nothing here may reach that).
coredns=registry.k8s.io/coredns/coredns:v1.12.2
coredns_archive=$cache/images/$(echo "$coredns" | sed 's#[/:@]#_#g').tar
if [[ ! -f $coredns_archive ]]; then
	root=$cache/build/coredns-root
	rm -rf "$root" && mkdir -p "$root/bin"
	install -m 0755 "$(command -v busybox)" "$root/bin/busybox"
	ln -s busybox "$root/bin/sh"
	printf '#!/bin/sh\n# A stand-in for coredns: stays up, serves nothing; its arguments are ignored.\nexec /bin/busybox sleep 2147483647\n' >"$root/stand-in"
	chmod 0755 "$root/stand-in"
	"$skiff" images build-dir --root "$root" --tag "$coredns" --out "$cache/images" --entrypoint /stand-in >/dev/null
	log "built $coredns (a stand-in)"
fi

# --- the cluster: one node with every role on a bridge of its own ---
id=$$
netbr=skgnet$((id % 100000))
net=''
for _ in $(seq 1 50); do
	cand=10.251.$((RANDOM % 250 + 1))
	ip -o -4 addr | grep -q " $cand\." || ip -4 route | grep -q "^$cand\." || { net=$cand; break; }
done
[[ -n $net ]] || { echo "no free /24 in 10.251.0.0/16" >&2; exit 1; }
addr=$net.1
pod_cidr='' svc_cidr=''
for _ in $(seq 1 50); do
	n=$((RANDOM % 256)) m=$((RANDOM % 256))
	ip -4 route | grep -q "^10\.246\.$n\." || ip -4 route | grep -q "^10\.247\.$m\." || { pod_cidr=10.246.$n.0/24 svc_cidr=10.247.$m.0/24; break; }
done
[[ -n $pod_cidr ]] || { echo "no free pod range in 10.246.0.0/16" >&2; exit 1; }
chain=SKGW-$id
bridge=skgbr$((id % 100000))
data=$(mktemp -d /tmp/skg.XXXX) # short: containerd's socket path must stay under the unix-socket limit
skiff_pid=''

cleanup() {
	set +e
	if [[ -n $skiff_pid ]] && kill -0 "$skiff_pid" 2>/dev/null; then
		if ((keep)); then
			echo "cluster left running: KUBECONFIG=$data/admin.kubeconfig; stop with: kill $skiff_pid, then" \
				"ip link del $netbr; ip link del $bridge; iptables -D FORWARD -j $chain; iptables -D OUTPUT -d $svc_cidr -j $chain; iptables -F $chain; iptables -X $chain; umount what /proc/mounts lists under $data; rm -rf $data"
			return
		fi
		log "stopping the cluster"
		KUBECONFIG=$data/admin.kubeconfig timeout 120 kubectl delete pods --all --all-namespaces --grace-period=1 --timeout=90s >/dev/null 2>&1
		kill -INT "$skiff_pid"
		for _ in $(seq 1 30); do kill -0 "$skiff_pid" 2>/dev/null || break; sleep 1; done
		kill -KILL "$skiff_pid" 2>/dev/null
		wait "$skiff_pid" 2>/dev/null
	fi
	# Containers whose pods were not deleted in time outlive the node: their shims (and what they
	# run) are this run's, found by the containerd address under its data dir.
	local shim
	for shim in $(ps -eo pid=,args= | awk -v a="-address $data/" 'index($0, a) && /containerd-shim/ {print $1}'); do
		kill -KILL $(pgrep -P "$shim") "$shim" 2>/dev/null
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

log "test network $net.0/24 on $netbr (node $addr); pods $pod_cidr, services $svc_cidr"
ip link add "$netbr" type bridge
ip addr add "$addr/24" dev "$netbr"
ip link set "$netbr" up
# As hack/conformance.sh: a packet still addressed to a ClusterIP after the service proxy's
# rules, or sent by a pod off the node, is dropped; the node's own /24 is reachable.
iptables -N "$chain"
iptables -A "$chain" -d "$svc_cidr" -j DROP
iptables -A "$chain" -d "$net.0/24" -j RETURN
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
export KUBECONFIG=$data/admin.kubeconfig
# Pulls of images this script does not build fail at once, without a DNS lookup.
export HTTPS_PROXY=http://127.0.0.1:9 HTTP_PROXY=http://127.0.0.1:9 NO_PROXY="localhost,127.0.0.0/8,$net.0/24,$pod_cidr,$svc_cidr"
log "starting skiff (data $data, log $results/skiff.log)"
"$skiff" server --data-dir "$data" --roles etcd,controlplane,worker --node-name "skgw-$id" \
	--bind-address "$addr" --advertise-address "$addr" --https-port "$(free_port)" --etcd-client-port "$(free_port)" \
	--etcd-peer-port "$(free_port)" --kubelet-port "$(free_port)" --lb-port "$(free_port)" \
	--cluster-cidr "$pod_cidr" --service-cidr "$svc_cidr" --cni-bridge "$bridge" --resolv-conf "$data/resolv.conf" \
	>"$results/skiff.log" 2>&1 &
skiff_pid=$!
for i in $(seq 1 300); do
	if [[ -f $KUBECONFIG ]] && kubectl wait --for=condition=Ready node --all --timeout=2s >/dev/null 2>&1 &&
		kubectl wait --for=condition=Established crd/gateways.gateway.networking.k8s.io crd/httproutes.gateway.networking.k8s.io --timeout=2s >/dev/null 2>&1; then
		break
	fi
	kill -0 "$skiff_pid" 2>/dev/null || { tail -30 "$results/skiff.log" >&2; exit 1; }
	((i < 300)) || { echo "the node is not ready after 300 tries; see $results/skiff.log" >&2; exit 1; }
	sleep 1
done
log "importing the echo server image"
"$skiff" images import --data-dir "$data" "$cache"/images/*.tar >/dev/null
# The class's address pool: 51 addresses of the test network, so each Gateway the suite creates
# has an address of its own (HTTPRouteMultipleGateways sends to two Gateways on one port). The
# node holds them on the bridge, beside its own address.
kubectl apply -f - >/dev/null <<-EOF
	apiVersion: v1
	kind: ConfigMap
	metadata:
	  name: skiff-gateway-pool
	  namespace: kube-system
	data:
	  addresses: $net.200-$net.250
	---
	apiVersion: gateway.networking.k8s.io/v1
	kind: GatewayClass
	metadata:
	  name: skiff
	spec:
	  controllerName: skiff.sh/gateway-controller
	  parametersRef: {group: "", kind: ConfigMap, name: skiff-gateway-pool, namespace: kube-system}
EOF
# The suite reads the features to test from the class's status: wait for the controller's.
kubectl wait --for=condition=Accepted gatewayclass/skiff --timeout=300s >/dev/null
kubectl wait --for=jsonpath='{.status.supportedFeatures[0].name}' gatewayclass/skiff --timeout=60s >/dev/null

# --- the suite ---
args=(-test.run '^TestConformance$' -test.v -test.timeout "$timeout"
	--gateway-class=skiff --conformance-profiles="$profiles"
	# GatewayStaticAddresses asks for one address of the class's pool and one outside it.
	--usable-address="$net.250" --unusable-address="$net.199"
	--report-output="$results/gateway-api-report.yaml"
	--organization=skiff-sh --project=skiff --url=https://github.com/skiff-sh/skiff
	--version="$(cd "$repo" && git describe --always --dirty)" --contact=https://github.com/skiff-sh/skiff/issues)
[[ -n $run_test ]] && args+=(--run-test="$run_test")
[[ -n $skip_tests ]] && args+=(--skip-tests="$skip_tests")
[[ -n $features ]] && args+=(--supported-features="$features")
[[ -n $overrides ]] && args+=(--timeout-config-overrides="$overrides")
log "running the suite (log $results/conformance.log)"
status=0
# The suite reads its manifests relative to the conformance module's directory.
(cd "$src/conformance" && "$suite" "${args[@]}") >"$results/conformance.log" 2>&1 || status=1

# Each test of the suite is a subtest of TestConformance: count the first level.
{
	for outcome in PASS FAIL SKIP; do
		printf '%s %s\n' "$outcome" "$(grep -cE "^    --- $outcome: TestConformance/[^/ ]+ " "$results/conformance.log" || true)"
	done
	grep -E "^--- (PASS|FAIL): TestConformance " "$results/conformance.log" | sed 's/^--- /suite: /' || echo "suite: no result (see conformance.log)"
	echo "failed:"
	grep -oE "^    --- FAIL: TestConformance/[^/ ]+" "$results/conformance.log" | sed 's/.*TestConformance\//  /' || true
} | tee "$results/summary.txt"
log "results in $results (gateway-api-report.yaml, conformance.log, summary.txt, skiff.log)"
exit $status
