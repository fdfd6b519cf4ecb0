package dev.sluice.spi;

import dev.sluice.internal.StoreKeys;

/**
 * A key's terms in a group of keys that share permits (a
 * {@link dev.sluice.concurrency.ConcurrencyGroup}), sent with each grouped acquire: a permit of
 * weight {@code w} for the key is added when, after dropping ended leases, the key's weight in
 * flight plus {@code w} is at most the call's ceiling, the group's weight in flight plus {@code w}
 * is at most {@code limit}, and either the key's weight plus {@code w} is at most {@code assured}
 * or the group's weight plus {@code w} is at most {@code borrowCeiling}.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/architecture.md#the-path-of-one-decision">docs/architecture.md, "The path of one decision"</a>.
 *
 * @param name the group (a valid store key: non-empty, well-formed Unicode without U+0000, at
 *     most 1,024 bytes of UTF-8)
 * @param limit the most weight the group's keys hold in flight together
 * @param borrowCeiling the most weight in flight a permit above the key's assured share may
 *     bring the group to (the limit less the reserve)
 * @param assured the key's assured share
 */
public record PermitGroup(String name, int limit, int borrowCeiling, int assured) {
  /**
   * Checks the terms.
   *
   * @throws IllegalArgumentException naming the value that is out of range
   */
  public PermitGroup {
    String problem = StoreKeys.problem(name);
    if (problem != null) {
      throw new IllegalArgumentException("group " + problem);
    }
    if (limit < 1 || borrowCeiling < 0 || borrowCeiling > limit || assured < 0
        || assured > limit) {
      throw new IllegalArgumentException("a permit group needs 1 <= limit, 0 <= borrowCeiling"
          + " <= limit and 0 <= assured <= limit but had limit " + limit + ", borrowCeiling "
          + borrowCeiling + ", assured " + assured);
    }
  }

  /**
   * Whether a key holding {@code keyInFlight} may add {@code weight} to a group holding
   * {@code groupInFlight} under these terms (the key's own ceiling is checked apart).
   */
  public boolean fits(int keyInFlight, int groupInFlight, int weight) {
    return groupInFlight + weight <= limit
        && (keyInFlight + weight <= assured || groupInFlight + weight <= borrowCeiling);
  }
}
