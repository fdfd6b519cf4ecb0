package dev.sluice.quota;

import java.time.Instant;
import java.util.Objects;

/**
 * One change of a store's quotas, as its audit trail keeps it.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/quotas.md">docs/quotas.md</a>.
 *
 * @param version the store's version after the change
 * @param at when it was made, on the store's clock
 * @param who who made it (as the caller named itself)
 * @param before the quota before (null: there was none)
 * @param after the quota after (null: it was removed)
 * @param reason why (the quota's reason, or the removal's)
 */
public record QuotaChange(long version, Instant at, String who, Quota before, Quota after,
    String reason) {
  /** Checks the fields. */
  public QuotaChange {
    Objects.requireNonNull(at, "at");
    Objects.requireNonNull(who, "who");
    Objects.requireNonNull(reason, "reason");
    if (before == null && after == null) {
      throw new IllegalArgumentException("a change has a quota before it or after it");
    }
  }
}
