#!/usr/bin/env bash
# HTTP benchmark: wrk (Debian: apt-get install wrk) against the service on loopback.
# Measures /healthz (the bare HTTP stack) and POST /v1/check on one hot key and on 100,000 keys,
# in the same run, with the same connections and threads.
#   sluice-benchmarks/http/run.sh [seconds] [connections]
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-10}
conns=${2:-64}
port=18080
./sluice --version >/dev/null   # builds the CLI if needed
java -jar sluice-cli/target/sluice.jar serve --port $port --config sluice-benchmarks/http/bench.yaml 2>/dev/null &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
for i in $(seq 1 50); do curl -fs "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.2; done
url="http://127.0.0.1:$port"
echo "wrk $(wrk --version 2>&1 | head -1 | awk '{print $2}'), $secs s per run, $conns connections, 2 threads, $(nproc) cores"
run() {  # name, wrk arguments...
  local name=$1; shift
  wrk -t2 -c"$conns" -d3s "$@" >/dev/null   # warm-up
  wrk -t2 -c"$conns" -d"${secs}s" --latency "$@" | awk -v n="$name" '
    /Requests\/sec/ {rps=$2}
    /^ +50%/ {p50=$2} /^ +90%/ {p90=$2} /^ +99%/ {p99=$2}
    /Non-2xx/ {bad=$5}
    END {printf "%-22s %12s req/s  p50 %8s  p90 %8s  p99 %8s  non-2xx %s\n", n, rps, p50, p90, p99, (bad==""?0:bad)}'
}
run "GET /healthz" "$url/healthz"
run "POST /v1/check hot" -s sluice-benchmarks/http/hot.lua "$url/v1/check"
run "POST /v1/check 100k" -s sluice-benchmarks/http/many.lua "$url/v1/check"
run "GET /healthz (again)" "$url/healthz"
