package dev.sluice.testkit;

import dev.sluice.Decision;
import dev.sluice.Group;
import dev.sluice.Limit;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A plain model of a {@link Group}, written from {@code docs/semantics.md} ("Groups") for clarity:
 * every bucket is an exact level that leaks; a key's assured bucket and ceilings live with the
 * key, the parent with the key's group.
 *
 * <ul>
 *   <li>assured: the cost fits the key's assured bucket, its ceilings and the parent → all are
 *       charged;
 *   <li>borrowed: otherwise, the cost fits the ceilings and the parent stays within its capacity
 *       minus the reserve → the ceilings and the parent are charged;
 *   <li>otherwise rejected, nothing changes.
 * </ul>
 *
 * Exact when every cost, capacity and reserve is a whole number of ticks of leak time. Not
 * thread-safe: it is the sequential specification.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/architecture.md#modules">docs/architecture.md, "Modules"</a>.
 */
public final class GroupModel {
  /** What the model expects of one decision. */
  public record Expected(boolean allowed, boolean borrowed, double remaining,
      long retryAfterNanos, double parentRemaining) {
    /** The same fields read off a store's decision. */
    public static Expected of(Decision d) {
      List<Decision> each = d.perLimit();
      return new Expected(d.isAllowed(), d.isBorrowed(), d.remaining(), d.retryAfterNanos(),
          each.get(each.size() - 1).remaining());
    }
  }

  private final Group group;
  private final long nanosPerTick;
  private final long ticksPerSecond;
  private final Map<String, List<Bucket>> keys = new HashMap<>();
  private final Map<String, Bucket> parents = new HashMap<>();
  private long now = Long.MIN_VALUE;

  public GroupModel(Group group, long ticksPerSecond) {
    this.group = group;
    this.ticksPerSecond = ticksPerSecond;
    this.nanosPerTick = 1_000_000_000L / ticksPerSecond;
  }

  public Expected tryAcquire(String key, double cost, long nanos) {
    return decide(key, cost, nanos, true);
  }

  public Expected check(String key, double cost, long nanos) {
    return decide(key, cost, nanos, false);
  }

  /** Forgets the key's buckets; its group's parent keeps its level. */
  public void reset(String key) {
    keys.remove(key);
  }

  private Expected decide(String key, double cost, long nanos, boolean charge) {
    now = Math.max(now, Math.floorDiv(nanos, nanosPerTick));   // backwards counts as no time
    List<Bucket> own = keys.computeIfAbsent(key, k -> {
      List<Bucket> list = new ArrayList<>();
      list.add(new Bucket(group.assured(), Fraction.ZERO));
      for (Limit c : group.ceilings()) {
        list.add(new Bucket(c, Fraction.ZERO));
      }
      return list;
    });
    Bucket parent = parents.computeIfAbsent(group.groupOf(key),
        g -> new Bucket(group.parent(), Fraction.of(group.reserve())));
    for (Bucket b : own) {
      b.advanceTo(now);
    }
    parent.advanceTo(now);
    Fraction c = Fraction.of(cost);
    Bucket assured = own.get(0);
    List<Bucket> ceilings = own.subList(1, own.size());
    boolean ceilingsFit = ceilings.stream().allMatch(b -> b.fits(c, Fraction.ZERO));
    boolean viaAssured = assured.fits(c, Fraction.ZERO) && ceilingsFit
        && parent.fits(c, Fraction.ZERO);
    boolean viaBorrowing = !viaAssured && ceilingsFit && parent.fits(c, parent.reserve);
    if (charge && (viaAssured || viaBorrowing)) {
      if (viaAssured) {
        assured.level = assured.level.add(c);
      }
      for (Bucket b : ceilings) {
        b.level = b.level.add(c);
      }
      parent.level = parent.level.add(c);
    }
    // figures: the larger room of the two paths; the earlier wait of the two
    Fraction roomAssured = parent.room(Fraction.ZERO).min(assured.room(Fraction.ZERO));
    Fraction roomBorrowed = parent.room(parent.reserve);
    for (Bucket b : ceilings) {
      roomAssured = roomAssured.min(b.room(Fraction.ZERO));
      roomBorrowed = roomBorrowed.min(b.room(Fraction.ZERO));
    }
    boolean allowed = viaAssured || viaBorrowing;
    long retry = 0;
    if (!allowed) {
      long waitAssured = Math.max(assured.wait(c, Fraction.ZERO), parent.wait(c, Fraction.ZERO));
      long waitBorrowed = parent.wait(c, parent.reserve);
      for (Bucket b : ceilings) {
        waitAssured = Math.max(waitAssured, b.wait(c, Fraction.ZERO));
        waitBorrowed = Math.max(waitBorrowed, b.wait(c, Fraction.ZERO));
      }
      long ticks = Math.min(waitAssured, waitBorrowed);
      retry = ticks == Long.MAX_VALUE ? Long.MAX_VALUE : ticks * nanosPerTick;
    }
    return new Expected(allowed, viaBorrowing, roomAssured.max(roomBorrowed).doubleValue(), retry,
        parent.room(Fraction.ZERO).doubleValue());
  }

  /** A leaky bucket: an exact level that leaks at the limit's rate, never below zero. */
  private final class Bucket {
    final Fraction capacity;
    final Fraction reserve;
    /** Ticks one unit takes to leak. */
    final Fraction perUnit;
    Fraction level = Fraction.ZERO;
    long last = Long.MIN_VALUE;

    Bucket(Limit l, Fraction reserve) {
      this.capacity = Fraction.of(l.capacity());
      this.reserve = reserve;
      // ticks per unit = period in ticks / amount
      BigInteger periodNanos = BigInteger.valueOf(l.rate().period().toNanos());
      this.perUnit = Fraction.of(new BigDecimal(periodNanos))
          .divide(Fraction.of(nanosPerTick)).divide(Fraction.of(l.rate().amount()));
    }

    void advanceTo(long t) {
      if (last != Long.MIN_VALUE && t > last) {
        level = level.subtract(Fraction.of(t - last).divide(perUnit)).max(Fraction.ZERO);
      }
      last = Math.max(last, t);
    }

    boolean fits(Fraction c, Fraction withheld) {
      return level.add(c).compareTo(capacity.subtract(withheld)) <= 0;
    }

    Fraction room(Fraction withheld) {
      return capacity.subtract(withheld).subtract(level).max(Fraction.ZERO);
    }

    /** Ticks until c fits below capacity minus {@code withheld}, rounded up; MAX if never. */
    long wait(Fraction c, Fraction withheld) {
      Fraction limit = capacity.subtract(withheld);
      if (c.compareTo(limit) > 0) {
        return Long.MAX_VALUE;
      }
      Fraction over = level.add(c).subtract(limit);
      if (over.compareTo(Fraction.ZERO) <= 0) {
        return 0;
      }
      return over.multiply(perUnit).ceil();
    }
  }

  long ticksPerSecond() {
    return ticksPerSecond;
  }
}
