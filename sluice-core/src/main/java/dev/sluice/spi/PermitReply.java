package dev.sluice.spi;

/**
 * A {@link PermitStore}'s answer to one step.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/architecture.md#the-path-of-one-decision">docs/architecture.md, "The path of one decision"</a>.
 *
 * @param done whether the step took effect: the permit was acquired (or was already held under
 *     its id), renewed, or released
 * @param inFlight the key's weight in flight after the step
 * @param nowMillis the store's clock when it took the step, in milliseconds
 */
public record PermitReply(boolean done, int inFlight, long nowMillis) {}
