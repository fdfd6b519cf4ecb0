package dev.sluice.concurrency;

/**
 * A permit that ended, as listeners see it ({@link ConcurrencyLimiter.Builder#onPermitEnd}).
 *
 * @param key the key it was held under
 * @param weight its weight
 * @param heldNanos from acquisition to release (or to the lease's end for {@link Outcome#EXPIRED})
 * @param outcome how it ended
 * @param inFlight the key's weight in flight when it was taken, itself included
 */
public record PermitEnd(String key, int weight, long heldNanos, Outcome outcome, int inFlight) {}
