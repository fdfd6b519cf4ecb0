package dev.sluice;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The meter's two fast paths (Engine.meter for any limits, Engine.meterInPlace for buckets) decide
 * exactly as Engine.decide: the same next state, the same decision, the same per-limit figures,
 * on random states near and far from full, with penalties, at scales 1 and above.
 */
class MeterEquivalenceTest {
  @Test
  void fastMeters_decideAsTheEngine() {
    Random random = new Random(30);
    List<List<Limit>> sets = List.of(
        List.of(Limit.leakyBucket(5, Rate.perSecond(3)), Limit.leakyBucket(10, Rate.perSecond(6))),
        List.of(Limit.leakyBucket(3, Rate.perSecond(1.5)), Limit.gcra(Rate.perSecond(1000), 5)),
        List.of(Limit.leakyBucket(4, Rate.perSecond(1.5)).withPenalty(Duration.ofMillis(1500)),
            Limit.tokenBucket(5, Rate.perMinute(7)), Limit.leakyBucket(10, Rate.perSecond(300_000))),
        List.of(Limit.leakyBucket(2, Rate.perSecond(1)).withPenalty(Duration.ofSeconds(3)),
            Limit.leakyBucket(1000, Rate.perDay(1e12))),
        List.of(Limit.leakyBucket(2, Rate.perSecond(2)), Limit.slidingWindow(3, Duration.ofSeconds(1))));
    double[] costs = {1, 0.5, 0.1, 2.75, 1e-7, 3, 1000, 0.333333};
    for (List<Limit> set : sets) {
      CompiledLimit[] limits = set.stream().map(l -> l.compile(1_000_000_000L))
          .toArray(CompiledLimit[]::new);
      boolean buckets = Engine.canReserve(limits);
      long now = 1_000_000_000_000L;
      long[] state = Engine.initialState(limits);
      for (int step = 0; step < 20_000; step++) {
        now += random.nextInt(4) == 0 ? 0 : random.nextInt(400_000_000);
        int op = random.nextBoolean() ? Engine.TRY_ACQUIRE : Engine.CHECK;
        double cost = costs[random.nextInt(costs.length)];
        long[] expectedNext = new long[state.length];
        Decision expected = Engine.decide(limits, state, now, op, cost, expectedNext);
        long[] next = new long[state.length];
        Decision meter = Engine.meter(limits, state, now, op, cost, next);
        same(lazy(set, step, "meter"), expected, meter);
        assertThat(next).containsExactly(expectedNext);
        if (buckets) {
          long[] before = state.clone();
          Engine.Metered readOnly = Engine.meterInPlace(limits, before, now, op, cost, false);
          assertThat(before).as("a read-only attempt leaves the state as it was")
              .containsExactly(state);
          long[] inPlace = state.clone();
          Engine.Metered m = Engine.meterInPlace(limits, inPlace, now, op, cost, true);
          same(lazy(set, step, "meterInPlace"), expected, m);
          assertThat(inPlace).as("%s step %d", set, step).containsExactly(expectedNext);
          assertThat(m.wrote).as("%s step %d: wrote", set, step)
              .isEqualTo(!Arrays.equals(expectedNext, state));
          if (m.wrote) {
            assertThat(readOnly).as("%s step %d: a read-only attempt at a decision that writes",
                set, step).isNull();
          } else {
            same(lazy(set, step, "read-only"), expected, readOnly);
          }
        }
        state = expectedNext;
      }
    }
  }

  /** A description written only when an assertion fails. */
  private static Object lazy(List<Limit> set, int step, String path) {
    return new Object() {
      @Override
      public String toString() {
        return set + " step " + step + " " + path;
      }
    };
  }

  private static void same(Object what, Decision expected, Decision actual) {
    assertThat(DecisionFigures.of(actual)).as("%s", what).isEqualTo(DecisionFigures.of(expected));
  }
}
