package dev.sluice.testkit;

import dev.sluice.Clock;
import dev.sluice.spi.PermitGroup;
import dev.sluice.spi.PermitReply;
import dev.sluice.spi.PermitStore;
import dev.sluice.spi.StoreUnavailableException;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;

/**
 * The {@link PermitStore} contract as plainly as it can be written: one map of keys to permits
 * (id → weight and lease end; a cancelled id is kept with weight 0 until the cancel's lease
 * ends), one monitor, the time in milliseconds from a clock. It runs the
 * concurrency conformance suite without a server (groups too), so that the suite tests the store limiter's
 * logic and the stores separately; a store under test must answer as this one does.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/architecture.md#modules">docs/architecture.md, "Modules"</a>.
 */
public final class ReferencePermitStore implements PermitStore {
  private final Clock clock;
  private final Map<String, Map<String, long[]>> keys = new HashMap<>();
  /** Groups: group, then key, then the key's permits (apart from the keys above). */
  private final Map<String, Map<String, Map<String, long[]>>> groups = new HashMap<>();
  private volatile boolean failing;
  private long calls;

  /** A store whose time is {@code clock}'s, in whole milliseconds. */
  public ReferencePermitStore(Clock clock) {
    this.clock = clock;
  }

  /** Makes every later call fail (as a store that is down), or succeed again. */
  public void failing(boolean fail) {
    this.failing = fail;
  }

  /** Calls made to this store so far, failed ones included. */
  public synchronized long calls() {
    return calls;
  }

  /** Keys holding permits now (an idle key holds nothing). */
  public synchronized int keysHeld() {
    long now = Math.floorDiv(clock.nanoTime(), 1_000_000L);
    keys.values().forEach(permits -> prune(permits, now));
    keys.values().removeIf(Map::isEmpty);
    return keys.size();
  }

  private long now() {
    if (failing) {
      calls++;
      throw new StoreUnavailableException("the reference store is failing, as asked", null);
    }
    calls++;
    return Math.floorDiv(clock.nanoTime(), 1_000_000L);
  }

  private static int prune(Map<String, long[]> permits, long now) {
    int n = 0;
    for (Iterator<long[]> it = permits.values().iterator(); it.hasNext(); ) {
      long[] p = it.next();
      if (p[1] <= now) {
        it.remove();
      } else {
        n += (int) p[0];
      }
    }
    return n;
  }

  @Override
  public synchronized PermitReply acquire(String key, String permitId, int weight, int ceiling,
      long leaseMillis) {
    long now = now();
    Map<String, long[]> permits = keys.computeIfAbsent(key, k -> new HashMap<>());
    int n = prune(permits, now);
    if (permits.containsKey(permitId)) {   // held (a resent call), or cancelled (weight 0)
      return new PermitReply(permits.get(permitId)[0] > 0, n, now);
    }
    if (n + weight > ceiling) {
      return new PermitReply(false, n, now);
    }
    permits.put(permitId, new long[] {weight, now + leaseMillis});
    return new PermitReply(true, n + weight, now);
  }

  @Override
  public synchronized PermitReply renew(String key, String permitId, int weight,
      long leaseMillis) {
    long now = now();
    Map<String, long[]> permits = keys.computeIfAbsent(key, k -> new HashMap<>());
    int n = prune(permits, now);
    long[] p = permits.get(permitId);
    if (p == null || p[0] == 0) {
      return new PermitReply(false, n, now);
    }
    p[1] = now + leaseMillis;
    return new PermitReply(true, n, now);
  }

  @Override
  public synchronized PermitReply release(String key, String permitId, int weight) {
    long now = now();
    Map<String, long[]> permits = keys.computeIfAbsent(key, k -> new HashMap<>());
    int n = prune(permits, now);
    long[] p = permits.get(permitId);
    if (p == null || p[0] == 0) {
      return new PermitReply(false, n, now);
    }
    permits.remove(permitId);
    return new PermitReply(true, n - (int) p[0], now);
  }

  @Override
  public synchronized PermitReply cancel(String key, String permitId, int weight,
      long leaseMillis) {
    long now = now();
    Map<String, long[]> permits = keys.computeIfAbsent(key, k -> new HashMap<>());
    prune(permits, now);
    return cancel(permits, permitId, now, leaseMillis);
  }

  /**
   * Forgets the permit if held, and in any case remembers the id, weighing 0, until now plus the
   * lease (or later, if it was remembered so already): until then an acquire of it takes nothing.
   */
  private static PermitReply cancel(Map<String, long[]> permits, String permitId, long now,
      long leaseMillis) {
    long[] p = permits.get(permitId);
    boolean held = p != null && p[0] > 0;
    long until = p != null && p[0] == 0 ? Math.max(p[1], now + leaseMillis) : now + leaseMillis;
    permits.put(permitId, new long[] {0, until});
    return new PermitReply(held, prune(permits, now), now);
  }

  @Override
  public synchronized int inFlight(String key) {
    Map<String, long[]> permits = keys.get(key);
    long now = now();
    return permits == null ? 0 : prune(permits, now);
  }

  @Override
  public synchronized void resetPermits(String key) {
    keys.remove(key);
  }

  @Override
  public boolean supportsPermitGroups() {
    return true;
  }

  /** The group's keys, each pruned, empty ones dropped; answers the group's weight in flight. */
  private static int pruneGroup(Map<String, Map<String, long[]>> members, long now) {
    int total = 0;
    for (Iterator<Map<String, long[]>> it = members.values().iterator(); it.hasNext(); ) {
      Map<String, long[]> permits = it.next();
      total += prune(permits, now);
      if (permits.isEmpty()) {
        it.remove();
      }
    }
    return total;
  }

  @Override
  public synchronized PermitReply acquire(PermitGroup group, String key, String permitId,
      int weight, int ceiling, long leaseMillis) {
    long now = now();
    Map<String, Map<String, long[]>> members = groups.computeIfAbsent(group.name(),
        g -> new HashMap<>());
    int total = pruneGroup(members, now);
    Map<String, long[]> permits = members.computeIfAbsent(key, k -> new HashMap<>());
    int n = prune(permits, now);
    if (permits.containsKey(permitId)) {   // held (a resent call), or cancelled (weight 0)
      return new PermitReply(permits.get(permitId)[0] > 0, n, now);
    }
    if (n + weight > ceiling || !group.fits(n, total, weight)) {
      return new PermitReply(false, n, now);
    }
    permits.put(permitId, new long[] {weight, now + leaseMillis});
    return new PermitReply(true, n + weight, now);
  }

  private Map<String, long[]> member(String group, String key, long now) {
    Map<String, Map<String, long[]>> members = groups.computeIfAbsent(group,
        g -> new HashMap<>());
    pruneGroup(members, now);
    return members.computeIfAbsent(key, k -> new HashMap<>());
  }

  @Override
  public synchronized PermitReply renew(String group, String key, String permitId, int weight,
      long leaseMillis) {
    long now = now();
    Map<String, long[]> permits = member(group, key, now);
    long[] p = permits.get(permitId);
    if (p == null || p[0] == 0) {
      return new PermitReply(false, prune(permits, now), now);
    }
    p[1] = now + leaseMillis;
    return new PermitReply(true, prune(permits, now), now);
  }

  @Override
  public synchronized PermitReply release(String group, String key, String permitId,
      int weight) {
    long now = now();
    Map<String, long[]> permits = member(group, key, now);
    long[] p = permits.get(permitId);
    if (p != null && p[0] > 0) {
      permits.remove(permitId);
    }
    return new PermitReply(p != null && p[0] > 0, prune(permits, now), now);
  }

  @Override
  public synchronized PermitReply cancel(String group, String key, String permitId, int weight,
      long leaseMillis) {
    long now = now();
    return cancel(member(group, key, now), permitId, now, leaseMillis);
  }

  @Override
  public synchronized int inFlight(String group, String key) {
    long now = now();
    Map<String, Map<String, long[]>> members = groups.get(group);
    if (members == null) {
      return 0;
    }
    if (key == null) {
      return pruneGroup(members, now);
    }
    Map<String, long[]> permits = members.get(key);
    return permits == null ? 0 : prune(permits, now);
  }

  @Override
  public synchronized void resetPermits(String group, String key) {
    if (key == null) {
      groups.remove(group);
    } else if (groups.containsKey(group)) {
      groups.get(group).remove(key);
    }
  }

  @Override
  public String toString() {
    return "ReferencePermitStore";
  }
}
