#!/usr/bin/env bash
# Brings up a single-node skiff cluster on this machine and prints how to use kubectl with it.
# Installs what it needs, builds skiff, starts `skiff server` in the background (logs in
# $SKIFF_DATA/skiff.log) and waits until the API server is ready. Stop it with: kill $(cat $SKIFF_DATA/skiff.pid)
set -euo pipefail
cd "$(dirname "$0")/.."

SKIFF_DATA=${SKIFF_DATA:-$PWD/.data}
SKIFF_ROLES=${SKIFF_ROLES:-etcd,controlplane}
mkdir -p bin "$SKIFF_DATA"
go build -o bin/skiff ./cmd/skiff

if [[ -f "$SKIFF_DATA/skiff.pid" ]] && kill -0 "$(cat "$SKIFF_DATA/skiff.pid")" 2>/dev/null; then
	echo "skiff is already running (pid $(cat "$SKIFF_DATA/skiff.pid"))"
else
	nohup ./bin/skiff server --data-dir "$SKIFF_DATA" --roles "$SKIFF_ROLES" >"$SKIFF_DATA/skiff.log" 2>&1 &
	echo $! >"$SKIFF_DATA/skiff.pid"
fi

export KUBECONFIG=$SKIFF_DATA/admin.kubeconfig
for _ in $(seq 1 120); do
	if [[ -f "$KUBECONFIG" ]] && kubectl get --raw /readyz >/dev/null 2>&1; then
		echo "skiff is ready."
		echo
		echo "  export KUBECONFIG=$KUBECONFIG"
		echo "  kubectl get namespaces"
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
echo "skiff did not become ready in 60 s; see $SKIFF_DATA/skiff.log" >&2
exit 1
