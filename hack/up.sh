#!/usr/bin/env bash
# Brings up a single-node skiff cluster on this machine and prints how to use kubectl with it.
# Installs what it needs (containerd, runc, CNI plugins, busybox-static from Debian), builds skiff and an
# offline busybox image, starts `skiff server` (all roles) in the background (log in $SKIFF_DATA/skiff.log),
# waits until the node is Ready and imports the image. Stop it with: kill $(cat $SKIFF_DATA/skiff.pid)
set -euo pipefail
cd "$(dirname "$0")/.."

SKIFF_DATA=${SKIFF_DATA:-$PWD/.data}
SKIFF_ROLES=${SKIFF_ROLES:-etcd,controlplane,worker}
mkdir -p bin "$SKIFF_DATA"
if [[ ",$SKIFF_ROLES," == *",worker,"* ]]; then
	./hack/install-runtime.sh >/dev/null
fi
go build -o bin/skiff ./cmd/skiff

if [[ -f "$SKIFF_DATA/skiff.pid" ]] && kill -0 "$(cat "$SKIFF_DATA/skiff.pid")" 2>/dev/null; then
	echo "skiff is already running (pid $(cat "$SKIFF_DATA/skiff.pid"))"
else
	nohup ./bin/skiff server --data-dir "$SKIFF_DATA" --roles "$SKIFF_ROLES" >"$SKIFF_DATA/skiff.log" 2>&1 &
	echo $! >"$SKIFF_DATA/skiff.pid"
fi

export KUBECONFIG=$SKIFF_DATA/admin.kubeconfig
ready() {
	[[ -f "$KUBECONFIG" ]] && kubectl get --raw /readyz >/dev/null 2>&1 || return 1
	if [[ ",$SKIFF_ROLES," == *",worker,"* ]]; then
		kubectl wait --for=condition=Ready node --all --timeout=1s >/dev/null 2>&1 || return 1
	fi
}
for _ in $(seq 1 240); do
	if ready; then
		if [[ ",$SKIFF_ROLES," == *",worker,"* ]]; then
			archive=$(./bin/skiff images build-busybox --out "$SKIFF_DATA")
			./bin/skiff images import --data-dir "$SKIFF_DATA" "$archive" >/dev/null
		fi
		echo "skiff is ready."
		echo
		echo "  export KUBECONFIG=$KUBECONFIG"
		echo "  kubectl get nodes"
		echo "  kubectl run web --image=localhost/busybox:local -- httpd -f -p 8080"
		echo
		echo "Logs: $SKIFF_DATA/skiff.log   Stop: kill \$(cat $SKIFF_DATA/skiff.pid)"
		exit 0
	fi
	if ! kill -0 "$(cat "$SKIFF_DATA/skiff.pid")" 2>/dev/null; then
		echo "skiff exited; last log lines:" >&2
		tail -n 30 "$SKIFF_DATA/skiff.log" >&2
		exit 1
	fi
	sleep 0.5
done
echo "skiff did not become ready in 120 s; see $SKIFF_DATA/skiff.log" >&2
exit 1
