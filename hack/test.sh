#!/usr/bin/env bash
# The test suite: installs what the tests need (etcd-server for the external-etcd tests; containerd,
# runc, CNI plugins and busybox-static for the kubelet; kubectl is already on every machine), vets, runs every package's tests, then the end-to-end suite that drives
# the real skiff binary with the real kubectl.
set -euo pipefail
cd "$(dirname "$0")/.."

./hack/install-etcd.sh >/dev/null
./hack/install-runtime.sh >/dev/null
if ! command -v kubectl >/dev/null; then
	echo "kubectl is required on PATH (v1.32)" >&2
	exit 1
fi

echo "== go vet"
go vet ./...

echo "== unit and integration tests"
go test -count=1 -timeout 30m ./...

echo "== race detector on the concurrent core"
go test -count=1 -race -timeout 20m ./internal/apiserver/... ./internal/storage/...
