#!/usr/bin/env bash
# Regenerates internal/openapi/generated/zz_generated.openapi.go: the OpenAPI definitions of every
# built-in type skiff serves, produced by kube-openapi's openapi-gen from the "+k8s:openapi-gen=true"
# package tags that k8s.io/api and k8s.io/apimachinery ship.
#
# The generator runs as `go run module@version` at the kube-openapi version go.mod pins, so its own
# dependencies (gengo, x/tools) stay out of skiff's go.mod.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${repo_root}"

kube_openapi_version="$(go list -m -f '{{.Version}}' k8s.io/kube-openapi)"
output_dir="internal/openapi/generated"
output_pkg="github.com/skiff-sh/skiff/${output_dir}"

input_packages=(
  k8s.io/api/core/v1
  k8s.io/api/apps/v1
  k8s.io/api/batch/v1
  k8s.io/api/coordination/v1
  k8s.io/api/discovery/v1
  k8s.io/api/events/v1
  k8s.io/api/policy/v1
  k8s.io/api/rbac/v1
  k8s.io/api/scheduling/v1
  # batch/v1 JobSpec refers to scheduling/v1alpha3 workload types.
  k8s.io/api/scheduling/v1alpha3
  k8s.io/api/autoscaling/v1
  k8s.io/api/authentication/v1
  k8s.io/api/authorization/v1
  k8s.io/api/autoscaling/v2
  k8s.io/api/admissionregistration/v1
  k8s.io/api/certificates/v1
  k8s.io/api/flowcontrol/v1
  k8s.io/api/networking/v1
  k8s.io/api/node/v1
  k8s.io/api/storage/v1
  # VolumeAttributesClass is served at storage.k8s.io/v1beta1 (v1.33: beta).
  k8s.io/api/storage/v1beta1
  k8s.io/api/apidiscovery/v2
  k8s.io/api/apidiscovery/v2beta1
  k8s.io/apimachinery/pkg/apis/meta/v1
  k8s.io/apimachinery/pkg/runtime
  k8s.io/apimachinery/pkg/util/intstr
  k8s.io/apimachinery/pkg/api/resource
  k8s.io/apimachinery/pkg/version
)

work_dir="$(mktemp -d)"
trap 'rm -rf "${work_dir}"' EXIT

cat >"${work_dir}/boilerplate.go.txt" <<'HEADER'
// Generated for skiff by hack/update-openapi.sh from the Kubernetes API types; do not edit.
HEADER

# API rule violations belong to upstream's types, not to skiff: record them in a scratch file so
# the generator does not fail on them.
go run "k8s.io/kube-openapi/cmd/openapi-gen@${kube_openapi_version}" \
  --go-header-file "${work_dir}/boilerplate.go.txt" \
  --output-dir "${output_dir}" \
  --output-pkg "${output_pkg}" \
  --output-file zz_generated.openapi.go \
  --report-filename "${work_dir}/violations.report" \
  "${input_packages[@]}"

gofmt -l "${output_dir}" | (! grep .) || { echo "generated code is not gofmt-clean" >&2; exit 1; }
echo "wrote ${output_dir}/zz_generated.openapi.go"
