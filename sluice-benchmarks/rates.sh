#!/usr/bin/env bash
# One hot key at every kind of rate (issue 30), Sluice against Guava, Resilience4j and Bucket4j in
# the same run, 1 and 2 threads; raw JMH results in docs/results/rates-t{1,2}.json. About 7 minutes.
#   sluice-benchmarks/rates.sh
set -euo pipefail
cd "$(dirname "$0")/.."
mvn -q -B -ntp install -DskipTests
for t in 1 2; do
  java -jar sluice-benchmarks/target/benchmarks.jar \
    'RatesBenchmark|HotKeyBenchmark.(guava|resilience4j|bucket4j)$' \
    -t "$t" -f 1 -wi 3 -w 1 -i 5 -r 1 -prof gc -rf json -rff "docs/results/rates-t$t.json"
done
