package dev.sluice.server;

import java.nio.charset.StandardCharsets;
import java.util.Base64;

/**
 * The id the service answers for a permit of a limit on a shared store: everything another
 * instance on the same store needs to renew or release it (the limit, the key, the weight and the
 * store's own id of the permit), in one URL-safe token, {@code s.} then base64url without
 * padding. It cannot be guessed, since the store's id of a permit cannot
 * ({@link dev.sluice.concurrency.Permit#sharedId()}: 64 bits of a keyed hash); a token that
 * does not decode, or names a limit, key or weight that is not the permit's, names no permit.
 */
record SharedPermitId(String limit, String key, int weight, String sharedId) {
  private static final String PREFIX = "s.";
  private static final char SEPARATOR = '\u0000';   // in no key, limit name or store id

  static String of(String limit, String key, int weight, String sharedId) {
    String plain = limit + SEPARATOR + key + SEPARATOR + weight + SEPARATOR + sharedId;
    return PREFIX + Base64.getUrlEncoder().withoutPadding()
        .encodeToString(plain.getBytes(StandardCharsets.UTF_8));
  }

  /** The parts of {@code id}, or null if it is no shared id. */
  static SharedPermitId parse(String id) {
    if (id == null || !id.startsWith(PREFIX) || id.length() > 8192) {
      return null;
    }
    String plain;
    try {
      plain = new String(Base64.getUrlDecoder().decode(id.substring(PREFIX.length())),
          StandardCharsets.UTF_8);
    } catch (IllegalArgumentException e) {
      return null;
    }
    String[] parts = plain.split(String.valueOf(SEPARATOR), -1);
    if (parts.length != 4 || parts[0].isEmpty() || parts[1].isEmpty() || parts[3].isEmpty()) {
      return null;
    }
    int weight;
    try {
      weight = Integer.parseInt(parts[2]);
    } catch (NumberFormatException e) {
      return null;
    }
    return weight < 1 ? null : new SharedPermitId(parts[0], parts[1], weight, parts[3]);
  }
}
