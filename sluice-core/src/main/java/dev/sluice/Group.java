package dev.sluice;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.function.Function;

/**
 * A hierarchical limit with borrowing, after Linux {@code tc htb}: a <em>parent</em> bucket shared
 * by a group of keys (a tenant, a route, the whole service), and for each key an <em>assured</em>
 * bucket and optional <em>ceilings</em>. A key within its assured limit is admitted whenever the
 * parent has room; above it, the key <em>borrows</em> the parent's idle capacity, up to its
 * ceilings, while the parent's level leaves the {@link #reserve() reserve} free for assured
 * traffic. Every admission charges the parent, so what the group admits never exceeds the parent.
 *
 * <pre>{@code
 * RateLimiter limiter = Sluice.builder()
 *     .group(Group.sharing(Limit.leakyBucket(1000, Rate.perSecond(1000)))   // the service
 *         .assured(Limit.leakyBucket(100, Rate.perSecond(100)))             // each client
 *         .ceiling(Limit.leakyBucket(1000, Rate.perSecond(1000))))
 *     .build();
 * Decision d = limiter.tryAcquire("client-a");   // d.isBorrowed(): above its assured 100/s
 * }</pre>
 *
 * <p><b>What is guaranteed.</b> A key's admission charges its assured bucket (on the assured
 * path) or not (borrowed), its ceilings and the parent. Borrowing stops while the parent's level
 * plus the cost exceeds its capacity minus the reserve, so the parent keeps the reserve for
 * assured traffic: as long as the keys sending at once have assured rates that add up to at most
 * the parent's rate, and their assured backlogs together stay within the reserve, every request
 * within a key's assured limit is admitted (proof in {@code docs/semantics.md}). The number of
 * keys in a group is not bounded, so a group whose keys together over-commit the parent gives
 * assured rates on a best-effort basis beyond {@link #assuredKeys()} keys sending at once: each
 * is still admitted only while the parent has room. Borrowed capacity goes to whoever asks first
 * (a meter decides at arrival; {@code tc}'s round robin among borrowers needs a queue).
 *
 * <p>Limits must be buckets (leaky, token or GCRA) without penalties. Immutable and thread-safe.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/semantics.md#groups-hierarchical-limits-with-borrowing">docs/semantics.md, "Groups: hierarchical limits with borrowing"</a>.
 */
public final class Group {
  /** The name of the one group every key belongs to when no {@link #by} function is given. */
  public static final String DEFAULT_GROUP = "*";

  private final Limit parent;
  private final Limit assured;
  private final List<Limit> ceilings;
  private final double reserve;
  private final Function<String, String> by;

  private Group(Limit parent, Limit assured, List<Limit> ceilings, double reserve,
      Function<String, String> by) {
    this.parent = parent;
    this.assured = assured;
    this.ceilings = ceilings;
    this.reserve = reserve;
    this.by = by;
  }

  /**
   * A group whose keys share {@code parent}: its capacity and rate bound what the whole group
   * admits. The reserve defaults to half its capacity.
   *
   * @throws IllegalArgumentException if it is not a bucket or has a penalty
   */
  public static Group sharing(Limit parent) {
    bucketWithoutPenalty("parent", Objects.requireNonNull(parent, "parent"));
    return new Group(parent, null, List.of(), parent.capacity() / 2, null);
  }

  /**
   * Each key's assured limit: traffic within it is admitted whenever the parent has room.
   *
   * @throws IllegalArgumentException if it is not a bucket, has a penalty, or asks for more
   *     than the parent (a higher rate or capacity)
   */
  public Group assured(Limit assured) {
    bucketWithoutPenalty("assured", Objects.requireNonNull(assured, "assured"));
    if (assured.rate().perSecond() > parent.rate().perSecond()) {
      throw new IllegalArgumentException("assured " + assured + " has a higher rate than the"
          + " parent " + parent + ": one key alone would over-commit the group");
    }
    if (assured.capacity() > parent.capacity()) {
      throw new IllegalArgumentException("assured " + assured + " holds more than the parent "
          + parent + " (capacity " + Checks.format(assured.capacity()) + " > "
          + Checks.format(parent.capacity()) + ")");
    }
    for (Limit c : ceilings) {
      checkCeiling(c, assured);
    }
    return new Group(parent, assured, ceilings, reserve, by);
  }

  /**
   * Each key's ceilings: what it may reach by borrowing (for example 1,000/s with a burst of
   * 1,000). Every admission, assured or borrowed, must fit every ceiling and is charged to it.
   * Without a ceiling a key may borrow up to the parent. Replaces ceilings given before.
   *
   * @throws IllegalArgumentException if one is not a bucket, has a penalty, or is below the
   *     assured limit (a lower rate or capacity)
   */
  public Group ceiling(Limit... ceilings) {
    List<Limit> list = new ArrayList<>();
    for (Limit c : Objects.requireNonNull(ceilings, "ceilings")) {
      bucketWithoutPenalty("ceiling", Objects.requireNonNull(c, "ceiling"));
      if (assured != null) {
        checkCeiling(c, assured);
      }
      list.add(c);
    }
    return new Group(parent, assured, List.copyOf(list), reserve, by);
  }

  /**
   * The part of the parent's capacity, in units of cost, that only assured traffic may fill:
   * borrowing is refused while the parent's level plus the cost would exceed capacity minus
   * reserve. Default: half the parent's capacity. 0 lets borrowers fill the parent (assured
   * traffic then waits for the leak like everyone else).
   *
   * @throws IllegalArgumentException unless {@code 0 <= units < parent capacity}
   */
  public Group reserve(double units) {
    if (!(units >= 0) || units >= parent.capacity()) {
      throw new IllegalArgumentException("reserve must be at least 0 and below the parent's"
          + " capacity " + Checks.format(parent.capacity()) + " but was " + Checks.format(units));
    }
    return new Group(parent, assured, ceilings, units, by);
  }

  /**
   * Which group a key belongs to: keys of one group share one parent bucket (for example
   * {@code key -> key.substring(0, key.indexOf('/'))} for "tenant/client" keys). Default: every
   * key in one group, {@value #DEFAULT_GROUP}. The function must be pure; a key's group must be
   * a non-empty string (on a shared store, a valid store key: see {@code StoreKeys}).
   */
  public Group by(Function<String, String> groupOfKey) {
    return new Group(parent, assured, ceilings, reserve,
        Objects.requireNonNull(groupOfKey, "groupOfKey"));
  }

  /** The parent limit. */
  public Limit parent() {
    return parent;
  }

  /** Each key's assured limit; null until set. */
  public Limit assured() {
    return assured;
  }

  /** Each key's ceilings, possibly none. */
  public List<Limit> ceilings() {
    return ceilings;
  }

  /** The reserve, in units of cost. */
  public double reserve() {
    return reserve;
  }

  /**
   * How many keys sending at their assured rate at once the parent's rate covers:
   * {@code floor(parent rate / assured rate)}. Beyond that, assured rates are best effort.
   */
  public long assuredKeys() {
    requireAssured();
    return (long) Math.floor(parent.rate().perSecond() / assured.rate().perSecond() * (1 + 1e-12));
  }

  /**
   * The group of {@code key}.
   *
   * @throws IllegalArgumentException if the group function returns null or an empty string, or
   *     throws (naming the key)
   */
  public String groupOf(String key) {
    if (by == null) {
      return DEFAULT_GROUP;
    }
    String g;
    try {
      g = by.apply(key);
    } catch (RuntimeException e) {
      throw new IllegalArgumentException("the group function failed on key \"" + key + "\": " + e,
          e);
    }
    if (g == null || g.isEmpty()) {
      throw new IllegalArgumentException("the group function gave " + (g == null ? "null" : "\"\"")
          + " for key \"" + key + "\": a group must be a non-empty string");
    }
    return g;
  }

  /**
   * The limits in the order decisions list them ({@link Decision#perLimit()}): assured, the
   * ceilings, the parent.
   *
   * @throws IllegalStateException if no assured limit was set
   */
  public List<Limit> limits() {
    requireAssured();
    List<Limit> all = new ArrayList<>();
    all.add(assured);
    all.addAll(ceilings);
    all.add(parent);
    return List.copyOf(all);
  }

  void requireAssured() {
    if (assured == null) {
      throw new IllegalStateException("group sharing " + parent + " has no assured limit: call"
          + " assured(...) to say what each key is assured");
    }
  }

  private static void checkCeiling(Limit c, Limit assured) {
    if (c.rate().perSecond() < assured.rate().perSecond() || c.capacity() < assured.capacity()) {
      throw new IllegalArgumentException("ceiling " + c + " is below the assured limit "
          + assured + ": a ceiling caps what a key reaches by borrowing above its assured limit");
    }
  }

  private static void bucketWithoutPenalty(String role, Limit l) {
    if (!l.algorithm().isBucket()) {
      throw new IllegalArgumentException(role + " " + l + " is a " + l.algorithm().id()
          + ": the limits of a group must be buckets (leaky-bucket, token-bucket or gcra),"
          + " whose leak rate can be shared");
    }
    if (!l.penalty().isZero()) {
      throw new IllegalArgumentException(role + " " + l + " has a penalty: the limits of a group"
          + " take none");
    }
  }

  @Override
  public String toString() {
    return "group sharing " + parent + (assured == null ? "" : ", assured " + assured)
        + (ceilings.isEmpty() ? "" : ", ceiling " + ceilings) + ", reserve "
        + Checks.format(reserve) + (by == null ? "" : ", grouped by a function");
  }
}
