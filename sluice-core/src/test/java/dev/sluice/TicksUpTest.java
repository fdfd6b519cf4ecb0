package dev.sluice;

import static org.assertj.core.api.Assertions.assertThat;

import java.math.BigInteger;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** BucketRules.ticksUp is the exact ceiling of steps over the scale, at every scale and size. */
class TicksUpTest {
  @Test
  void ticksUp_isTheCeilingOfStepsOverTheScale_atEveryScale() {
    Random random = new Random(30);
    for (Limit limit : new Limit[] {Limit.leakyBucket(5, Rate.perSecond(3)),
        Limit.leakyBucket(5, Rate.perSecond(7)), Limit.leakyBucket(1000, Rate.perDay(1e12)),
        Limit.leakyBucket(1000, Rate.perSecond(1234.5678)), Limit.leakyBucket(3, Rate.perSecond(1.5)),
        Limit.leakyBucket(2.7e11, Rate.perSecond(1_234_567.1))}) {
      for (long tps : new long[] {1_000_000_000L, 1_000_000L}) {
        CompiledLimit l = limit.compile(tps);
        long s = l.scale;
        for (int i = 0; i < 200_000; i++) {
          long steps = switch (i % 4) {
            case 0 -> random.nextLong(1L << 53);
            case 1 -> random.nextLong(1L << 20);
            case 2 -> (random.nextLong(1L << 52) / s) * s + random.nextInt(3) - 1;   // near k*s
            default -> (1L << 52) - random.nextInt(1_000) + random.nextInt(2_000);
          };
          steps = Math.max(0, steps);
          long exact = BigInteger.valueOf(steps).add(BigInteger.valueOf(s - 1))
              .divide(BigInteger.valueOf(s)).longValueExact();
          assertThat(BucketRules.ticksUp(l, steps)).as("%s at %d/s: %d steps of 1/%d", limit,
              tps, steps, s).isEqualTo(exact);
        }
        assertThat(BucketRules.ticksUp(l, 0)).isZero();
        assertThat(BucketRules.ticksUp(l, l.big)).isEqualTo((l.big + s - 1) / s);
      }
    }
  }
}
