#!/usr/bin/env bash
# A flood of new keys against `sluice serve` (the bundled sample config, policy "demo", its
# default 100,000 keys a policy), started twice: by ./sluice, which sizes -Xmx from the policies,
# and by `java -jar` with no -Xmx (the JVM's default heap, a quarter of the machine's memory).
# Prints the keys sent, the process's resident memory (RSS) at the end and the heap in use.
#   sluice-benchmarks/http/flood.sh [seconds]      (needs wrk: apt-get install wrk)
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds="${1:-60}"
port=18090
jar=sluice-cli/target/sluice.jar
for how in sluice java-jar; do
  if [ "$how" = sluice ]; then
    ./sluice serve --port "$port" >/tmp/sluice-flood.log 2>&1 &
  else
    java -jar "$jar" serve --port "$port" >/tmp/sluice-flood.log 2>&1 &
  fi
  for _ in $(seq 1 60); do
    curl -s -o /dev/null "http://127.0.0.1:$port/healthz" && break
    sleep 0.5
  done
  pid="$(pgrep -f "sluice.jar serve --port $port" | head -1)"
  out="$(wrk -t2 -c64 -d"${seconds}s" -s sluice-benchmarks/http/flood.lua "http://127.0.0.1:$port/v1/check")"
  sent="$(echo "$out" | awk '/requests in/ {print $1}')"
  rss_kb="$(ps -o rss= -p "$pid" | tr -d ' ')"
  heap="$(jcmd "$pid" GC.heap_info 2>/dev/null | awk '/garbage-first heap/ {print $(NF-2), $(NF-1), $NF}' | head -1)"
  xmx="$(jcmd "$pid" VM.flags 2>/dev/null | tr ' ' '\n' | grep MaxHeapSize || true)"
  printf '%-8s new keys sent %s in %ss; RSS %d MB; %s; heap %s\n' "$how" "$sent" "$seconds" \
    "$((rss_kb / 1024))" "$xmx" "$heap"
  kill "$pid"
  wait 2>/dev/null || true
  sleep 1
done
