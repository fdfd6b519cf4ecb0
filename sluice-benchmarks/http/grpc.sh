#!/usr/bin/env bash
# Envoy's ShouldRateLimit (gRPC) against POST /v1/check (HTTP), one hot key, the same service
# process and the same concurrency, with native load generators on loopback:
#   h2load (Debian: apt-get install nghttp2-client) for gRPC, one stream per connection,
#   wrk (Debian: apt-get install wrk) for HTTP/1.1 keep-alive.
#   sluice-benchmarks/http/grpc.sh [seconds] [connections]
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-10}
conns=${2:-64}
port=18080
grpc=18081
./sluice --version >/dev/null   # builds the CLI if needed
(cd sluice-benchmarks && mvn -q -B -o package -DskipTests >/dev/null 2>&1) || true
body=$(mktemp)
java -cp sluice-benchmarks/target/benchmarks.jar dev.sluice.benchmarks.EnvoyLoad --body "$body"
java -jar sluice-cli/target/sluice.jar serve --port $port --grpc-port $grpc \
  --config sluice-benchmarks/http/bench.yaml --envoy-config sluice-benchmarks/http/envoy.yaml 2>/dev/null &
pid=$!
trap 'kill $pid 2>/dev/null || true; rm -f "$body"' EXIT
for i in $(seq 1 50); do curl -fs "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.2; done
echo "$secs s per run, $conns connections, 2 threads, $(nproc) cores"
rpc="http://127.0.0.1:$grpc/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit"
h2() {
  h2load -t2 -c"${H2_CONNS:-$conns}" -m"${H2_STREAMS:-1}" -D "$1" -d "$body" -H 'content-type: application/grpc' \
    -H 'te: trailers' "$rpc"
}
for round in 1 2; do
  h2 3 >/dev/null   # warm-up
  h2 "$secs" | awk '/^finished in/ {rps=$4} /^requests:/ {ok=$8; bad=$10} /^time for request:/ {mean=$6}
    END {printf "gRPC ShouldRateLimit hot   %12s req/s  mean %8s  succeeded %s  failed %s\n", rps, mean, ok, bad}'
  wrk -t2 -c"$conns" -d3s -s sluice-benchmarks/http/hot.lua "http://127.0.0.1:$port/v1/check" >/dev/null
  wrk -t2 -c"$conns" -d"${secs}s" --latency -s sluice-benchmarks/http/hot.lua \
    "http://127.0.0.1:$port/v1/check" | awk '/Requests\/sec/ {rps=$2} /^ +50%/ {p50=$2} /^ +99%/ {p99=$2}
    /Non-2xx/ {bad=$5} END {printf "HTTP POST /v1/check hot     %12s req/s  p50 %8s  p99 %8s  non-2xx %s\n", rps, p50, p99, (bad==""?0:bad)}'
done
