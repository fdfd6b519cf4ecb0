#!/usr/bin/env bash
# The cost of the Spring Boot starter's filter: the sample application (examples/spring-boot-sample,
# Spring MVC on Tomcat) serving GET /api/hello with the limiter (one hot key: every request comes
# from 127.0.0.1, and every one is admitted, so the filter's whole path runs and a cheaper 429
# never stands in for a 200) and without it (--sluice.enabled=false): the same jar and JVM flags,
# both started and warmed up first, then measured in turn, round after round, with wrk on
# loopback (Debian: apt-get install wrk). Prints each run and the ratio of the medians.
#   sluice-benchmarks/http/spring.sh [seconds] [connections] [rounds]
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-10}
conns=${2:-32}
rounds=${3:-5}
bare=18090
limited=18091
mvn -q -B install -DskipTests -pl examples/spring-boot-sample -am >/dev/null
jar=examples/spring-boot-sample/target/sluice-spring-boot-sample.jar
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true' EXIT
start() {   # port, application arguments...
  local port=$1; shift
  java -Xms512m -Xmx512m -jar "$jar" --server.port="$port" --logging.level.root=warn "$@" >/dev/null 2>&1 &
  pids+=($!)
  for i in $(seq 1 150); do curl -fs "http://127.0.0.1:$port/api/hello" >/dev/null 2>&1 && return; sleep 0.2; done
  echo "the sample did not start on $port" >&2; exit 1
}
start $bare --sluice.enabled=false
start $limited --sluice.policies.api.capacity=100000 --sluice.policies.api.rate=100000/s
echo "bare:    $(curl -fs -D - -o /dev/null http://127.0.0.1:$bare/api/hello | grep -ci '^ratelimit') RateLimit fields"
echo "limited: $(curl -fs -D - -o /dev/null http://127.0.0.1:$limited/api/hello | grep -i '^ratelimit:' | tr -d '\r')"
# a long warm-up: on a small host the JIT needs tens of seconds to settle
for port in $bare $limited; do wrk -t2 -c"$conns" -d"${WARMUP:-60}s" "http://127.0.0.1:$port/api/hello" >/dev/null; done
echo "$secs s per run, $conns connections, 2 wrk threads, $(nproc) cores, $rounds rounds"
measure() {   # label, port
  wrk -t2 -c"$conns" -d"${secs}s" --latency "http://127.0.0.1:$2/api/hello" | awk -v l="$1" \
    '/Requests\/sec/ {rps=$2} /^ +50%/ {p50=$2} /^ +99%/ {p99=$2} /Non-2xx/ {bad=$5}
     END {printf "%-18s %10s req/s  p50 %8s  p99 %8s  non-2xx %s\n", l, rps, p50, p99, (bad==""?0:bad)}'
}
runs=$(mktemp)
for r in $(seq 1 "$rounds"); do measure "bare (sluice off)" $bare; measure "with the limiter" $limited; done | tee "$runs"
awk '/^bare/ {b[++nb]=$4} /^with/ {w[++nw]=$4}
  function median(a, n,   i, j, t) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
  END { mb = median(b, nb); mw = median(w, nw); printf "median bare %.0f req/s, with the limiter %.0f req/s: %.1f%% of the bare rate, a cost of %.1f%%\n", mb, mw, 100 * mw / mb, 100 - 100 * mw / mb }' "$runs"
rm -f "$runs"
