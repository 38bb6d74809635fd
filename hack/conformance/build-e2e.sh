#!/usr/bin/env bash
# Builds the upstream conformance tools, e2e.test and the ginkgo CLI, from the
# k8s.io/kubernetes module source into $CACHE/bin. A test tool only: it is never
# a dependency of skiff's go.mod. Skips the build when the binaries for this
# version are already there.
#
# usage: hack/conformance/build-e2e.sh CACHE_DIR [K8S_VERSION] [--source-only]
# --source-only prepares $CACHE/src/kubernetes-<version> and stops (build-components.sh uses it).
set -euo pipefail

cache=${1:?usage: build-e2e.sh CACHE_DIR [K8S_VERSION] [--source-only]}
version=${2:-v1.33.13}
source_only=${3:-}
staging_version=v0.${version#v1.}          # v1.33.13 -> v0.33.13
sample_apiserver_version=v0.33.4           # the proxy serves no sample-apiserver v0.33.13

export GOWORK=off GOFLAGS=-mod=mod
bin=$cache/bin
src=$cache/src/kubernetes-$version
mkdir -p "$bin" "$cache/src"

# The kubectl of e2e.test's own version, as Kubernetes' CI builds it from the same tree: specs
# read its --v=6 log lines (v1.33 writes verb="POST" url="..."), which an older kubectl words
# otherwise. The host's kubectl (v1.32) stays the one skiff's own end-to-end tests use.
# Named kubectl in a directory of its own (the in-cluster config spec runs it as /tmp/kubectl once
# copied into a pod) and static (that pod's image has no Go runtime's C libraries to offer).
build_kubectl() {
	echo "building kubectl $version"
	mkdir -p "$bin/e2e-kubectl"
	(cd "$src" && CGO_ENABLED=0 nice -n 19 go build -o "$bin/e2e-kubectl/kubectl" \
		-ldflags "-X k8s.io/component-base/version.gitVersion=$version -X k8s.io/client-go/pkg/version.gitVersion=$version" ./cmd/kubectl)
}

if [[ $source_only != --source-only && -x $bin/e2e.test && -x $bin/ginkgo && "$(cat "$bin/version" 2>/dev/null)" == "$version" ]]; then
	# A cache from before the kubectl was built gets only that.
	[[ -x $bin/e2e-kubectl/kubectl ]] || build_kubectl
	echo "e2e.test, ginkgo and kubectl $version already built in $bin"
	exit 0
fi

if [[ ! -f $src/.ready ]]; then
	echo "fetching k8s.io/kubernetes@$version source"
	dir=$(go mod download -json "k8s.io/kubernetes@$version" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
	[[ -d $dir ]] || { echo "go mod download gave no source dir for k8s.io/kubernetes@$version" >&2; exit 1; }
	rm -rf "$src"
	cp -r "$dir" "$src"
	chmod -R u+w "$src"
	rm -f "$src/go.work" "$src/go.work.sum"
	# The module zip has no staging/ tree: point every ./staging replace at the
	# published module of the matching version.
	sed -i -E \
		-e "s#^(\s*k8s\.io/sample-apiserver) => \./staging/src/k8s\.io/sample-apiserver\$#\1 => k8s.io/sample-apiserver $sample_apiserver_version#" \
		-e "s#^(\s*k8s\.io/([a-z0-9-]+)) => \./staging/src/k8s\.io/[a-z0-9-]+\$#\1 => k8s.io/\2 $staging_version#" \
		"$src/go.mod"
	if grep -q '=> ./staging' "$src/go.mod"; then
		echo "go.mod still has ./staging replaces:" >&2
		grep '=> ./staging' "$src/go.mod" >&2
		exit 1
	fi
	touch "$src/.ready"
fi

if [[ $source_only == --source-only ]]; then
	echo "source of k8s.io/kubernetes@$version ready in $src"
	exit 0
fi

ginkgo_version=$(awk '$1 == "github.com/onsi/ginkgo/v2" { print $2; exit }' "$src/go.mod")
echo "building ginkgo $ginkgo_version"
(cd "$src" && nice -n 19 go build -o "$bin/ginkgo" github.com/onsi/ginkgo/v2/ginkgo)

build_kubectl

echo "building e2e.test $version (several minutes on 2 cores)"
start=$SECONDS
(cd "$src" && nice -n 19 go test -c -o "$bin/e2e.test.tmp" ./test/e2e)
mv "$bin/e2e.test.tmp" "$bin/e2e.test"
echo "$version" >"$bin/version"
echo "built e2e.test in $((SECONDS - start))s"
