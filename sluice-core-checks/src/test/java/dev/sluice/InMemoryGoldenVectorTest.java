package dev.sluice;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.spi.StoreProtocol.Operation;
import dev.sluice.testkit.GoldenVectors;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The golden state vectors that Redis and PostgreSQL replay, replayed through the in-memory
 * store: each vector's state is put under a key (through the lock-free cell of a single bucket,
 * and through the monitor path's slots), the operation applied at the vector's instant through
 * the public API, and the state the store then holds must be the one core's engine computes,
 * slot for slot. Leases and releases are skipped: the in-memory store takes no leases (fleet
 * mode leases from a shared store).
 */
class InMemoryGoldenVectorTest {
  private static final int VECTORS = 20_000;

  @Test
  void everyGoldenVector_lockFreeAndMonitorPaths_holdTheStateCoreComputes() {
    List<GoldenVectors.Vector> vectors =
        GoldenVectors.generate(1_000_000_000L, VECTORS, 2026_11_23L);
    int lockFree = 0;
    int monitor = 0;
    for (GoldenVectors.Vector v : vectors) {
      if (v.operation() == Operation.LEASE || v.operation() == Operation.RELEASE) {
        continue;
      }
      for (boolean fast : new boolean[] {true, false}) {
        InMemoryRateLimiter limiter = new InMemoryRateLimiter(v.limits(), () -> v.now(),
            Scheduler.system(), 1_000, fast);
        if (fast && !limiter.isLockFree()) {
          continue;
        }
        if (fast) {
          lockFree++;
        } else {
          monitor++;
        }
        replay(v, limiter, fast);
      }
    }
    assertThat(lockFree).as("vectors replayed lock-free").isGreaterThan(5_000);
    assertThat(monitor).as("vectors replayed under the monitor").isGreaterThan(10_000);
  }

  private static void replay(GoldenVectors.Vector v, InMemoryRateLimiter limiter, boolean fast) {
    String path = fast ? "lock-free" : "monitor";
    limiter.put("k", v.state(), v.now());
    long[] before = v.state() == null ? v.reference().initialState() : v.state();
    switch (v.operation()) {
      case TRY_ACQUIRE -> limiter.tryAcquire("k", v.cost());
      case CHECK -> limiter.check("k", v.cost());
      case FILL_UP -> limiter.fillUp("k", v.cost());
      case RESERVE -> limiter.reserve("k", v.cost());
      default -> throw new AssertionError(v.operation());
    }
    long[] next = v.reference().next(before, v.now(), v.operation(), v.cost(), v.count());
    long[] held = limiter.state("k");
    if (v.reference().idleAfter(next, v.now()) == 0) {
      // an empty state may be kept or not, in any spelling that reads as empty
      assertThat(held == null || v.reference().idleAfter(held, v.now()) == 0)
          .as("%s (%s): idle, but holds %s", v, path, Arrays.toString(held)).isTrue();
      return;
    }
    assertThat(held).as("%s (%s): state held", v, path).isNotNull();
    if (fast) {
      // a backlog beyond the engine's saturation (2^61 steps; no decision writes one, only an
      // extreme vector's state) reads the same whatever its spelling
      CompiledLimit l = v.limits().get(0).compile(1_000_000_000L);
      if (saturated(l, held, v.now()) && saturated(l, next, v.now())) {
        return;
      }
    }
    assertThat(normalized(v, held)).as("%s (%s): state held", v, path)
        .containsExactly(normalized(v, next));
  }

  private static boolean saturated(CompiledLimit l, long[] state, long now) {
    java.math.BigInteger steps = java.math.BigInteger.valueOf(state[0])
        .subtract(java.math.BigInteger.valueOf(now)).multiply(java.math.BigInteger.valueOf(l.scale))
        .subtract(java.math.BigInteger.valueOf(l.scale == 1 ? 0 : Math.min(state[1], l.scale - 1)));
    return steps.compareTo(java.math.BigInteger.valueOf(l.big)) >= 0;
  }

  /** A bucket's remainder R counts as at most scale - 1 (a state written under another scale). */
  private static long[] normalized(GoldenVectors.Vector v, long[] state) {
    long[] s = state.clone();
    String layout = v.reference().layout();
    CompiledLimit[] compiled = v.limits().stream().map(l -> l.compile(1_000_000_000L))
        .toArray(CompiledLimit[]::new);
    int o = 0;
    for (int i = 0; i < layout.length(); i++) {
      if (layout.charAt(i) == 'r') {
        s[o + 1] = Math.min(s[o + 1], compiled[i].scale - 1);
      }
      o += compiled[i].slots;
    }
    return s;
  }
}
