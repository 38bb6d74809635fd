#!/usr/bin/env bash
# Long runs of the robustness suite (test/robustness, issue 24): recorded traffic against a skiff
# cluster under injected faults, every history checked (linearizability, watches, LISTs, lost
# writes, informers). A failing run keeps its history (JSON), its violations and porcupine's
# visualization under --report; --keep keeps passing runs' too.
#
#   hack/robustness.sh --duration 30m --scenario ha-kill-etcd-leader
#   hack/robustness.sh --duration 5m                 every scenario, 5 minutes each
#   hack/robustness.sh --list                        the scenario names
#   --interval 100ms (default) is each client's pause between calls; --seed repeats a run's faults
#
# CI runs the short set instead (five scenarios, 20 s of traffic each): go test -count=1 ./test/robustness -short
set -euo pipefail
cd "$(dirname "$0")/.."

duration=30m interval=100ms scenario="" report="${TMPDIR:-/tmp}/skiff-robustness" seed=0 keep=false
while [ $# -gt 0 ]; do
  case "$1" in
    --duration) duration="$2"; shift 2 ;;
    --scenario) scenario="$2"; shift 2 ;;
    --report) report="$2"; shift 2 ;;
    --seed) seed="$2"; shift 2 ;;
    --interval) interval="$2"; shift 2 ;;
    --keep) keep=true; shift ;;
    --list) grep -o 'Name: "[a-z-]*"' test/robustness/run.go | cut -d'"' -f2; exit 0 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "robustness.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

mkdir -p "$report"
bin="$(mktemp -d)/skiff"
trap 'rm -rf "$(dirname "$bin")"' EXIT
go build -o "$bin" ./cmd/skiff
# The go test timeout: the traffic of every scenario asked for, plus startup, recovery and checks.
count=1
[ -z "$scenario" ] && count=$(bash "$0" --list | wc -l)
case "$duration" in
  *h) secs=$(( ${duration%h} * 3600 )) ;;
  *m) secs=$(( ${duration%m} * 60 )) ;;
  *s) secs=${duration%s} ;;
  *) echo "robustness.sh: --duration wants a whole number of h, m or s (30m)" >&2; exit 2 ;;
esac
timeout=$(( (secs + 600) * count ))s
which=(-robustness.all)
[ -n "$scenario" ] && which=(-robustness.scenario "$scenario")
exec go test -count=1 -v -timeout "$timeout" ./test/robustness -run '^TestRobustness$' \
  -robustness.duration "$duration" "${which[@]}" -robustness.report "$report" \
  -robustness.seed "$seed" -robustness.interval "$interval" -robustness.bin "$bin" -robustness.keep="$keep"
