package dev.sluice.concurrency;

import java.util.Locale;
import java.util.Objects;

/**
 * Fair queuing among flows for a concurrency limit's waiters, after Kubernetes' API Priority and
 * Fairness: within each priority, a fixed number of queues; each flow (a tenant, a user, a
 * client: any string the caller names) is dealt a hand of queues by its hash (shuffle sharding).
 * The queues count waiters (a waiter is counted in the least occupied queue of its hand, refused
 * when that one is full) and keep virtual time as a count-min sketch keeps counts: a waiter
 * starts at the earliest virtual finish among its hand's queues (or the level's virtual time, if
 * later) and writes its finish to each queue of its hand behind it; the smallest start tag is
 * served first (start-time fair queuing, weights counted). A flow that floods moves its whole
 * hand ahead and waits behind itself; a quiet flow is held back only when every queue of its hand
 * is one a flood holds ({@link #collisionOdds}), and memory is the queues', whatever the number
 * of flows.
 *
 * <pre>{@code
 * ConcurrencyLimiter db = ConcurrencyLimiter.builder().limit(32)
 *     .fairQueuing(FairQueuing.of(64, 6, 50))     // 64 queues, hands of 6, 50 waiters a queue
 *     .build();
 * Acquisition a = db.acquire("orders-db", tenantId, 1, Priority.NORMAL, Duration.ofMillis(200));
 * }</pre>
 *
 * <p>Immutable.
 */
public final class FairQueuing {
  /** The most queues a priority may have. */
  public static final int MAX_QUEUES = 4096;
  /** The largest hand. */
  public static final int MAX_HAND = 16;

  private final int queues;
  private final int handSize;
  private final int queueLength;

  private FairQueuing(int queues, int handSize, int queueLength) {
    this.queues = queues;
    this.handSize = handSize;
    this.queueLength = queueLength;
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
    return new FairQueuing(queues, handSize, queueLength);
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
        && f.queueLength == queueLength;
  }

  @Override
  public int hashCode() {
    return Objects.hash(queues, handSize, queueLength);
  }

  @Override
  public String toString() {
    return String.format(Locale.ROOT, "FairQueuing[queues=%d, handSize=%d, queueLength=%d]",
        queues, handSize, queueLength);
  }
}
