package dev.sluice.testkit;

import dev.sluice.Decision;

/**
 * What the reference model expects of one decision; compared field by field with a store's
 * {@link Decision}.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/architecture.md#modules">docs/architecture.md, "Modules"</a>.
 */
public record ModelDecision(boolean allowed, boolean reachedCapacity, double remaining,
    long retryAfterNanos, long resetAfterNanos, long delayNanos, String limitName) {

  /** The same fields read off a store's decision. */
  public static ModelDecision of(Decision d) {
    return new ModelDecision(d.isAllowed(), d.reachedCapacity(), d.remaining(),
        d.retryAfterNanos(), d.resetAfterNanos(), d.delayNanos(), d.limit().name());
  }
}
