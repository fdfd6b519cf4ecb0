package dev.sluice.concurrency;

import java.time.Duration;
import java.util.Locale;
import java.util.Objects;

/**
 * Fair queuing among flows for a concurrency limit's waiters, after Kubernetes' API Priority and
 * Fairness: within each priority, a fixed number of queues; each flow (a tenant, a user, a
 * client: any string the caller names) is dealt a hand of queues by its hash (shuffle sharding).
 * The queues count waiters (a waiter is counted in the least occupied queue of its hand, refused
 * when that one is full) and remember each flow's recent demand as a count-min sketch with
 * conservative update remembers counts (the weight asked for, decaying by e every
 * {@link #memory}). A request's tag is its flow's demand plus its weight (its virtual finish);
 * flows asking no more than about three times what the typical request's flow asks are light and
 * served in arrival order, ahead of heavier ones, which follow by their demand. A flood thus waits
 * behind every quiet flow and behind itself; a quiet flow is taken for a heavy one only when
 * floods hold every queue of its hand ({@link #collisionOdds}) or its queues are crowded, and
 * memory is the queues' (12 bytes a queue a priority, made at a priority's first waiter), whatever
 * the number of flows. Size the queues at a quarter of the flows active within the memory times
 * the hand or more (docs/concurrency.md, "Fair queuing").
 *
 * <pre>{@code
 * ConcurrencyLimiter db = ConcurrencyLimiter.builder().limit(32)
 *     .fairQueuing(FairQueuing.of(1024, 6, 50))   // 1,024 queues, hands of 6, 50 waiters a queue
 *     .build();
 * Acquisition a = db.acquire("orders-db", tenantId, 1, Priority.NORMAL, Duration.ofMillis(200));
 * }</pre>
 *
 * <p>Immutable.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/concurrency.md#fair-queuing-one-flows-flood-does-not-starve-the-others">docs/concurrency.md, "Fair queuing: one flow's flood does not starve the others"</a>.
 */
public final class FairQueuing {
  /** The most queues a priority may have. */
  public static final int MAX_QUEUES = 65_536;
  /** The largest hand. */
  public static final int MAX_HAND = 16;

  /** How long a flow's demand is remembered by default: it decays by e every 10 s. */
  public static final Duration DEFAULT_MEMORY = Duration.ofSeconds(10);

  private final int queues;
  private final int handSize;
  private final int queueLength;
  private final Duration memory;

  private FairQueuing(int queues, int handSize, int queueLength, Duration memory) {
    this.queues = queues;
    this.handSize = handSize;
    this.queueLength = queueLength;
    this.memory = memory;
  }

  /**
   * Fair queuing over {@code queues} queues a priority, each flow dealt {@code handSize} of them,
   * at most {@code queueLength} waiters a queue (a waiter whose shortest queue is full is refused
   * {@link Refusal#QUEUE_FULL}).
   *
   * @throws IllegalArgumentException naming the value, unless 1 &lt;= queues &lt;= {@value
   *     #MAX_QUEUES}, 1 &lt;= handSize &lt;= min(queues, {@value #MAX_HAND}) and queueLength
   *     &gt;= 1
   */
  public static FairQueuing of(int queues, int handSize, int queueLength) {
    if (queues < 1 || queues > MAX_QUEUES) {
      throw new IllegalArgumentException("queues must be between 1 and " + MAX_QUEUES
          + " but was " + queues);
    }
    if (handSize < 1 || handSize > Math.min(queues, MAX_HAND)) {
      throw new IllegalArgumentException("handSize must be between 1 and "
          + Math.min(queues, MAX_HAND) + " (at most the queues, " + queues + ") but was "
          + handSize);
    }
    if (queueLength < 1 || queueLength > 1_000_000) {
      throw new IllegalArgumentException("queueLength must be between 1 and 1000000 but was "
          + queueLength);
    }
    return new FairQueuing(queues, handSize, queueLength, DEFAULT_MEMORY);
  }

  /**
   * The same, remembering a flow's demand for {@code memory}: what a flow asked for counts
   * against its precedence decayed by e every {@code memory} ({@link #DEFAULT_MEMORY} unless
   * set). Longer sees through a flood that pauses, and is slower to forgive a flow that stopped;
   * it should span several requests of the quietest flow that matters.
   *
   * @throws IllegalArgumentException naming the value, unless 1 ms &lt;= memory &lt;= 1 day
   */
  public FairQueuing withMemory(Duration memory) {
    Objects.requireNonNull(memory, "memory");
    if (memory.compareTo(Duration.ofMillis(1)) < 0 || memory.compareTo(Duration.ofDays(1)) > 0) {
      throw new IllegalArgumentException("memory must be between 1ms and 1d but was " + memory);
    }
    return new FairQueuing(queues, handSize, queueLength, memory);
  }

  /** How long a flow's demand is remembered: it decays by e every this long. */
  public Duration memory() {
    return memory;
  }

  /** Queues a priority. */
  public int queues() {
    return queues;
  }

  /** Queues a flow is dealt. */
  public int handSize() {
    return handSize;
  }

  /** Waiters a queue holds at most. */
  public int queueLength() {
    return queueLength;
  }

  /**
   * The chance that a given flow's whole hand lies among the queues {@code heavyFlows} other
   * flows' hands cover (each dealt independently), so that it waits behind one of them whichever
   * queue it picks: at most {@code (1 - (1 - h/q)^n)^h}, the chance that each of its {@code h}
   * queues is in one of {@code n} hands of {@code h} among {@code q}.
   */
  public double collisionOdds(int heavyFlows) {
    if (heavyFlows < 0) {
      throw new IllegalArgumentException("heavyFlows must be zero or more but was "
          + heavyFlows);
    }
    double covered = 1 - Math.pow(1 - (double) handSize / queues, heavyFlows);
    return Math.pow(covered, handSize);
  }

  /**
   * The queues of {@code flow}'s hand: {@code handSize} distinct indices below {@code queues},
   * dealt from a 64-bit hash of the flow (the same flow, the same hand).
   */
  int[] hand(String flow) {
    long h = hash(flow);
    int[] hand = new int[handSize];
    for (int i = 0; i < handSize; i++) {
      int left = queues - i;
      int pick = (int) Long.remainderUnsigned(h, left);
      h = Long.divideUnsigned(h, left) ^ (h >>> 47) * 0x9E3779B97F4A7C15L;
      // the pick-th queue not dealt yet
      for (int j = 0; j < i; j++) {
        if (hand[j] <= pick) {
          pick++;
        }
      }
      int at = i;
      while (at > 0 && hand[at - 1] > pick) {
        hand[at] = hand[at - 1];
        at--;
      }
      hand[at] = pick;
    }
    return hand;
  }

  /** A 64-bit hash of {@code s}: FNV-1a over its chars, then MurmurHash3's finalizer. */
  static long hash(String s) {
    long h = 0xcbf29ce484222325L;
    for (int i = 0; i < s.length(); i++) {
      h ^= s.charAt(i);
      h *= 0x100000001b3L;
    }
    h ^= h >>> 33;
    h *= 0xff51afd7ed558ccdL;
    h ^= h >>> 33;
    h *= 0xc4ceb9fe1a85ec53L;
    h ^= h >>> 33;
    return h;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof FairQueuing f && f.queues == queues && f.handSize == handSize
        && f.queueLength == queueLength && f.memory.equals(memory);
  }

  @Override
  public int hashCode() {
    return Objects.hash(queues, handSize, queueLength, memory);
  }

  @Override
  public String toString() {
    return String.format(Locale.ROOT,
        "FairQueuing[queues=%d, handSize=%d, queueLength=%d, memory=%s]", queues, handSize,
        queueLength, memory);
  }
}
