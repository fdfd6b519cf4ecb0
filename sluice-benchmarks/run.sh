#!/usr/bin/env bash
# Runs every in-process benchmark the way docs/benchmarks.md reports them, and writes the raw
# JMH results to docs/results/. Takes about ten minutes on 2 cores.
#   sluice-benchmarks/run.sh
set -euo pipefail
cd "$(dirname "$0")/.."
mvn -q -B -ntp install -DskipTests
J=sluice-benchmarks/target/benchmarks.jar
OUT=docs/results
mkdir -p "$OUT"
for t in 1 2; do
  java -jar "$J" HotKeyBenchmark -t "$t" -f 2 -prof gc -rf json -rff "$OUT/hot-key-t$t.json"
  java -jar "$J" ManyKeysBenchmark -t "$t" -prof gc -rf json -rff "$OUT/many-keys-t$t.json"
done
for t in 1 2; do
  java -jar "$J" 'RatesBenchmark|HotKeyBenchmark.(guava|resilience4j|bucket4j)$' -t "$t" -f 1 \
    -wi 3 -w 1 -i 5 -r 1 -prof gc -rf json -rff "$OUT/rates-t$t.json"
done
java -Xmx8g -cp "$J" dev.sluice.benchmarks.MemoryPerKey 1000000 | tee "$OUT/memory-per-key.txt"
java -cp "$J" dev.sluice.benchmarks.RedisMemoryPerKey 2>/dev/null | tee "$OUT/redis-memory.txt"
# Redis: starts its own Redis 6.2 on loopback; the raw-script rows need redis-benchmark
# (Debian: apt-get install redis-tools).
java -cp "$J" dev.sluice.benchmarks.RedisLoad "" 5 2>/dev/null | tee "$OUT/redis-load.txt"
# PostgreSQL: starts its own PostgreSQL 14 on loopback.
java -cp "$J" dev.sluice.benchmarks.PostgresLoad "" 5 2>/dev/null | tee "$OUT/postgres-load.txt"
# MySQL / MariaDB: starts its own MariaDB 10.11 on loopback, durable commits, then relaxed ones.
{ java -cp "$J" dev.sluice.benchmarks.MysqlLoad "" 5 2>/dev/null
  java -cp "$J" dev.sluice.benchmarks.MysqlLoad "" 5 --innodb-flush-log-at-trx-commit=2 2>/dev/null
} | tee "$OUT/mysql-load.txt"
# HTTP: the service under wrk (Debian: apt-get install wrk), /healthz beside /v1/check.
if command -v wrk >/dev/null; then
  sluice-benchmarks/http/run.sh 10 64 | tee "$OUT/http-load.txt"
else
  echo "wrk not installed: HTTP benchmark skipped" >&2
fi
