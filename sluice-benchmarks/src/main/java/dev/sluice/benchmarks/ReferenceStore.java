package dev.sluice.benchmarks;

import dev.sluice.Limit;
import dev.sluice.spi.StoreReference;
import dev.sluice.spi.DecisionStore;
import dev.sluice.spi.Observation;
import dev.sluice.spi.StoreRequest;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A shared store in this JVM for fleet-mode benchmarks: each call one atomic step (a monitor) on
 * a microsecond clock, computed by StoreReference. It counts its calls, so that a benchmark can
 * show how few the hot path makes.
 */
final class ReferenceStore implements DecisionStore {
  private final StoreReference reference;
  private final Map<String, long[]> states = new HashMap<>();
  final AtomicLong calls = new AtomicLong();

  ReferenceStore(List<Limit> limits) {
    this.reference = StoreReference.of(limits, 1_000_000);
  }

  @Override
  public long ticksPerSecond() {
    return 1_000_000;
  }

  @Override
  public synchronized Observation apply(String key, StoreRequest request) {
    calls.incrementAndGet();
    long now = System.nanoTime() / 1000;
    long[] before = states.getOrDefault(key, request.initialState());
    states.put(key, reference.next(before, now, request));
    return new Observation(now, before);
  }

  @Override
  public synchronized void reset(String key) {
    states.remove(key);
  }
}
