#!/usr/bin/env bash
# The upstream e2e specs beyond conformance: hack/conformance.sh with --suite default (what
# Kubernetes' kind CI jobs run: every spec without a Feature: label that is not Slow, Disruptive or
# Flaky, in parallel, then the [Serial] ones). Every option of hack/conformance.sh applies; a
# later --suite (netpol, csi, conformance) replaces the default.
#
#   hack/e2e.sh                        the whole default suite
#   hack/e2e.sh --sig network --keep   sig-network's specs only, the cluster left running
#   hack/e2e.sh --suite netpol         the NetworkPolicy specs
exec "$(dirname "$0")/conformance.sh" --suite default "$@"
