package dev.sluice;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The meter's two fast paths (Engine.meter for any limits, Engine.meterBuckets for buckets) decide
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
        same(set + " step " + step + " meter", expected, meter);
        assertThat(next).containsExactly(expectedNext);
        if (buckets) {
          long[][] kept = new long[1][];
          long[] before = state.clone();
          Decision fast = Engine.meterBuckets(limits, state, now, op, cost, next2 -> kept[0] = next2);
          same(set + " step " + step + " meterBuckets", expected, fast);
          assertThat(kept[0] == null ? state : kept[0]).as("%s step %d", set, step)
              .containsExactly(expectedNext);
          assertThat(state).as("the state it read is left as it was").containsExactly(before);
          if (java.util.Arrays.equals(expectedNext, state)) {
            assertThat(kept[0]).as("nothing to keep, nothing allocated").isNull();
          }
          Decision readOnly = Engine.meterBuckets(limits, state, now, op, cost, null);
          if (kept[0] == null) {
            same(set + " step " + step + " read-only", expected, readOnly);
          } else {
            assertThat(readOnly).as("%s step %d: a read-only attempt at a decision that writes",
                set, step).isNull();
          }
        }
        state = expectedNext;
      }
    }
  }

  private static void same(String what, Decision expected, Decision actual) {
    assertThat(actual).as(what).usingRecursiveComparison().ignoringFields("perLimit")
        .isEqualTo(expected);
    assertThat(actual.perLimit()).as(what + " per limit").hasSameSizeAs(expected.perLimit());
    for (int i = 0; i < expected.perLimit().size(); i++) {
      assertThat(actual.perLimit().get(i)).as(what + " limit " + i).usingRecursiveComparison()
          .isEqualTo(expected.perLimit().get(i));
    }
  }
}
