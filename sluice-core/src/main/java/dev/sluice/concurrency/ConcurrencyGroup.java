package dev.sluice.concurrency;

import dev.sluice.spi.PermitGroup;
import java.util.Objects;
import java.util.function.Function;
import java.util.function.ToIntFunction;

/**
 * Partitions of one concurrency limit that guarantee shares and borrow idle permits from each
 * other, as the rate side's {@link dev.sluice.Group} does for rates (after Linux {@code tc htb}):
 * a group's keys (its partitions: "live", "batch", or a tenant's clients) share the group's
 * <em>limit</em>; each key has an <em>assured</em> share, and its own limit (the limiter's
 * {@link ConcurrencyLimiter.Builder#limit}) as its ceiling.
 *
 * <pre>{@code
 * ConcurrencyLimiter db = ConcurrencyLimiter.builder()
 *     .group(ConcurrencyGroup.sharing(100)                       // the database: 100 in flight
 *         .assured(key -> key.equals("live") ? 70 : 30)           // live 70, batch 30
 *         .reserve(40))                                           // borrowing leaves 40 free
 *     .build();
 * Acquisition a = db.tryAcquire("batch");   // a.isBorrowed(): above batch's assured 30
 * }</pre>
 *
 * <p><b>The rule.</b> A permit of weight {@code w} for key {@code k} of group {@code G} is granted
 * when {@code inFlight(k) + w} is within the key's own limit (and its priority's share of it),
 * {@code inFlight(G) + w <= limit}, and either {@code inFlight(k) + w <= assured(k)} (the assured
 * path) or {@code inFlight(G) + w <= limit - reserve} (borrowing). Every permit counts in the
 * group, so the group never holds more than its limit, on every store.
 *
 * <p><b>What is guaranteed.</b> Borrowed weight (each key's weight above its assured share, summed)
 * never exceeds {@code limit - reserve}: a borrow is granted only while the whole group stays
 * within it, and assured grants and releases never raise it. So a key's request within its
 * assured share is granted whenever the group's weight within assured shares, this request
 * included, is at most the reserve: {@code reserve(sum of assured)} guarantees every share at
 * every instant, at the cost of keeping that much idle from borrowers; a smaller reserve lends
 * more and guarantees the shares only as borrowed permits come back (a concurrency limit cannot
 * take back a permit in flight). Proof in {@code docs/concurrency.md}.
 *
 * <p>Immutable and thread-safe; keys of a group are in one Redis hash slot and serialize on one
 * PostgreSQL advisory lock.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/concurrency.md#groups-partitions-that-guarantee-shares-and-borrow-idle-permits">docs/concurrency.md, "Groups: partitions that guarantee shares and borrow idle permits"</a>.
 */
public final class ConcurrencyGroup {
  /** The group every key belongs to when no {@link #by} function is given. */
  public static final String DEFAULT_GROUP = "*";

  private final int limit;
  private final ToIntFunction<String> assured;
  private final int reserve;
  private final Function<String, String> by;

  private ConcurrencyGroup(int limit, ToIntFunction<String> assured, int reserve,
      Function<String, String> by) {
    this.limit = limit;
    this.assured = assured;
    this.reserve = reserve;
    this.by = by;
  }

  /**
   * A group whose keys share {@code limit} permits in flight. Each key's assured share defaults
   * to none (everything it holds is borrowed) and the reserve to half the limit, rounded down.
   *
   * @throws IllegalArgumentException if the limit is below 1
   */
  public static ConcurrencyGroup sharing(int limit) {
    ConcurrencyLimiter.Builder.checkLimit(limit, "a group's limit");
    return new ConcurrencyGroup(limit, key -> 0, limit / 2, null);
  }

  /**
   * Every key's assured share, from 0 to the group's limit.
   *
   * @throws IllegalArgumentException if it is outside that range
   */
  public ConcurrencyGroup assured(int permits) {
    checkAssured(permits, "assured");
    return new ConcurrencyGroup(limit, key -> permits, reserve, by);
  }

  /**
   * Each key's assured share, read when the key is first seen (0 to the group's limit; a function
   * that answers outside it, or throws, refuses that key's acquisitions with the error).
   */
  public ConcurrencyGroup assured(ToIntFunction<String> assuredOfKey) {
    return new ConcurrencyGroup(limit, Objects.requireNonNull(assuredOfKey, "assuredOfKey"),
        reserve, by);
  }

  /**
   * The permits only assured traffic may fill: a borrow is refused when it would bring the
   * group's weight in flight above {@code limit - reserve}. Default half the limit; 0 lets
   * borrowers fill the group; the sum of the assured shares guarantees every share at once.
   *
   * @throws IllegalArgumentException unless {@code 0 <= permits <= limit}
   */
  public ConcurrencyGroup reserve(int permits) {
    if (permits < 0 || permits > limit) {
      throw new IllegalArgumentException("reserve must be between 0 and the group's limit "
          + limit + " but was " + permits);
    }
    return new ConcurrencyGroup(limit, assured, permits, by);
  }

  /**
   * Which group a key belongs to (for example {@code key -> key.substring(0, key.indexOf('/'))}
   * for "backend/partition" keys); each group has the limit of its own. Default: every key in
   * one group, {@value #DEFAULT_GROUP}. The function must be pure and answer a non-empty string
   * (on a shared store, a valid store key).
   */
  public ConcurrencyGroup by(Function<String, String> groupOfKey) {
    return new ConcurrencyGroup(limit, assured, reserve,
        Objects.requireNonNull(groupOfKey, "groupOfKey"));
  }

  /**
   * Groups keys by their part before the first {@code separator}: with {@code "/"},
   * {@code "acme/live"} and {@code "acme/batch"} are partitions of group {@code "acme"}. A key
   * without the separator, or with nothing before it, has no group: its acquisitions are refused
   * with an {@link IllegalArgumentException} naming it.
   *
   * @throws IllegalArgumentException if the separator is empty
   */
  public ConcurrencyGroup byPrefix(String separator) {
    Objects.requireNonNull(separator, "separator");
    if (separator.isEmpty()) {
      throw new IllegalArgumentException("a group's key separator must not be empty");
    }
    return new ConcurrencyGroup(limit, assured, reserve, new Prefix(separator));
  }

  /** {@link #byPrefix}'s function, which {@link #groupOf} answers for with its own message. */
  private record Prefix(String separator) implements Function<String, String> {
    @Override
    public String apply(String key) {
      int at = key.indexOf(separator);
      return at <= 0 ? null : key.substring(0, at);
    }
  }

  /** The permits in flight the group's keys hold at most, together. */
  public int limit() {
    return limit;
  }

  /** The reserve, in permits. */
  public int reserve() {
    return reserve;
  }

  /** The most weight in flight a borrow may bring the group to: {@code limit - reserve}. */
  public int borrowCeiling() {
    return limit - reserve;
  }

  /**
   * The assured share of {@code key}.
   *
   * @throws IllegalArgumentException if the function throws or answers outside 0 to the limit
   *     (naming the key)
   */
  public int assuredOf(String key) {
    int a;
    try {
      a = assured.applyAsInt(key);
    } catch (RuntimeException e) {
      throw new IllegalArgumentException("no assured share for key '" + key + "': " + e, e);
    }
    return checkAssured(a, "the assured share of key '" + key + "'");
  }

  /**
   * The group of {@code key}.
   *
   * @throws IllegalArgumentException if the group function throws or answers null or an empty
   *     string (naming the key)
   */
  public String groupOf(String key) {
    if (by == null) {
      return DEFAULT_GROUP;
    }
    if (by instanceof Prefix p) {
      String g = p.apply(key);
      if (g == null) {
        throw new IllegalArgumentException("key '" + key + "' has no group: its groups are the"
            + " part before '" + p.separator() + "', as in 'acme" + p.separator() + "live'");
      }
      return g;
    }
    String g;
    try {
      g = by.apply(key);
    } catch (RuntimeException e) {
      throw new IllegalArgumentException("the group function failed on key '" + key + "': " + e,
          e);
    }
    if (g == null || g.isEmpty()) {
      throw new IllegalArgumentException("the group function gave " + (g == null ? "null" : "''")
          + " for key '" + key + "': a group must be a non-empty string");
    }
    return g;
  }

  /**
   * The terms of {@code key} in its group, as a store receives them.
   *
   * @throws IllegalArgumentException as {@link #groupOf} and {@link #assuredOf}, or if the
   *     group's name is not a valid store key
   */
  public PermitGroup termsOf(String key) {
    return new PermitGroup(groupOf(key), limit, borrowCeiling(), assuredOf(key));
  }

  private int checkAssured(int permits, String what) {
    if (permits < 0 || permits > limit) {
      throw new IllegalArgumentException(what + " must be between 0 and the group's limit "
          + limit + " but was " + permits);
    }
    return permits;
  }

  @Override
  public String toString() {
    return "ConcurrencyGroup[limit " + limit + ", reserve " + reserve + "]";
  }
}
