package dev.sluice;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeSet;

/**
 * The keys seen most in the recent past, in bounded memory: a heavy-hitter sketch (Space-Saving,
 * Metwally et al. 2005) whose counts decay by e every {@code memory}. It holds at most {@code
 * capacity} keys whatever the number of keys it is shown; a key it does not hold displaces the
 * least counted one and inherits its count as its possible error. For every key it holds, its
 * true (decayed) count lies between {@code count - error} and {@code count}; and every key whose
 * true count is above {@link #total()} / capacity is held. Used to show the keys refused most
 * (the service's {@code /v1/top-refused}), without a map of every key.
 *
 * <pre>{@code
 * TopKeys refused = TopKeys.of(256, Duration.ofMinutes(5));
 * refused.add(key);                       // on each refusal
 * List<TopKeys.Entry> worst = refused.top(10);
 * }</pre>
 *
 * <p>Thread-safe: each call holds the sketch's monitor (a map lookup and a tree step of
 * {@code log capacity}).
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/server.md#who-is-refused-get-v1top-refused">docs/server.md, "Who is refused: GET /v1/top-refused"</a>.
 */
public final class TopKeys {
  /** The most keys a sketch may hold. */
  public static final int MAX_CAPACITY = 100_000;
  /** How far the units grow (e^40) before they are rebased. */
  private static final double REBASE = Math.exp(40);

  /**
   * A key the sketch holds.
   *
   * @param key the key
   * @param count its count, decayed to now: at least its true count
   * @param error how much of the count may belong to keys it displaced: the true count is at
   *     least {@code count - error}
   */
  public record Entry(String key, double count, double error) {}

  private static final class Node {
    final String key;
    final long id;
    double count;   // in the current units
    double error;

    Node(String key, long id, double count, double error) {
      this.key = key;
      this.id = id;
      this.count = count;
      this.error = error;
    }
  }

  private final int capacity;
  private final double memoryNanos;
  private final Clock clock;
  private final Map<String, Node> nodes;
  /** The nodes by count, the least first (ties by arrival): O(log capacity) each way. */
  private final TreeSet<Node> byCount = new TreeSet<>(
      Comparator.comparingDouble((Node n) -> n.count).thenComparingLong(n -> n.id));
  private long ids;
  private double total;
  private long base;

  private TopKeys(int capacity, Duration memory, Clock clock) {
    this.capacity = capacity;
    this.memoryNanos = memory.toNanos();
    this.clock = clock;
    this.nodes = new HashMap<>(capacity * 2);
    this.base = clock.nanoTime();
  }

  /**
   * A sketch of at most {@code capacity} keys whose counts decay by e every {@code memory}, on
   * the system clock.
   *
   * @throws IllegalArgumentException naming the value, unless 1 &lt;= capacity &lt;= {@value
   *     #MAX_CAPACITY} and 1 ms &lt;= memory &lt;= 1 day
   */
  public static TopKeys of(int capacity, Duration memory) {
    return of(capacity, memory, Clock.system());
  }

  /** As {@link #of(int, Duration)}, on {@code clock}. */
  public static TopKeys of(int capacity, Duration memory, Clock clock) {
    if (capacity < 1 || capacity > MAX_CAPACITY) {
      throw new IllegalArgumentException("capacity must be between 1 and " + MAX_CAPACITY
          + " but was " + capacity);
    }
    Objects.requireNonNull(memory, "memory");
    if (memory.compareTo(Duration.ofMillis(1)) < 0 || memory.compareTo(Duration.ofDays(1)) > 0) {
      throw new IllegalArgumentException("memory must be between 1ms and 1d but was " + memory);
    }
    return new TopKeys(capacity, memory, Objects.requireNonNull(clock, "clock"));
  }

  /** Counts one more of {@code key}. */
  public void add(String key) {
    add(key, 1);
  }

  /**
   * Counts {@code weight} more of {@code key}.
   *
   * @throws IllegalArgumentException if the weight is not positive and finite
   */
  public synchronized void add(String key, double weight) {
    Objects.requireNonNull(key, "key");
    if (!(weight > 0 && weight < Double.POSITIVE_INFINITY)) {
      throw new IllegalArgumentException("weight must be positive and finite but was " + weight);
    }
    double w = weight * scale();
    total += w;
    Node n = nodes.get(key);
    if (n != null) {
      byCount.remove(n);
      n.count += w;
      byCount.add(n);
      return;
    }
    if (nodes.size() < capacity) {
      n = new Node(key, ids++, w, 0);
    } else {
      Node least = byCount.pollFirst();
      nodes.remove(least.key);
      n = new Node(key, ids++, least.count + w, least.count);
    }
    nodes.put(key, n);
    byCount.add(n);
  }

  /** The current units: e to the memories since {@link #base}, rebased when too large. */
  private double scale() {
    long now = clock.nanoTime();
    double s = Math.exp((now - base) / memoryNanos);
    if (s > REBASE) {
      byCount.clear();   // rebuilt: rounding may make two counts equal that were not
      for (Node n : nodes.values()) {
        n.count /= s;
        n.error /= s;
        byCount.add(n);
      }
      total /= s;
      base = now;
      s = 1;
    }
    return s;
  }

  /** The {@code n} keys counted most, most first, their counts decayed to now. */
  public synchronized List<Entry> top(int n) {
    if (n < 0) {
      throw new IllegalArgumentException("n must be zero or more but was " + n);
    }
    double s = scale();
    List<Node> all = new ArrayList<>(nodes.values());
    all.sort(Comparator.comparingDouble((Node x) -> -x.count).thenComparing(x -> x.key));
    List<Entry> out = new ArrayList<>(Math.min(n, all.size()));
    for (int i = 0; i < Math.min(n, all.size()); i++) {
      Node x = all.get(i);
      out.add(new Entry(x.key, x.count / s, x.error / s));
    }
    return out;
  }

  /** Everything counted, decayed to now (every key's, held or not). */
  public synchronized double total() {
    return total / scale();
  }

  /** Keys held now (at most {@link #capacity()}). */
  public synchronized int size() {
    return nodes.size();
  }

  /** The most keys held. */
  public int capacity() {
    return capacity;
  }
}
