package dev.sluice;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;
import org.assertj.core.data.Offset;
import org.junit.jupiter.api.Test;

/**
 * The heavy-hitter sketch against exact counts: its bounds hold for every key it holds, it finds
 * the true top keys of a skewed stream in bounded memory, and its counts decay.
 */
class TopKeysTest {
  private final AtomicLong now = new AtomicLong();
  private final Clock clock = now::get;

  /** A Zipf(s) sampler over n keys, by inversion of its cumulative weights. */
  private static final class Zipf {
    final double[] cumulative;
    final Random random;

    Zipf(int n, double s, long seed) {
      cumulative = new double[n];
      double sum = 0;
      for (int i = 0; i < n; i++) {
        sum += 1 / Math.pow(i + 1, s);
        cumulative[i] = sum;
      }
      for (int i = 0; i < n; i++) {
        cumulative[i] /= sum;
      }
      random = new Random(seed);
    }

    int next() {
      int i = java.util.Arrays.binarySearch(cumulative, random.nextDouble());
      return i >= 0 ? i : -i - 1;
    }
  }

  /**
   * A million refusals over 100,000 keys (Zipf 1.1) into a sketch of 256: the ten keys it counts
   * most are the true ten, every held key's true count lies within its bounds, and every key
   * above total / 256 is held. (docs/server.md quotes these figures.)
   */
  @Test
  void aSkewedStream_theTrueTopKeys_inBoundedMemory() {
    TopKeys sketch = TopKeys.of(256, Duration.ofDays(1), clock);
    Zipf zipf = new Zipf(100_000, 1.1, 7);
    Map<String, Integer> exact = new HashMap<>();
    for (int i = 0; i < 1_000_000; i++) {
      String key = "key-" + zipf.next();
      sketch.add(key);
      exact.merge(key, 1, Integer::sum);
    }
    assertThat(sketch.size()).isEqualTo(256);
    assertThat(sketch.total()).isCloseTo(1_000_000, Offset.offset(1e-6));
    List<Map.Entry<String, Integer>> truth = new ArrayList<>(exact.entrySet());
    truth.sort((a, b) -> b.getValue() - a.getValue());
    List<String> trueTop = truth.subList(0, 10).stream().map(Map.Entry::getKey).toList();
    assertThat(sketch.top(10)).extracting(TopKeys.Entry::key).containsExactlyElementsOf(trueTop);
    for (TopKeys.Entry e : sketch.top(256)) {
      int count = exact.get(e.key());
      assertThat((double) count).as(e.key()).isBetween(e.count() - e.error() - 1e-6,
          e.count() + 1e-6);
    }
    double threshold = 1_000_000 / 256.0;
    List<String> held = sketch.top(256).stream().map(TopKeys.Entry::key).toList();
    truth.stream().filter(t -> t.getValue() > threshold)
        .forEach(t -> assertThat(held).as("above total / capacity").contains(t.getKey()));
    // the ten's counts are exact here: each was held from its first refusal
    for (TopKeys.Entry e : sketch.top(10)) {
      assertThat(e.count() - e.error()).isLessThanOrEqualTo(exact.get(e.key()));
      assertThat(e.count()).isCloseTo(exact.get(e.key()), Offset.offset(0.02 * e.count()));
    }
  }

  /** Counts decay by e every memory, through rebases, and a new flood overtakes an old one. */
  @Test
  void counts_decayByEEveryMemory_andARecentFloodRanksFirst() {
    TopKeys sketch = TopKeys.of(4, Duration.ofSeconds(10), clock);
    for (int i = 0; i < 1000; i++) {
      sketch.add("old-flood");
    }
    now.addAndGet(Duration.ofSeconds(10).toNanos());
    assertThat(sketch.top(1).get(0).count()).isCloseTo(1000 / Math.E, Offset.offset(1e-9));
    now.addAndGet(Duration.ofSeconds(500).toNanos());   // 50 memories: past the rebase
    for (int i = 0; i < 10; i++) {
      sketch.add("new-flood");
    }
    assertThat(sketch.top(2)).extracting(TopKeys.Entry::key)
        .containsExactly("new-flood", "old-flood");
    assertThat(sketch.top(1).get(0).count()).isCloseTo(10, Offset.offset(1e-9));
    assertThat(sketch.total()).isCloseTo(10, Offset.offset(1e-6));
  }

  /** A full sketch: a new key displaces the least counted and inherits its count as error. */
  @Test
  void aNewKey_displacesTheLeast_andInheritsItsCountAsError() {
    TopKeys sketch = TopKeys.of(2, Duration.ofDays(1), clock);
    sketch.add("a", 5);
    sketch.add("b", 2);
    sketch.add("c");
    assertThat(sketch.top(5)).containsExactly(new TopKeys.Entry("a", 5, 0),
        new TopKeys.Entry("c", 3, 2));
  }

  @Test
  void badInput_isNamed() {
    assertThatThrownBy(() -> TopKeys.of(0, Duration.ofMinutes(1)))
        .hasMessage("capacity must be between 1 and 100000 but was 0");
    assertThatThrownBy(() -> TopKeys.of(10, Duration.ZERO))
        .hasMessage("memory must be between 1ms and 1d but was PT0S");
    TopKeys sketch = TopKeys.of(10, Duration.ofMinutes(1), clock);
    assertThatThrownBy(() -> sketch.add("k", 0))
        .hasMessage("weight must be positive and finite but was 0.0");
    assertThatThrownBy(() -> sketch.add("k", Double.NaN))
        .hasMessage("weight must be positive and finite but was NaN");
    assertThatThrownBy(() -> sketch.top(-1)).hasMessage("n must be zero or more but was -1");
    assertThatThrownBy(() -> sketch.add(null)).isInstanceOf(NullPointerException.class)
        .hasMessage("key");
  }
}
