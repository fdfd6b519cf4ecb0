package dev.sluice.quota;

import dev.sluice.Limit;
import java.time.Instant;
import java.util.List;
import java.util.Objects;
import java.util.regex.Pattern;

/**
 * A quota: the rate limits (or the concurrency limit) of one key of a policy, or of every key
 * that starts with {@code key} when {@code prefix} is set, until {@code expiresAt} (null: until
 * removed). A key's quota is its exact one, else the longest prefix that matches.
 *
 * <pre>{@code
 * Quota pro = Quota.rate("api", "customer:acme", List.of(Limit.leakyBucket(500, Rate.perSecond(500))))
 *     .until(Instant.parse("2026-12-04T18:00:00Z")).because("acme's launch week");
 * Quota exports = Quota.concurrency("exports", "tenant:", 2).forPrefix().because("misbehaving");
 * }</pre>
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/quotas.md">docs/quotas.md</a>.
 *
 * @param policy the policy (or concurrency limit) it belongs to: 1 to 64 of {@code A-Z a-z 0-9 _
 *     . -}
 * @param key the key, or with {@code prefix} the start of the keys: 1 to 512 characters
 * @param prefix whether {@code key} is a prefix
 * @param limits the rate limits (empty for a concurrency quota)
 * @param concurrency the concurrency limit (0 for a rate quota)
 * @param expiresAt when it stops applying; null for never
 * @param reason why it exists (at most 500 characters; may be empty)
 */
public record Quota(String policy, String key, boolean prefix, List<Limit> limits,
    int concurrency, Instant expiresAt, String reason) {
  private static final Pattern NAME = Pattern.compile("[A-Za-z0-9_.-]{1,64}");
  /** The longest key or prefix. */
  public static final int MAX_KEY_LENGTH = 512;
  /** The longest reason. */
  public static final int MAX_REASON_LENGTH = 500;

  /**
   * Checks every field.
   *
   * @throws IllegalArgumentException naming the field and the value
   */
  public Quota {
    Objects.requireNonNull(policy, "policy");
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(limits, "limits");
    Objects.requireNonNull(reason, "reason");
    if (!NAME.matcher(policy).matches()) {
      throw new IllegalArgumentException("a quota's policy must be 1 to 64 of A-Z a-z 0-9 _ . -"
          + " but was '" + policy + "'");
    }
    if (key.isEmpty() || key.length() > MAX_KEY_LENGTH) {
      throw new IllegalArgumentException("a quota's key must be 1 to " + MAX_KEY_LENGTH
          + " characters but was " + key.length());
    }
    limits = List.copyOf(limits);
    if (limits.isEmpty() == (concurrency == 0)) {
      throw new IllegalArgumentException("a quota has rate limits or a concurrency limit, one of"
          + " them, but " + (limits.isEmpty() ? "had neither" : "had both") + " (key '" + key
          + "')");
    }
    if (concurrency < 0) {
      throw new IllegalArgumentException("a quota's concurrency limit must be at least 1 but was "
          + concurrency);
    }
    if (reason.length() > MAX_REASON_LENGTH) {
      throw new IllegalArgumentException("a quota's reason must be at most " + MAX_REASON_LENGTH
          + " characters but was " + reason.length());
    }
  }

  /** A rate quota for {@code key} of {@code policy}: its limits replace the policy's. */
  public static Quota rate(String policy, String key, List<Limit> limits) {
    return new Quota(policy, key, false, limits, 0, null, "");
  }

  /** A concurrency quota for {@code key} of the concurrency limit {@code limit}. */
  public static Quota concurrency(String limit, String key, int permits) {
    if (permits < 1) {
      throw new IllegalArgumentException("a quota's concurrency limit must be at least 1 but was "
          + permits);
    }
    return new Quota(limit, key, false, List.of(), permits, null, "");
  }

  /** The same, for every key that starts with this one's key. */
  public Quota forPrefix() {
    return new Quota(policy, key, true, limits, concurrency, expiresAt, reason);
  }

  /** The same, until {@code expiresAt}. */
  public Quota until(Instant expiresAt) {
    return new Quota(policy, key, prefix, limits, concurrency, expiresAt, reason);
  }

  /** The same, for {@code reason}. */
  public Quota because(String reason) {
    return new Quota(policy, key, prefix, limits, concurrency, expiresAt, reason);
  }

  /** Whether it is a concurrency quota (else a rate quota). */
  public boolean isConcurrency() {
    return concurrency > 0;
  }

  /** Whether it applies at {@code now}: it has no expiry, or has not reached it. */
  public boolean appliesAt(Instant now) {
    return expiresAt == null || now.isBefore(expiresAt);
  }

  /** Whether it is the quota of the same key (or prefix) of the same policy as {@code other}. */
  public boolean sameTarget(Quota other) {
    return policy.equals(other.policy) && key.equals(other.key) && prefix == other.prefix;
  }
}
